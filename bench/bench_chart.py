"""The chart view's cost on long runs: a redraw after a zoom over 1M points per arm x 3 arms (goal <= 15 ms; the
pyramid makes it O(width * log rows)), appending one row to a series of 1k vs 1M points (goal: the same cost), and
the one-time pyramid build. Anchor, timed in the same run: the old sparkline's read of the same column (``downsample``:
16 strided points per bucket, means), which stays O(width) but misses spikes; and a plain copy of the 1M column.

Each of the 9 timed redraws (median taken) is at a new random zoom, so no cache of a drawn view helps.

Run: python bench/bench_chart.py [--seeds 3] (every seed; the worst is reported)."""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Callable

from rich.style import Style

from steptable.app.charts.draw import Line, Styles, chart
from steptable.app.model import downsample
from steptable.ingest.pyramid import Pyramid

N = 1_000_000
STYLES = Styles(arms=[Style(color=c) for c in ("#E69F00", "#56B4E9", "#009E73")], alert=Style(color="red"),
                axis=Style(dim=True), cross=Style(reverse=True))


def timed(f: Callable[[], object], reps: int = 9, clock: Callable[[], float] = time.perf_counter) -> float:
    ts = []
    for _ in range(reps):
        t = clock()
        f()
        ts.append(clock() - t)
    return statistics.median(ts)


def one_seed(seed: int) -> dict[str, float]:
    r = random.Random(seed)
    xs = [float(i) for i in range(N)]
    cols = []
    for _ in range(3):
        col = [1.0 + r.gauss(0, 0.05) for _ in range(N)]
        col[r.randrange(N)] = 1000.0
        col[r.randrange(N)] = math.nan
        cols.append(col)
    t = time.perf_counter()
    pyrs = [Pyramid(c) for c in cols]
    build = (time.perf_counter() - t) / 3
    lines = [Line(f"arm{i}", xs, p) for i, p in enumerate(pyrs)]
    views = []  # a new zoom each redraw: nothing drawn before is reused
    for _ in range(9):
        a = r.randrange(N // 2)
        views.append((float(a), float(a + r.randrange(1000, N // 2))))
    cpu_views = list(views)
    redraw = timed(lambda: chart("loss", lines, views.pop(), 160, 30, STYLES))
    # the process's CPU time as well: on a shared machine the wall clock also counts the time others hold the CPU
    redraw_cpu = timed(lambda: chart("loss", lines, cpu_views.pop(), 160, 30, STYLES), clock=time.process_time)
    anchor = timed(lambda: [downsample(c, 151 * 2) for c in cols])
    copy = timed(lambda: [c[:] for c in cols], reps=3)
    small = Pyramid(cols[0][:1000])
    big = pyrs[0]
    app_small = timed(lambda: small.extend([1.0]), reps=201)
    app_big = timed(lambda: big.extend([1.0]), reps=201)
    return {"build_s": build, "redraw_ms": redraw * 1e3, "redraw_cpu_ms": redraw_cpu * 1e3,
            "anchor_ms": anchor * 1e3, "copy_ms": copy * 1e3,
            "append_1k_us": app_small * 1e6, "append_1M_us": app_big * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    runs = []
    for s in range(args.seeds):
        runs.append(one_seed(s))
        got = runs[-1]
        print(f"seed {s}: redraw {got['redraw_ms']:.2f} ms (CPU {got['redraw_cpu_ms']:.2f} ms), anchor (old "
              f"downsample) {got['anchor_ms']:.2f} ms, ratio {got['redraw_ms'] / got['anchor_ms']:.2f}")
    worst = {k: max(r[k] for r in runs) for k in runs[0]}
    print(f"worst of {args.seeds} seeds, 3 arms x {N:,} points, 160 x 30 cells (302 pixel columns):")
    print(f"  redraw after a zoom        {worst['redraw_ms']:8.2f} ms  (goal <= 15)")
    print(f"  the same, process CPU time {worst['redraw_cpu_ms']:8.2f} ms")
    ratio = worst["redraw_ms"] / worst["anchor_ms"]
    print(f"  anchor: old downsample     {worst['anchor_ms']:8.2f} ms  ratio {ratio:.2f}")
    print(f"  anchor: copy the 3 columns {worst['copy_ms']:8.2f} ms  ratio {worst['redraw_ms'] / worst['copy_ms']:.2f}")
    print(f"  append 1 row, 1k series    {worst['append_1k_us']:8.1f} us")
    print(f"  append 1 row, 1M series    {worst['append_1M_us']:8.1f} us  ratio "
          f"{worst['append_1M_us'] / worst['append_1k_us']:.2f} (log2 1M / log2 1k = 2)")
    print(f"  pyramid build per 1M arm   {worst['build_s']:8.2f} s (once per column charted)")


if __name__ == "__main__":
    main()
