"""A seed group's table of means: the runs that differ only by a seed part (``steptable.compare.groups``) shown as one
run whose row at a step holds, for each numeric key, the mean of the seeds' finite values at that step, and
``n_seeds``, how many seeds have a row at that step. Rows go up to the step every seed has reached (the slowest
seed's last step), so a row, once made, never changes as the seeds go on: a live group's table grows like a run's.
A seed rewritten, resumed or changed in place (``change_mark``), or a seed more or less, makes the table again (a
new RunStore). Made at once (:meth:`SeedMeans.update`) or by a :class:`Build` run on any thread, in chunks, the seeds
read under their locks (the follower's thread appends to them), then taken by :meth:`SeedMeans.finish`.
Pure (no textual): a RunStore holds the rows, so the app's tables read it as any run."""

from __future__ import annotations

import itertools
import math
from array import array
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
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
    """The table of means of one seed group, brought up to date by :meth:`update` (at once) or by :meth:`plan`,
    :meth:`Build.run` (any thread) and :meth:`finish` (the thread that reads :attr:`store`)."""

    def __init__(self, name: str, seeds: Sequence[Store]) -> None:
        self.name = name
        self.seeds: list[Store] = list(seeds)
        self.store = _means_store(name, self.seeds)
        self._marks: tuple[Any, ...] = ()
        self._planned: tuple[Any, ...] = ()  # the seeds' state when the last build was planned
        self._failed: tuple[Any, ...] = ()  # ... and when that build failed: not tried again until they change
        #: the build handed out by :meth:`plan` and not yet finished (no other is planned meanwhile)
        self.building: Build | None = None

    def update(self, seeds: Sequence[Store]) -> bool:
        """Take the seeds' new rows (``seeds``: the group's runs now), at once; True when the table changed."""
        build = self.plan(seeds)
        if build is None:
            return False
        build.run()
        self.finish(build)
        return True

    def plan(self, seeds: Sequence[Store]) -> Build | None:
        """What bringing the table up to date with ``seeds`` takes; None when it is up to date (or a build is
        out). A seed rewritten, resumed or changed in place, or a seed more or less, makes a new table (the build's
        ``store``, a new RunStore, taken by :meth:`finish`); else the build appends the new steps to :attr:`store`.
        Cheap: it reads the seeds' lengths and last steps only."""
        if self.building is not None:
            return None
        state = tuple((id(s), change_mark(s), len(s)) for s in seeds)
        if state == self._failed:
            return None
        marks = tuple((id(s), change_mark(s)) for s in seeds)
        fresh = marks != self._marks and bool(len(self.store) or [id(s) for s in seeds] != [id(s) for s in self.seeds])
        if marks != self._marks:
            self.seeds = list(seeds)
            self._marks = marks
        _describe(self.store, self.seeds)  # (a seed's StepLogger may describe its columns anew: it widened one)
        target = _means_store(self.name, self.seeds) if fresh else self.store
        start = self.store.step_at(len(self.store) - 1) + 1 if len(self.store) and not fresh else -math.inf
        end = -math.inf
        if self.seeds and all(len(s) for s in self.seeds):
            end = min(s.step_at(len(s) - 1) for s in self.seeds)
        if end < start and not fresh:
            return None
        self.building = Build(list(self.seeds), target, fresh, start, end)
        self._planned = state
        return self.building

    def finish(self, build: Build) -> None:
        """Take a build that has run: a new table replaces :attr:`store`. A build that failed (``build.error``)
        leaves the table as it was, to be made again from the top once the seeds change (a row more, a rewrite)."""
        self.building = None
        if build.error is not None:
            self._marks, self._failed = (), self._planned
            return
        self._failed = ()
        if build.fresh:
            self.store = build.store


def _means_store(name: str, seeds: Sequence[Store]) -> RunStore:
    label = run_label(name, len(seeds))
    store = RunStore(label, seeds[0].path, arm=label)  # (the arm names its table)
    _describe(store, seeds)
    return store


def _describe(store: RunStore, seeds: Sequence[Store]) -> None:
    """``store`` described as its first seed's StepLogger described that seed's columns (``runinfo``'s columns,
    nothing of how the seed ended), none where the seed has no such description: the table of means is laid out
    with its seeds and writes its numbers as their tables do (steptable.schemas.registry.logged_schema)."""
    meta = getattr(seeds[0], "meta", None) if seeds else None
    info = meta.get("runinfo") if isinstance(meta, dict) else None
    cols = info.get("columns") if isinstance(info, dict) else None
    if cols is None:
        store.meta.pop("runinfo", None)
    elif store.meta.get("runinfo", {}).get("columns") is not cols:  # (a new description only when it changed)
        store.meta["runinfo"] = {"columns": cols}


