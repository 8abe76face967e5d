"""Where a new run's time goes on its way to a sweep's run list: each stage of one new run, timed end to end.

    python bench/bench_sweep_stages.py --data /tmp/sweeps --runs 2000 --steps 1000 [--samples 20]

The sweep is bench/sweepdata.py's (made once under --data, as bench_sweep.py does). The watch app runs headless
(``run_test``) in this process with timestamps taken at each stage by wrapping the product's methods here (the
product is not changed for it): the run written (its directory and a metrics.jsonl of 5 rows, as bench_sweep.py's
new-run figure does), the follower's file event (``Follower.on_events`` naming it), the index poked
(``SweepIndex.poke``), its tail read (``RunIndex._read`` returned), the UI thread taking the index
(``Sweep.changed`` begun and done), the run in the list and the refresh after it. Each stage is printed as ms since
the write, with what else ran meanwhile: a discovery pass of the follower (a walk of every run directory), a full
stat pass of the index. The end-to-end figure is the same as bench_sweep.py's (write to the refresh that shows it).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import time
from pathlib import Path
from typing import Any

from bench_app import _after_refresh
from sweepdata import make_sweep

STAGES = ("event", "poke", "read", "ui_start", "ui_end", "listed", "frame")


class Clock:
    """Stage times per new run (by its directory name) and the intervals of background passes."""

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, float]] = {}
        self.passes: list[tuple[str, float, float]] = []  # (what, start, end)
        self.watch: str | None = None  # the directory name of the run being measured
        self.refreshes = 0  # the list made again (Sweep.changed), all told
        self.start = 0.0  # when the first new run was written (the passes before it are the start-up's)

    def mark(self, stage: str, text: str) -> None:
        name = self.watch
        if name is not None and name in text:
            self.runs.setdefault(name, {}).setdefault(stage, time.perf_counter())


def instrument(clock: Clock) -> None:
    """Wrap the product's stage methods (class attributes: every instance the app makes)."""
    from steptable.app.sweep import Sweep, SweepIndex
    from steptable.ingest.files.follow import Follower
    from steptable.ingest.files.runindex import RunIndex

    on_events, poke, read, changed = Follower.on_events, SweepIndex.poke, RunIndex._read, Sweep.changed
    discover_pass, refresh = Follower._discover, RunIndex.refresh

    def w_on_events(self: Any, paths: set[Path]) -> set[str]:
        clock.mark("event", " ".join(map(str, paths)))
        return on_events(self, paths)

    def w_poke(self: Any, cand: Any) -> None:
        clock.mark("poke", cand.run_id)
        poke(self, cand)

    def w_read(self: Any, entry: Any) -> bool:
        ok = read(self, entry)
        if ok:
            clock.mark("read", entry.run_id)
        return ok

    def w_changed(self: Any) -> None:
        clock.refreshes += 1
        name = clock.watch
        seen = name is not None and "read" in clock.runs.get(name, {})
        if seen:
            clock.mark("ui_start", name or "")
        changed(self)
        if seen:
            clock.mark("ui_end", name or "")

    def w_discover(self: Any) -> None:
        t0 = time.perf_counter()
        try:
            discover_pass(self)
        finally:
            clock.passes.append(("follower discovery", t0, time.perf_counter()))

    def w_refresh(self: Any, budget: float | None = None, only: Any = None) -> set[str]:
        t0 = time.perf_counter()
        try:
            return refresh(self, budget, only)
        finally:
            if only is None:
                clock.passes.append(("index stat pass", t0, time.perf_counter()))

    gc_start: dict[str, float] = {}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_start["t"] = time.perf_counter()
        elif "t" in gc_start:
            clock.passes.append((f"gc gen{info['generation']}", gc_start.pop("t"), time.perf_counter()))

    gc.callbacks.append(on_gc)
    Follower.on_events = w_on_events  # type: ignore[method-assign]
    SweepIndex.poke = w_poke  # type: ignore[method-assign]
    RunIndex._read = w_read  # type: ignore[method-assign]
    Sweep.changed = w_changed  # type: ignore[method-assign]
    Follower._discover = w_discover  # type: ignore[method-assign]
    RunIndex.refresh = w_refresh  # type: ignore[method-assign]


async def measure(root: Path, runs: int, samples: int, gap: float) -> tuple[list[dict[str, float]], Clock]:
    from bench_sweep import _listed, until_listed, write_new_run

    from steptable.app import make_app

    clock = Clock()
    instrument(clock)
    app = make_app([str(root)])
    out: list[dict[str, float]] = []
    made: list[Path] = []
    async with app.run_test(size=(200, 50)):
        scr = await _listed(app, runs)
        while app.feed.sweep.index.pending():
            await asyncio.sleep(0.01)
        clock.start = time.perf_counter()
        try:
            for i in range(samples):
                await asyncio.sleep(gap)
                run = root / f"zz_stage_{os.getpid()}_{i}"
                made.append(run)
                clock.watch = run.name
                before = clock.refreshes
                t0 = time.perf_counter()
                write_new_run(run)
                await until_listed(scr, run.name)
                clock.mark("listed", run.name)
                await _after_refresh(app)
                clock.mark("frame", run.name)
                st = clock.runs.get(run.name, {})
                row = {k: 1000 * (st[k] - t0) for k in STAGES if k in st}
                end = st["frame"]
                row["refreshes"] = clock.refreshes - before
                row["overlap"] = ",".join(sorted({w for w, a, b in clock.passes if a < end and b > t0})) or "-"
                out.append(row)
        finally:
            for run in made:
                shutil.rmtree(run, ignore_errors=True)
    return out, clock


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="/tmp/sweeps")
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--metrics", type=int, default=20)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--gap", type=float, default=0.2, help="seconds between two new runs (bench_sweep.py's 0.2)")
    args = ap.parse_args()
    root = Path(args.data) / f"s{args.runs}x{args.steps}"
    make_sweep(root, args.runs, args.steps, args.metrics)
    rows, clock = asyncio.run(measure(root, args.runs, args.samples, args.gap))
    print(f"{args.runs} runs: ms from the write to each stage, {len(rows)} new runs one after the other")
    print("  " + " ".join(f"{s:>8}" for s in STAGES) + "  lists  overlapping")
    for r in rows:
        print("  " + " ".join(f"{r[s]:8.0f}" if s in r else f"{'-':>8}" for s in STAGES)
              + f"  {r['refreshes']:5.0f}  {r['overlap']}")
    ends = sorted(r["frame"] for r in rows)
    print(f"  end to end: median {ends[len(ends) // 2]:.0f} ms, worst {ends[-1]:.0f} ms")
    spans = {}
    for what, a, b in clock.passes:
        if a < clock.start:
            continue
        spans.setdefault(what, []).append(1000 * (b - a))
    for what, xs in spans.items():
        print(f"  {what} while the new runs came: {len(xs)} passes, longest {max(xs):.0f} ms, median "
              f"{sorted(xs)[len(xs) // 2]:.0f} ms")


if __name__ == "__main__":
    main()
