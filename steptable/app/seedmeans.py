"""A seed group's table of means: the runs that differ only by a seed part (``steptable.compare.groups``) shown as one
run whose row at a step holds, for each numeric key, the mean of the seeds' finite values at that step, and
``n_seeds``, how many seeds have a row at that step. Rows go up to the step every seed has reached (the slowest
seed's last step), so a row, once made, never changes as the seeds go on: a live group's table grows like a run's.
A seed rewritten, resumed or changed in place (``change_mark``), or a seed more or less, makes the table again.
Pure (no textual): a RunStore holds the rows, so the app's tables read it as any run."""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from itertools import repeat
from operator import add, truediv
from typing import Any, cast

from steptable.app.model import Store, change_mark
from steptable.ingest.parse import MISSING
from steptable.ingest.parsed import Parsed
from steptable.ingest.store import RunStore
from steptable.table.formatting import to_float

#: the column that counts the seeds with a row at the step
N_KEY = "n_seeds"
#: keys not averaged (their own bookkeeping)
_SKIP = frozenset({"step", "_step", "global_step", "arm", "run", N_KEY})


def run_label(name: str, seeds: int) -> str:
    """The group table's name: ``routeA · mean of 3 seeds``."""
    return f"{name} · mean of {seeds} seeds"


class SeedMeans:
    """The table of means of one seed group, brought up to date by :meth:`update`."""

    def __init__(self, name: str, seeds: Sequence[Store]) -> None:
        self.name = name
        self.seeds: list[Store] = list(seeds)
        label = run_label(name, len(self.seeds))
        self.store = RunStore(label, self.seeds[0].path, arm=label)  # (the arm names its table)
        self._marks: tuple[Any, ...] = ()

    def update(self, seeds: Sequence[Store]) -> bool:
        """Take the seeds' new rows (``seeds``: the group's runs now); True when the table changed."""
        marks = tuple((id(s), change_mark(s)) for s in seeds)
        changed = False
        if marks != self._marks:
            if len(self.store) or [id(s) for s in seeds] != [id(s) for s in self.seeds]:
                self.seeds = list(seeds)
                self.store.run = self.store.arm = run_label(self.name, len(self.seeds))
                self.store.reset()
                changed = True
            self._marks = marks
        if not self.seeds or any(len(s) == 0 for s in self.seeds):
            return changed
        end = min(s.step_at(len(s) - 1) for s in self.seeds)
        start = self.store.step_at(len(self.store) - 1) + 1 if len(self.store) else -math.inf
        if end < start:
            return changed
        self._add(start, end)
        return True

    def _add(self, start: float, end: int) -> None:
        """The rows of the steps from ``start`` to ``end`` (both included) that some seed has. Numeric columns are
        read as floats (NaN where absent: left out like a logged NaN); seeds at the same steps (the usual case)
        are averaged row by row without a step lookup."""
        spans = []
        for s in self.seeds:
            i0 = 0 if start == -math.inf else s.index_of_step(int(start))
            i1 = s.index_of_step(end + 1)
            spans.append((s, i0, i1, _steps(s, i0, i1)))
        first = spans[0][3]
        same = all(sp[3] == first for sp in spans)
        steps = list(first) if same else sorted(set().union(*(sp[3] for sp in spans)))
        if not steps:
            return
        keys = list(dict.fromkeys(k for s in self.seeds for k in s.keys if k not in _SKIP and _numeric(s, k)))
        n = len(self.seeds)
        if same:
            cols: dict[str, Sequence[Any]] = {N_KEY: [n] * len(steps)}
        else:
            where = [{st: i for i, st in enumerate(sp[3])} for sp in spans]
            cols = {N_KEY: [sum(1 for pos in where if st in pos) for st in steps]}
        for k in keys:
            values = [(_column(s, k, i0, i1), j) for j, (s, i0, i1, _) in enumerate(spans) if k in s.keys]
            if same and all(isinstance(v, array) and v.typecode == "d" for v, _ in values):
                cols[k] = _column_means([cast("array[float]", v) for v, _ in values])
            elif same:
                cols[k] = [_mean(row) for row in zip(*(v for v, _ in values), strict=True)]
            else:
                cols[k] = [_mean([v[i] for v, j in values if (i := where[j].get(st)) is not None]) for st in steps]
        self.store.add(Parsed(steps=steps, cols=cols, int_keys=frozenset({N_KEY})), now=math.nan)


def _column_means(arrays: Sequence[array[float]]) -> list[Any]:
    """Row by row, the mean of the finite values of equally long float columns: summed and divided in C; a row
    whose sum is not finite (a NaN, an absent cell, an inf) averaged on its own."""
    total: Sequence[float] = arrays[0]
    for a in arrays[1:]:
        total = list(map(add, total, a))
    means: list[Any] = list(map(truediv, total, repeat(float(len(arrays)))))
    if not math.isfinite(math.fsum(total)):  # (one pass in C: most columns of most runs have no such row)
        for i in [i for i, t in enumerate(means) if t - t != 0.0]:
            means[i] = _mean([a[i] for a in arrays])
    return means


def _column(store: Store, key: str, i0: int, i1: int) -> Sequence[Any]:
    between = getattr(store, "column_between", None)  # (a RunStore: floats, NaN where absent; only those rows)
    return between(key, i0, i1) if between is not None else store.cells_between(key, i0, i1)


def _steps(store: Store, i0: int, i1: int) -> Sequence[int]:
    between = getattr(store, "steps_between", None)  # (a RunStore copies only those rows)
    return between(i0, i1) if between is not None else store.steps[i0:i1]


def _mean(values: Sequence[Any]) -> Any:
    """The mean of the finite numbers of ``values``; MISSING (no cell) when there is none."""
    xs = [x for v in values if (x := v if type(v) is float else to_float(v)) - x == 0.0]
    return math.fsum(xs) / len(xs) if xs else MISSING


def _numeric(store: Store, key: str) -> bool:
    is_numeric = getattr(store, "is_numeric", None)
    return bool(is_numeric(key)) if is_numeric is not None else True
