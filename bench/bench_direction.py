"""How many cells of a column the watch table colours green / red: against the previous row (the old rule,
``render.trend``) and against the column's recent level (``steptable.table.direction``, the rule the table uses).

    python bench/bench_direction.py                 # 20 seeds x 2000 rows a family
    python bench/bench_direction.py --seeds 5 --rows 1000

Stationary families (nothing moves: every coloured cell is flicker): Gaussian noise, Student-t noise (df 3),
a binomial fraction of 32 rollouts, an autocorrelated AR(1) series (phi 0.9: a smoothed metric), and the demo's own
reward and hack fraction once their levels have settled (steps 800 on). Moving families (the colour must appear):
linear trends of 0.02, 0.05 and 0.1 noise-sigmas a row, the demo's reward while it climbs (its first 400 steps), and
a level step of 3 sigmas (the share of the 20 rows after the step that are coloured). A column's better direction
is "higher". Figures: the share of the family's cells that are coloured, the worst seed (highest for the stationary
families, lowest for the moving ones) and all seeds together.
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable

from steptable.demo.run import _Arm
from steptable.table import render
from steptable.table.columns import Col
from steptable.table.direction import RECENT, SHORT, direction

COL = Col("x", 8, "x", None, "", "higher")
#: the values before a cell that the rule reads
BEFORE = SHORT - 1 + RECENT
Series = list[float]


def _t3(rnd: random.Random) -> float:
    """Student-t noise, 3 degrees of freedom, scaled to unit spread."""
    return rnd.gauss(0, 1) / math.sqrt(sum(rnd.gauss(0, 1) ** 2 for _ in range(3)) / 3) / math.sqrt(3)


def _ar1(rnd: random.Random, rows: int) -> Series:
    out, x = [], 0.0
    for _ in range(rows):
        x = 0.9 * x + rnd.gauss(0, 1)
        out.append(x)
    return out


def _demo(seed: int, key: str, first: int, last: int) -> Series:
    arm = _Arm("vanilla", seed)
    out = []
    for step in range(last):
        v = arm.row(step)[key]
        if step >= first:
            out.append(v[0] / v[1] if isinstance(v, tuple) else float(v))
    return out


STATIONARY: dict[str, Callable[[random.Random, int, int], Series]] = {
    "gaussian": lambda rnd, rows, seed: [rnd.gauss(0, 1) for _ in range(rows)],
    "student-t df3": lambda rnd, rows, seed: [_t3(rnd) for _ in range(rows)],
    "binomial 32 (p .3)": lambda rnd, rows, seed: [sum(rnd.random() < 0.3 for _ in range(32)) / 32
                                                   for _ in range(rows)],
    "AR(1) phi .9": lambda rnd, rows, seed: _ar1(rnd, rows),
    "demo rew (steps 800+)": lambda rnd, rows, seed: _demo(seed, "rew", 800, 800 + rows),
    "demo hack_s (steps 800+)": lambda rnd, rows, seed: _demo(seed, "hack_s", 800, 800 + rows),
}

MOVING: dict[str, Callable[[random.Random, int, int], Series]] = {
    "trend .02 sigma/row": lambda rnd, rows, seed: [0.02 * i + rnd.gauss(0, 1) for i in range(rows)],
    "trend .05 sigma/row": lambda rnd, rows, seed: [0.05 * i + rnd.gauss(0, 1) for i in range(rows)],
    "trend .1 sigma/row": lambda rnd, rows, seed: [0.1 * i + rnd.gauss(0, 1) for i in range(rows)],
    "demo rew (steps 0-400)": lambda rnd, rows, seed: _demo(seed, "rew", 0, 400),
}


def shares(series: Series, skip: int = 0) -> tuple[float, float, float, float]:
    """(old, new, old switches, new switches): the share of the cells after the first ``skip`` that each rule
    colours, and how often a cell's colour differs from the one above it (per cell: flicker)."""
    old = new = n = 0
    old_sw = new_sw = 0
    last = (0, 0)
    for i in range(max(skip, 1), len(series)):
        n += 1
        o = render.trend(COL, series[i], series[i - 1])
        w = direction(COL.better, series[i], series[max(0, i - BEFORE):i])
        old, new = old + (o != 0), new + (w != 0)
        old_sw, new_sw = old_sw + (n > 1 and o != last[0]), new_sw + (n > 1 and w != last[1])
        last = (o, w)
    return old / n, new / n, old_sw / n, new_sw / n


