"""Full-ingest time and memory of one big metrics.jsonl, next to stdlib json and pandas measured in the same run.

    python bench/bench_ingest.py                    # 100k steps x 43 keys (~150 MB), generated once into a temp dir
    python bench/bench_ingest.py --rows 20000 --repeat 1 --no-pandas

Each measurement runs in a fresh interpreter (so memory figures do not leak into each other) and reports wall time,
CPU time (steadier on a shared machine), the resident-memory increase with the result still held, and the peak
increase. Goals: steptable full ingest <= 1.0 s, resident increase <= 2x the numeric payload (rows x keys x 8 bytes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAMES = ["rl/loss", "rl/reward", "rl/reward_std", "rl/kl", "rl/entropy", "rl/clip_frac", "policy/grad_norm",
         "policy/lr", "policy/adv_mean", "policy/adv_std", "echo/surprisal_mean", "echo/surprisal_max",
         "echo/entropy_mean", "echo/entropy_max", "gen/len_mean", "gen/len_max", "gen/tokens", "gen/truncated",
         "timing/gen", "timing/fwd", "timing/bwd", "timing/step", "mem/alloc_gb", "mem/peak_gb", "eval/acc",
         "eval/pass_at_1", "eval/hack_rate", "route/qmass", "route/keep", "route/resid", "route/rout", "route/tlo",
         "route/thi", "route/auroc", "route/cos", "route/stale", "batch/n_pos", "batch/n_neg", "batch/zero_std",
         "opt/update_norm", "opt/param_norm", "ts"]
INT_KEYS = {"gen/tokens", "gen/len_max", "route/stale", "batch/n_pos", "batch/n_neg", "gen/truncated"}


def generate(path: Path, rows: int, keys: int, seed: int = 0) -> None:
    """Realistic rows: full-precision floats over many magnitudes, some ints, a few nulls and bare NaN literals."""
    rng = random.Random(seed)
    names = (NAMES * (keys // len(NAMES) + 1))[: keys - 1]
    names = [n if names.index(n) == i else f"{n}_{i}" for i, n in enumerate(names)]
    t0 = 1.7e9
    with open(path, "w") as f:
        for step in range(rows):
            row: dict[str, Any] = {"step": step}
            for j, name in enumerate(names):
                if name == "ts":
                    row[name] = t0 + step * 2.5 + rng.random()
                elif name in INT_KEYS:
                    row[name] = rng.randrange(0, 4096)
                else:
                    row[name] = rng.gauss(0.0, 1.0) * 10.0 ** rng.randint(-6, 3)
                if j % 17 == 5 and rng.random() < 0.01:
                    row[name] = None
                elif j % 13 == 7 and rng.random() < 0.01:
                    row[name] = math.nan  # json.dumps writes a bare NaN
            f.write(json.dumps(row) + "\n")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def one(kind: str, path: str) -> dict[str, float]:
    """One measurement in this interpreter (imports done before the clock starts)."""
    held: Any
    if kind == "steptable":
        from steptable.ingest import Follower
    elif kind == "pandas":
        import pandas as pd
    rss0, peak0 = _rss(), _peak()
    w0, c0 = time.perf_counter(), time.process_time()
    if kind == "steptable":
        f = Follower([path])
        f.scan()
        held = f
        n = len(next(iter(f.stores.values())))
    elif kind == "json":
        with open(path, "rb") as fh:
            held = [json.loads(line) for line in fh]
        n = len(held)
    else:
        held = pd.read_json(path, lines=True)
        n = len(held)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    out = {"wall": wall, "cpu": cpu, "rss": _rss() - rss0, "peak": max(_peak() - peak0, 0), "rows": n}
    del held
    return out


def measure(kind: str, path: Path) -> dict[str, float]:
    res = subprocess.run([sys.executable, __file__, "--one", kind, str(path)], capture_output=True, text=True,
                         check=True)
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=43)
    ap.add_argument("--repeat", type=int, default=3, help="runs of steptable and json each (the best is kept)")
    ap.add_argument("--no-pandas", action="store_true")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "steptable-bench"))
    ap.add_argument("--one", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)))
        return
    path = Path(args.dir) / f"metrics_{args.rows}x{args.keys}.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        generate(path.with_suffix(".tmp"), args.rows, args.keys)
        path.with_suffix(".tmp").rename(path)
        print(f"generated {path} in {time.perf_counter() - t:.1f} s")
    size = path.stat().st_size
    payload = args.rows * args.keys * 8
    print(f"file: {size / 1e6:.0f} MB, {args.rows:,} rows x {args.keys} keys; numeric payload {payload / 1e6:.1f} MB")
    runs: dict[str, list[dict[str, float]]] = {"steptable": [], "json": []}
    for _ in range(args.repeat):  # interleaved, so both see the same machine load; the best of each is kept
        for name in runs:
            runs[name].append(measure(name, path))
    if not args.no_pandas:
        runs["pandas"] = [measure("pandas", path)]
    results = {name: min(rs, key=lambda r: r["wall"]) for name, rs in runs.items()}
    best = results["steptable"]
    print(f"{'reader':<10} {'wall s':>7} {'cpu s':>7} {'MB/s':>6} {'rss +MB':>8} {'peak +MB':>9} {'rss/payload':>12}")
    for name, r in results.items():
        print(f"{name:<10} {r['wall']:7.2f} {r['cpu']:7.2f} {size / 1e6 / r['wall']:6.0f} {r['rss'] / 1e6:8.1f} "
              f"{r['peak'] / 1e6:9.1f} {r['rss'] / payload:12.2f}")
    for name, rs in runs.items():
        print(f"{name} walls: " + ", ".join(f"{r['wall']:.2f}" for r in rs))
    for name in results:
        if name != "steptable":
            r = results[name]
            print(f"steptable vs {name}: {r['wall'] / best['wall']:.1f}x faster (wall), {r['cpu'] / best['cpu']:.1f}x "
                  f"(cpu), {r['rss'] / max(best['rss'], 1):.1f}x less resident memory")
    print(f"goals: wall {best['wall']:.2f} s (<= 1.0), rss {best['rss'] / payload:.2f}x payload (<= 2.0)")


if __name__ == "__main__":
    main()