#: the steps of the first seed one batch of a build averages and appends (its columns' copies, the target's lock
#: held for that long: a few milliseconds)
CHUNK = 4000


@dataclass
class Build:
    """Bringing a table of means up to date: the steps from ``start`` to ``end`` (both included) of ``seeds``
    averaged into ``store``."""

    seeds: list[Store]
    store: RunStore
    fresh: bool
    start: float
    end: float
    error: BaseException | None = None

    def rows(self) -> int:
        """About how many rows of means the build makes (the first seed's rows in the range)."""
        if self.end < self.start:
            return 0
        s = self.seeds[0]
        return s.index_of_step(int(self.end) + 1) - (0 if self.start == -math.inf else s.index_of_step(int(self.start)))

    def run(self, pause: Callable[[], bool] | None = None) -> bool:
        """Average and append, :data:`CHUNK` steps at a time (any thread: each seed is read under its lock, the
        target appended under its own); ``pause`` between chunks, True to stop there (quitting). False when
        stopped."""
        if self.end < self.start:
            return True
        first = self.seeds[0]
        with _locked(first):
            i0 = 0 if self.start == -math.inf else first.index_of_step(int(self.start))
            i1 = first.index_of_step(int(self.end) + 1)
            cuts = [first.step_at(i) for i in range(i0 + CHUNK, i1, CHUNK)]
        bounds = [self.start, *cuts, self.end + 1]
        for k, (a, b) in enumerate(itertools.pairwise(bounds)):
            if k and pause is not None and pause():
                return False
            _add(self.store, self.seeds, a, int(b) - 1)
        return True


def _locked(store: Store) -> AbstractContextManager[Any]:
    lock = getattr(store, "lock", None)  # (a RunStore: its appends, by the follower's thread, wait meanwhile)
    return cast("AbstractContextManager[Any]", lock) if lock is not None else nullcontext()


def _add(store: RunStore, seeds: Sequence[Store], start: float, end: int) -> None:
    """The rows of the steps from ``start`` to ``end`` (both included) that some seed has, appended to ``store``.
    Numeric columns are read as floats (NaN where absent: left out like a logged NaN); seeds at the same steps
    (the usual case) are averaged row by row without a step lookup."""
    keys = list(dict.fromkeys(k for s in seeds for k in s.keys if k not in _SKIP and _numeric(s, k)))
    spans = []
    for s in seeds:
        with _locked(s):  # (one seed's steps and columns agree with each other)
            i0 = 0 if start == -math.inf else s.index_of_step(int(start))
            i1 = s.index_of_step(end + 1)
            spans.append((_steps(s, i0, i1), {k: _column(s, k, i0, i1) for k in keys if k in s.keys}))
    first = spans[0][0]
    same = all(sp[0] == first for sp in spans)
    steps = list(first) if same else sorted(set().union(*(sp[0] for sp in spans)))
    if not steps:
        return
    n = len(seeds)
    if same:
        cols: dict[str, Sequence[Any]] = {N_KEY: [n] * len(steps)}
    else:
        where = [{st: i for i, st in enumerate(sp[0])} for sp in spans]
        cols = {N_KEY: [sum(1 for pos in where if st in pos) for st in steps]}
    for k in keys:
        values = [(sp[1][k], j) for j, sp in enumerate(spans) if k in sp[1]]
        if same and all(isinstance(v, array) and v.typecode == "d" for v, _ in values):
            cols[k] = _column_means([cast("array[float]", v) for v, _ in values])
        elif same:
            cols[k] = [_mean(row) for row in zip(*(v for v, _ in values), strict=True)]
        else:
            cols[k] = [_mean([v[i] for v, j in values if (i := where[j].get(st)) is not None]) for st in steps]
    store.add(Parsed(steps=steps, cols=cols, int_keys=frozenset({N_KEY})), now=math.nan)


def _column_means(arrays: Sequence[array[float]]) -> list[Any]:
    """Row by row, the mean of the finite values of equally long float columns: summed and divided in C, in one
    pass (no list between); a row whose mean is not finite (a NaN, an absent cell, an inf) averaged on its own."""
    total: Iterable[float] = arrays[0]
    for a in arrays[1:]:
        total = map(add, total, a)
    means: list[Any] = list(map(truediv, total, repeat(float(len(arrays)))))
    if not math.isfinite(sum(means)):  # (one pass in C: most columns of most runs have no such row; inf - inf: nan)
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