def step_share(rnd: random.Random, rows: int, size: float) -> tuple[float, float, float, float]:
    """A level step of ``size`` sigmas in the middle: the share of the 20 rows from the step on that are
    coloured."""
    mid = rows // 2
    s = [(size if i >= mid else 0.0) + rnd.gauss(0, 1) for i in range(rows)]
    old = sum(render.trend(COL, s[i], s[i - 1]) != 0 for i in range(mid, mid + 20)) / 20
    new = sum(direction(COL.better, s[i], s[max(0, i - BEFORE):i]) != 0 for i in range(mid, mid + 20)) / 20
    return old, new, math.nan, math.nan


def paint_cost(rows: int = 48, cols: int = 20, repeat: int = 5) -> tuple[float, float]:
    """(with moves, without): seconds to paint a fresh screen of ``rows`` lines of ``cols`` columns that have a
    better direction (``CellPaint.cells``, as a jump or a page shows new rows: nothing cached), the best of
    ``repeat``; without = the same cells with move colours off (the anchor: formatting and styles alone)."""
    import time

    from rich.style import Style

    from steptable.app.widgets.cellstyle import KINDS, CellPaint

    rnd = random.Random(0)
    table = (Col("step", 6, "step", "d"), *(Col(f"m{k}", 7, f"m{k}", None, "", "higher") for k in range(cols)))
    data = [{"step": i, **{f"m{k}": rnd.gauss(k, 1) for k in range(cols)}} for i in range(2000)]
    styles = tuple(Style() for _ in range(2 * KINDS))
    best = {True: math.inf, False: math.inf}
    for n in range(repeat + 1):  # (the first round warms render's memo of the cells' texts for both: not timed)
        for trend in (False, True):
            paint = CellPaint()
            t0 = time.perf_counter()
            for i in range(1000, 1000 + rows):
                paint.cells(i, i, table, data.__getitem__, styles, None, trend)
            if n:
                best[trend] = min(best[trend], time.perf_counter() - t0)
    return best[True], best[False]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--rows", type=int, default=2000)
    args = ap.parse_args()
    print(f"{'family':<26} {'old: worst / all':>18} {'new: worst / all':>18}  {'switches old / new':>18}"
          f"   ({args.seeds} seeds)")
    for title, families, worst in (("stationary (colour = flicker)", STATIONARY, max),
                                   ("moving (colour wanted)", MOVING, min)):
        print(title)
        for name, make in families.items():
            got = [shares(make(random.Random(f"{name}-{seed}"), args.rows, seed), skip=30)
                   for seed in range(args.seeds)]
            _line(name, got, worst)
        if families is MOVING:
            for size in (3.0, 5.0):
                _line(f"step of {size:g} sigma (20 rows)", [step_share(random.Random(f"step-{seed}"), args.rows, size)
                                                          for seed in range(args.seeds)], worst)
    with_moves, without = paint_cost()
    print(f"paint a fresh 48-line screen, 20 directed columns: {with_moves * 1e3:.1f} ms with move colours, "
          f"{without * 1e3:.1f} ms without (anchor): {with_moves / without:.2f}x")


def _line(name: str, got: list[tuple[float, float, float, float]],
          worst: Callable[[list[float]], float]) -> None:
    olds, news = [g[0] for g in got], [g[1] for g in got]
    switches = (max(g[2] for g in got), max(g[3] for g in got))
    flicker = "" if math.isnan(switches[0]) else f"{switches[0]:>9.1%} / {switches[1]:>6.1%}"
    print(f"  {name:<24} {worst(olds):>8.1%} / {sum(olds) / len(olds):>6.1%}"
          f" {worst(news):>9.1%} / {sum(news) / len(news):>6.1%}  {flicker}")


if __name__ == "__main__":
    main()
