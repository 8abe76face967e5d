"""Where append-to-screen time goes in the watch app: bench_app.py's latency case (10 arms, a writer appending 5
rows/s to each, every row stamped with its write time), with each batch of rows timed at each stage.

    python bench/bench_latency_stages.py [--seconds 10] [--rate 5]

The app runs headless (``run_test``) in this process; the product's methods are wrapped here, not changed: the
follower's file event (``Follower.on_events`` begun and done), the UI handling ``RunsChanged`` (begun and done) and
the refresh after it. Printed for the worst batches: ms from the rows' stamp to each stage, and the garbage
collector's passes (generation 1 and 2) that overlapped. The writer appends one row to every arm at once, so one
slow batch is 10 of the samples: with 500 samples, bench_app.py's p99 is the worst batch but one or two.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_app import SIZE, generate, new_row_stamps


def measure(root: Path, arms: int, seconds: float, rate: float) -> tuple[list[list[float]], list[tuple[float, ...]],
                                                                        list[tuple[float, float, int]]]:
    from steptable.app.app import StepTableApp
    from steptable.app.feed import Feed
    from steptable.ingest.files.follow import Follower

    events: list[tuple[float, float]] = []
    batches: list[list[float]] = []  # [ui start, ui end, oldest stamp, frame]
    passes: list[tuple[float, float, int]] = []
    started: dict[str, float] = {}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started["t"] = time.time()
        elif "t" in started:
            passes.append((started.pop("t"), time.time(), info["generation"]))

    on_events = Follower.on_events

    def w_on_events(self: Any, paths: set[Path]) -> set[str]:
        t0 = time.time()
        try:
            return on_events(self, paths)
        finally:
            events.append((t0, time.time()))

    class Timed(StepTableApp):
        seen: dict[str, int] = {}  # noqa: RUF012

        def on_runs_changed(self, message: Any) -> None:
            t0 = time.time()
            super().on_runs_changed(message)
            stamps = new_row_stamps(self.session, self.seen)
            if stamps:
                rec = [t0, time.time(), min(stamps), 0.0]
                batches.append(rec)
                self.call_after_refresh(lambda: rec.__setitem__(3, time.time()))

    Follower.on_events = w_on_events  # type: ignore[method-assign]
    gc.callbacks.append(on_gc)

    async def main() -> None:
        app = Timed(Feed([str(root)], sweep_min=arms))
        async with app.run_test(size=SIZE):
            while len(app.session.runs) < arms:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            batches.clear()
            events.clear()
            passes.clear()
            writer = subprocess.Popen([sys.executable, str(Path(__file__).parent / "bench_app.py"), "_writer",
                                       str(root), str(arms), str(seconds), str(rate)])
            while writer.poll() is None:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)

    asyncio.run(main())
    return [b for b in batches if b[3]], events, passes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=5.0)
    ap.add_argument("--worst", type=int, default=8)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="steptable-bench-latstages-"))
    try:
        for i in range(args.arms):  # (bench_app.py's latency data)
            generate(root / f"arm{i:02d}" / "metrics.jsonl", 200_000, seed=i, t0=time.time() - 3600)
        batches, events, passes = measure(root, args.arms, args.seconds, args.rate)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    batches.sort(key=lambda b: b[3] - b[2], reverse=True)
    print(f"{len(batches)} batches of {args.arms} rows; the worst {args.worst}, ms from the oldest stamp:")
    print(f"  {'event':>6} {'parsed':>6} {'ui':>6} {'ui done':>7} {'frame':>6}  gc passes (ms, generation) overlapping")
    for ui0, ui1, stamp, frame in batches[:args.worst]:
        evs = [e for e in events if e[1] >= stamp and e[0] <= ui0]
        e0 = min((e[0] for e in evs), default=float("nan"))
        e1 = max((e[1] for e in evs), default=float("nan"))
        gcs = [f"{1000 * (b - a):.0f}/{g}" for a, b, g in passes if g >= 1 and b > stamp and a < frame]
        print(f"  {1000 * (e0 - stamp):6.0f} {1000 * (e1 - stamp):6.0f} {1000 * (ui0 - stamp):6.0f} "
              f"{1000 * (ui1 - stamp):7.0f} {1000 * (frame - stamp):6.0f}  {' '.join(gcs) or '-'}")
    ends = sorted(1000 * (b[3] - b[2]) for b in batches)
    handler = sorted(1000 * (b[1] - b[0]) for b in batches)
    full = sorted(1000 * (b - a) for a, b, g in passes if g == 2)
    print(f"  batch to screen: median {ends[len(ends) // 2]:.0f} ms, worst {ends[-1]:.0f} ms; UI handler median "
          f"{handler[len(handler) // 2]:.1f} ms, longest {handler[-1]:.1f} ms; full (gen2) collections "
          f"{len(full)}, longest {max(full, default=0):.0f} ms")


if __name__ == "__main__":
    main()
