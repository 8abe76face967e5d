"""A comparison kept up to date while runs grow: what a live view recomputes after each batch of rows. Pure.

``LiveCompare(runs, baseline).update()`` gives the same Results as :func:`steptable.compare.core.compare` (the
same definitions; sums as running sums, so the last digits may differ: ~1e-13 relative), at a cost per update that
does not grow with the runs' length: each run keeps its x and, per metric, prefix sums and counts of its finite
values from an *anchor* row at or before the window's start on. An update reads only the rows appended since
(``column_between``), finds the window's rows by bisection, a seed's window sum and count from two prefix entries,
and a single seed's 10 batch sums by bisecting the prefix counts: O(arms x seeds x metrics x log rows). Windows only
move forward as runs grow, so the prefix before the window is dropped from time to time (amortised O(1) a row).

A run that changed other than by appending (a resume replaced rows, a row was edited in place, the file was
rewritten: ``generation``, ``resumes``, ``edit_count``) is indexed again from its anchor; so is one whose window
starts before its anchor (a run added later moved the common range back).
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import accumulate, pairwise
from operator import ne
from typing import Any

from steptable.compare.core import (
    Arm,
    Cell,
    CompareError,
    Result,
    Window,
    choose_window,
    comparable,
    metric_results,
    metric_values,
    parse_window,
    pick_metrics,
    with_metrics,
)
from steptable.compare.direction import default_metrics, directions
from steptable.compare.groups import group_runs
from steptable.compare.stats import batch_bounds, batches_spread, seeds_spread
from steptable.compare.xaxis import XAxis, XError, x_values

#: a run's dead prefix (rows before its window) is dropped once it is this long and at least as long as the rest
COMPACT_MIN = 4096


class _Prefix:
    """Running sums and counts of one metric's finite values over rows [anchor, n): ``s[k]``, ``c[k]`` = over rows
    [anchor, anchor + k); ``d[k]``: how many of those values differ from the finite value before them (the first
    one counts), so a window whose values are all equal is known from two entries (its mean is then that value
    exactly: running sums would give it with the rounding of every row before it)."""

    __slots__ = ("c", "d", "last", "s")

    def __init__(self) -> None:
        self.s = array("d", [0.0])
        self.c = array("q", [0])
        self.d = array("q", [0])
        self.last = math.nan  # the last finite value (none yet: NaN, unequal to every value)

    def extend(self, vals: Sequence[Any]) -> None:
        fin = [v if type(v) is float and math.isfinite(v) else None for v in vals]
        self.s.extend(accumulate((0.0 if v is None else v for v in fin), initial=self.s[-1]))
        del self.s[-len(fin) - 1]
        self.c.extend(accumulate((v is not None for v in fin), initial=self.c[-1]))
        del self.c[-len(fin) - 1]
        held = list(accumulate(fin, _hold, initial=self.last))  # the last finite value at each row
        self.d.extend(accumulate(map(ne, held[1:], held), initial=self.d[-1]))
        del self.d[-len(fin) - 1]
        self.last = held[-1]


def _hold(last: float, v: float | None) -> float:
    return last if v is None else v


class _RunIndex:
    """One run's x and its metrics' prefixes, from row ``anchor`` on."""

    def __init__(self, run: Any, x: str, anchor: int = 0) -> None:
        self.run = run
        self.x_name = x
        self.axis: XAxis = x_values(run, x)
        self.anchor = anchor
        self.n = len(self.axis.values)
        self.prefix: dict[str, _Prefix] = {}
        self.seen = self._stamp()

    def _stamp(self) -> tuple[int, int, int]:
        r = self.run
        return getattr(r, "generation", 0), len(r.resumes), getattr(r, "edit_count", 0)

    def stale(self) -> bool:
        return self._stamp() != self.seen or len(self.run) < self.n

    def grow(self) -> None:
        """Take in the rows appended since the last call."""
        n0 = self.n
        self.axis.extend(self.run)
        self.n = len(self.axis.values)
        if self.n > n0:
            for key, p in self.prefix.items():
                got = comparable(self.run, key)
                p.extend(metric_values(self.run, key, n0, self.n) if got else [None] * (self.n - n0))

    def metric(self, key: str) -> _Prefix:
        p = self.prefix.get(key)
        if p is None:
            p = self.prefix[key] = _Prefix()
            if comparable(self.run, key):
                p.extend(metric_values(self.run, key, self.anchor, self.n))
            else:
                p.extend([None] * (self.n - self.anchor))
        return p

    def compact(self, row: int) -> None:
        """Drop the prefix before ``row`` when it is long (rows before a window that only moves forward)."""
        dead = row - self.anchor
        if not self.prefix:  # nothing read yet: start where the window does
            self.anchor = max(self.anchor, row)
            return
        if dead < COMPACT_MIN or dead < self.n - row:
            return
        for p in self.prefix.values():
            s0, c0, d0 = p.s[dead], p.c[dead], p.d[dead]
            p.s = array("d", (v - s0 for v in p.s[dead:]))
            p.c = array("q", (v - c0 for v in p.c[dead:]))
            p.d = array("q", (v - d0 for v in p.d[dead:]))
        self.anchor = row

    def window(self, lo: float, hi: float, key: str) -> _Span:
        i, j = self.axis.rows(lo, hi)
        p = self.metric(key)
        a, b = i - self.anchor, j - self.anchor
        span = _Span(p, a, b, j - i)
        if span.n and p.d[b] == p.d[first := bisect_left(p.c, span.c0 + 1, a)]:  # no change after its first value
            span.flat = float(metric_values(self.run, key, self.anchor + first - 1, self.anchor + first)[0])
        return span


class _Span:
    """One run's window of one metric: its finite values' count and sum, and (asked for one seed only) the means of
    its batches, read from the prefixes; ``flat``: the value, where they are all one value."""

    __slots__ = ("a", "c0", "flat", "n", "p", "rows", "total")

    def __init__(self, p: _Prefix, a: int, b: int, rows: int) -> None:
        self.p, self.a, self.c0, self.n, self.rows = p, a, p.c[a], p.c[b] - p.c[a], rows
        self.total = p.s[b] - p.s[a]
        self.flat: float | None = None

    def mean(self) -> float:
        return self.flat if self.flat is not None else self.total / self.n

    def batch_means(self) -> list[float]:
        if self.flat is not None:
            return [self.flat] * (len(batch_bounds(self.n)) - 1)
        p, out = self.p, []
        for g0, g1 in pairwise(batch_bounds(self.n)):
            r0 = bisect_left(p.c, self.c0 + g0, self.a)  # the first row with g0 of the window's values before it
            r1 = bisect_left(p.c, self.c0 + g1, self.a)
            out.append((p.s[r1] - p.s[r0]) / (g1 - g0))
        return out


class LiveCompare:
    """A comparison of ``runs`` kept up to date (see the module doc). ``window``: as ``--window`` takes it;
    ``better``: metric -> direction (default: the runs' schemas')."""

    def __init__(self, runs: Sequence[Any], baseline: str | None = None, x: str = "step", window: str | None = None,
                 metrics: Sequence[str] = (), pattern: Any = None,
                 better: Mapping[str, str | None] | None = None) -> None:
        self.x = x
        self.better: dict[str, str | None] | None = dict(better) if better is not None else None
        self.spec = parse_window(window)
        self.metrics = list(metrics)
        self.pattern = pattern
        self.groups = group_runs(runs, pattern)
        self.baseline = baseline if baseline is not None else next(iter(self.groups), "")
        self.index: dict[int, _RunIndex] = {}
        self.window: Window | None = None
        self._order: tuple[tuple[str, ...], list[str]] = ((), [])  # metrics picked -> as the schema lays them out

    def _laid_out(self, arms: Sequence[Arm], metrics: list[str]) -> list[str]:
        """``metrics`` as the baseline's schema lays them out (looked up again only when the metrics picked change):
        its order, less the keys it keeps out of its table (:func:`steptable.compare.direction.default_metrics`)."""
        if tuple(metrics) != self._order[0]:
            self._order = (tuple(metrics), default_metrics(arms, metrics))
        return self._order[1]

    def _indexed(self, run: Any) -> _RunIndex:
        ix = self.index.get(id(run))
        if ix is None or ix.stale():
            ix = self.index[id(run)] = _RunIndex(run, self.x, ix.anchor if ix is not None else 0)
        else:
            ix.grow()
        return ix

    def update(self) -> list[Result]:
        """Results for the rows the runs hold now (CompareError as ``compare`` raises it)."""
        if self.baseline not in self.groups:
            raise CompareError(f"no arm {self.baseline!r} (arms: {', '.join(self.groups)})")
        order = [self.baseline, *(g for g in self.groups if g != self.baseline)]
        idx: dict[str, list[_RunIndex]] = {}
        for g in order:
            idx[g] = []
            for m in self.groups[g]:
                try:
                    idx[g].append(self._indexed(m.run))
                except XError as e:
                    raise CompareError(f"arm {g!r} ({m.name}): {e}") from None
        arms = [Arm(g, tuple(self.groups[g]), tuple(ix.axis for ix in idx[g])) for g in order]
        metrics = self.metrics or self._laid_out(arms, pick_metrics(arms))
        logging = with_metrics(arms, metrics)[0] or arms  # (no metric: no result, the window of every run)
        kept = {a.name: {id(m.run) for m in a.members} for a in logging}
        window = self.window = choose_window(logging, self.spec)
        for ixs in idx.values():
            for k, ix in enumerate(ixs):
                start = ix.axis.rows(window.lo, window.hi)[0]
                if start < ix.anchor:  # the window moved back: index again from its start
                    ix = ixs[k] = self.index[id(ix.run)] = _RunIndex(ix.run, self.x, start)
                ix.compact(start)
        if self.better is None or any(k not in self.better for k in metrics):  # (the schemas' directions, once)
            self.better = {**directions(arms, metrics), **(self.better or {})}
        better = self.better
        out: list[Result] = []
        order = [g for g in order if g in kept]  # (as compare: the runs that log none of the metrics left out)
        runs = {g: [ix for ix in idx[g] if id(ix.run) in kept[g]] for g in order}
        for key in metrics:
            cells = {g: self._cell(runs[g], key, window) for g in order}
            out += metric_results(key, cells, self.baseline, better.get(key), self.x, window)
        return out

    @staticmethod
    def _cell(ixs: Sequence[_RunIndex], key: str, w: Window) -> Cell:
        per = [ix.window(w.lo, w.hi, key) for ix in ixs]
        have = [p for p in per if p.n > 0]
        missing = sum(p.rows - p.n for p in per)
        points = sum(p.n for p in have)
        if not have:
            return Cell(None, 0, 0, missing)
        if len(have) == 1:
            return Cell(batches_spread(have[0].mean(), have[0].batch_means()), 1, points, missing)
        return Cell(seeds_spread([p.mean() for p in have]), len(have), points, missing)
