"""Append-to-parsed latency of the live follower: 50 files, each appended 20 rows/s for ~10 s.

    python bench/bench_latency.py                        # notification, then polling every 0.25 s
    python bench/bench_latency.py --files 10 --seconds 3 --modes poll

A writer process appends one row at a time (``{"step", "ts": time.time(), ...}``, one write call each, files
staggered); the Follower runs in a thread as the app runs it and, in ``on_change``, the latency of each new row is
``now - ts``. Goals: p99 <= 100 ms with notification, p99 <= 1.2x the poll interval with polling. Every row written
must arrive exactly once.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def write(root: Path, files: int, rate: float, seconds: float) -> None:
    """The writer process: ``rate`` rows/s into each of ``files`` files, staggered."""
    fds = [os.open(root / f"run{i:02d}" / "metrics.jsonl", os.O_WRONLY | os.O_APPEND) for i in range(files)]
    rng = random.Random(0)
    period = 1.0 / rate
    t0 = time.time()
    step = 1
    while time.time() - t0 < seconds:
        base = t0 + step * period
        for i, fd in enumerate(fds):
            due = base + period * i / files
            delay = due - time.time()
            if delay > 0:
                time.sleep(delay)
            row = {"step": step, "ts": time.time(), "loss": rng.random(), "reward": rng.random(), "lr": 1e-5}
            os.write(fd, (json.dumps(row) + "\n").encode())
        step += 1
    for fd in fds:
        os.close(fd)
    print(step - 1)  # rows per file


def measure(mode: str, files: int, rate: float, seconds: float, poll: float) -> dict[str, float]:
    from steptable.ingest import Follower

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i in range(files):
            (root / f"run{i:02d}").mkdir()
            (root / f"run{i:02d}" / "metrics.jsonl").write_text(json.dumps({"step": 0, "ts": time.time()}) + "\n")
        follower = Follower([root], poll=poll if mode == "poll" else None, recheck=2.0)
        seen: dict[str, int] = {}
        lat: list[float] = []

        def on_change(ids: set[str]) -> None:
            now = time.time()
            for rid in ids:
                store = follower.stores[rid]
                start = seen.get(rid, 0)
                n = len(store)
                for i in range(start, n):
                    if store.step_at(i) > 0:
                        lat.append(now - store.value(i, "ts"))
                seen[rid] = n

        stop = threading.Event()
        thread = threading.Thread(target=follower.run, args=(stop, on_change), daemon=True)
        thread.start()
        time.sleep(0.5)  # the first scan and the watcher start
        writer = subprocess.run([sys.executable, __file__, "--write", str(root), str(files), str(rate),
                                 str(seconds)], capture_output=True, text=True, check=True)
        per_file = int(writer.stdout)
        time.sleep(max(1.0, 3 * poll))  # let the last rows arrive
        stop.set()
        thread.join(10)
        lat.sort()
        rows = sum(len(s) - 1 for s in follower.stores.values())
        q = (lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000)  # noqa: E731
        return {"rows": rows, "expected": per_file * files, "p50": q(0.50), "p90": q(0.90), "p99": q(0.99),
                "max": lat[-1] * 1000, "mode_used": follower.mode == mode, "errors": len(follower.errors)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--rate", type=float, default=20.0, help="rows per second per file")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--poll", type=float, default=0.25, help="poll interval of the polling run (s)")
    ap.add_argument("--modes", default="notify,poll")
    ap.add_argument("--write", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write:
        root, files, rate, seconds = args.write
        write(Path(root), int(files), float(rate), float(seconds))
        return
    print(f"{args.files} files x {args.rate:g} rows/s for {args.seconds:g} s")
    for mode in args.modes.split(","):
        r = measure(mode, args.files, args.rate, args.seconds, args.poll)
        goal = 100.0 if mode == "notify" else 1200.0 * args.poll
        label = mode if mode == "notify" else f"poll {args.poll:g} s"
        print(f"{label:<12} rows {r['rows']}/{r['expected']}  p50 {r['p50']:.0f} ms  p90 {r['p90']:.0f} ms  "
              f"p99 {r['p99']:.0f} ms (goal <= {goal:.0f})  max {r['max']:.0f} ms"
              + ("" if r["mode_used"] else "  [fell back to polling]") + (f"  errors {r['errors']}" if r["errors"]
                                                                            else ""))


if __name__ == "__main__":
    main()
