"""StepLogger.row speed on the 24-column routing set, against the seed's formatting logic as the anchor.

The anchor re-implements the original StepLogger's cell formatting (format spec, frac as n/d, nan for None, right
padding with no width guarantee) in this file and is timed in the same run on the same rows.
Goal: <= 8 us/row. Run: python bench/bench_render.py
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from steptable import StepLogger
from steptable.schemas.routing import routing_columns
from steptable.table.columns import Col


def seed_cell(value: Any, fmt: str | None) -> str:
    if value is None:
        return "nan"
    if fmt == "frac":
        n, d = value
        return f"{n}/{d}"
    if fmt is None:
        return str(value)
    if isinstance(value, float) and value != value:
        return "nan"
    return format(value, fmt)


def seed_row(cols: Sequence[Col], cells: Mapping[str, Any]) -> str:
    return " ".join(f"{seed_cell(cells[c.key], c.fmt):>{c.width}}" for c in cols)


#: typical magnitude of each routing column in a real run (what the training loop hands over)
SCALE = {"ref_eq": 50.0, "gn": 3.0, "lr": 1e-5, "lp_s": -0.9, "lp_t": -0.6}


def make_rows(cols: Sequence[Col], n: int) -> list[dict[str, Any]]:
    """Realistic rows: rates in [0, 1], rewards around 0, fractions of 32 rollouts, a nan between evaluations."""
    rng = random.Random(0)
    rows = []
    for step in range(n):
        r: dict[str, Any] = {}
        for c in cols:
            if c.fmt == "frac":
                r[c.key] = (rng.randint(0, 32), 32)
            elif c.fmt == "d":
                r[c.key] = step
            elif c.key == "lr":
                r[c.key] = 1e-5 * min(1.0, (step + 1) / 100)  # linear warmup, then constant
            elif c.key in ("hack_deployed", "solve_deployed") and step % 10:
                r[c.key] = math.nan
            else:
                r[c.key] = SCALE.get(c.key, 1.0) * rng.uniform(0.2, 1.2) * (1 if rng.random() < 0.8 else -1)
        rows.append(r)
    return rows


def per_row_us(fn: Callable[[Mapping[str, Any]], str], rows: Sequence[Mapping[str, Any]]) -> float:
    t0 = time.perf_counter()
    for r in rows:
        fn(r)
    return (time.perf_counter() - t0) / len(rows) * 1e6


def interleaved(fns: Sequence[Callable[[Mapping[str, Any]], str]], rows: Sequence[Mapping[str, Any]]) -> list[float]:
    """Best of 7 rounds, the candidates alternating inside each round (fair under a noisy shared machine)."""
    best = [math.inf] * len(fns)
    for _ in range(7):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], per_row_us(fn, rows))
    return best


def main() -> None:
    cols = [c for c in routing_columns(modes=["code"], show_ablate=False, timing=False)]
    assert len(cols) == 24, len(cols)
    rows = make_rows(cols, 20_000)
    sl = StepLogger(cols, alerts=False, console=False)
    for r in rows[:50]:  # identical text where the seed's output is right (it never shrinks or guards a cell)
        assert len(sl.row(r)) == len(sl.header())
    ours, anchor = interleaved([sl.row, lambda r: seed_row(cols, r)], rows)
    print(f"columns: {len(cols)}  rows: {len(rows)}")
    print(f"seed formatting (anchor): {anchor:6.2f} us/row")
    print(f"StepLogger.row:           {ours:6.2f} us/row   ratio {ours / anchor:.2f}x anchor   goal <= 8 us/row")


if __name__ == "__main__":
    main()
