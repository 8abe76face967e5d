"""What a training loop waits for when it logs a row of many keys through a StepLogger with automatic columns: the
first row (laid out once) and rows that bring new keys (laid out again), against the anchor: the same on a row of
``--anchor`` keys, in the same run.

A row of ``--keys`` keys (``layer<i>/grad_norm``: a per-layer family), then ``--grows`` rows that each bring 50 keys
not seen before (keys that change mid-run). Printed by setup_logging's sink to /dev/null (a pipe's 200 cells),
written to a temporary run directory. Reported: seconds for the first row, seconds for the rows with new keys, and
each as a ratio of the anchor's. Wall time of this process, best of ``--rounds``.

Run: python bench/bench_wide_log.py [--keys 10000] [--anchor 20]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from steptable import StepLogger, setup_logging


def one_run(n_keys: int, grows: int) -> tuple[float, float]:
    """Seconds of the first row and of the ``grows`` rows with new keys, for rows of ``n_keys`` keys."""
    row = {f"layer{i}/grad_norm": 1.0 / (i + 1) for i in range(n_keys)}
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        setup_logging("bench", log_dir=tmp)  # as a training script sets it up: the console sink on the pipe
        with StepLogger(run_dir=tmp, alerts=False) as lg:
            t0 = time.perf_counter()
            lg.log({"step": 0, **row})
            t1 = time.perf_counter()
            for step in range(1, grows + 1):
                lg.log({"step": step, **row, **{f"new{step}/{j}": float(j) for j in range(50)}})
            t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--anchor", type=int, default=20)
    ap.add_argument("--grows", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    wide = [one_run(a.keys, a.grows) for _ in range(a.rounds)]
    base = [one_run(a.anchor, a.grows) for _ in range(a.rounds)]
    first, grown = min(w[0] for w in wide), min(w[1] for w in wide)
    first0, grown0 = min(b[0] for b in base), min(b[1] for b in base)
    print(f"first row   {a.keys} keys {first:.3f} s   anchor {a.anchor} keys {first0:.4f} s   {first / first0:.1f}x")
    print(f"{a.grows} rows with new keys   {grown:.3f} s   anchor {grown0:.4f} s   {grown / grown0:.1f}x")


if __name__ == "__main__":
    main()
