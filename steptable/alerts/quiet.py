"""Quiet stretches of a stored history, fed in bulk: a block of rows that provably raises nothing and notes nothing
advances every detector's state over it at once (windows shifted, run counts added, the tail's scale resampled at
its rows) instead of one call per detector per row. Pure, stdlib only.

The proofs use bounds, never the rows' own statistics: the j-th smallest of k + 1 consecutive windows lies
between the j-th smallest of their union and the one k places above (a window's median over the next rows, a hold's
low median), or of the first of them and those k places either side (k values leave, k arrive). Every comparison a
detector makes is monotone in the bounded quantity and evaluated with the detector's own expression, so a block
passes only where each row would give the same outcome row by row; what a row sets exactly (the tail's scale every
10 rows, a reward's peak, a rise's sampled medians) is computed exactly, at those rows only. Anything else (an
episode going on, a non-finite or absent cell, a resume, a clock gap, a detector not known here) is left to the
row-by-row path: tests/alerts/test_quiet.py holds the two to the same alerts and the same state.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Callable, Sequence
from operator import eq, sub
from typing import Any

from steptable.alerts.detectors import Flat, GradSpike, KLBlowup, NonFinite, Saturation, Spike
from steptable.alerts.levels import EntropyCollapse, EntropyRise, GradRise, LevelDetector, RewardCollapse, Rise
from steptable.alerts.rules import Alert
from steptable.alerts.window import Detector, Tail, Window, robust_sigma, sorted_median, still

Commit = Callable[[], None]
#: rows a bound anchored on one exact window covers (more rows, looser bounds)
SEG = 10
#: rows a stored history is fed in bulk at a time, where they are quiet (the app's scanner feeds 250 at a time) ...
BLOCK = 250
#: ... and the fewest worth it (a shorter block, as the end of a history, is fed row by row)
MIN_ROWS = SEG
#: the rows a detector that is not quiet over a whole block tries in bulk at a time
PIECE = 50


def floats(cells: Sequence[Any]) -> list[float] | None:
    """``cells`` as the floats a detector reads (``cell_float`` of each), when every one is a finite number or a
    numeric string; None otherwise (an absent, non-finite or fraction cell: the row-by-row path reads those)."""
    try:
        xs = list(map(float, cells))
    except (TypeError, ValueError, OverflowError):
        return None
    total = sum(xs)
    if total - total != 0:  # an inf or a NaN (or a sum past float range: let the rows say)
        return None
    return xs


def unfit(cells: Sequence[Any], n: int) -> list[int]:
    """The rows of ``n`` whose cell (``cells``, fewer where a column ends early) :func:`floats` does not take."""
    if len(cells) == n and floats(cells) is not None:
        return []
    out = list(range(len(cells), n))
    for j, v in enumerate(cells):
        try:
            x = float(v)
        except (TypeError, ValueError, OverflowError):
            out.append(j)
            continue
        if x - x != 0:
            out.append(j)
    return out


def _negative_zero(values: list[float]) -> bool:
    # a sorted list and one kept by insort may order 0.0 and -0.0 differently: leave those to the rows
    return 0.0 in values and any(v == 0 and math.copysign(1.0, v) < 0 for v in values)


def advance(dets: Sequence[Detector], xs: list[float], steps: Sequence[int]) -> list[Commit | None]:
    """For each of ``dets`` (one column's detectors), how to advance it over ``xs`` (the column's values at
    ``steps``, every one finite) when none of those rows raises or notes anything in it; None for a detector where
    that cannot be shown (fed row by row). Nothing is changed until a returned commit runs."""
    memo: dict[str, Any] = {}  # (what the column's detectors share: its level detectors' windows)
    out: list[Commit | None] = []
    for d in dets:
        q = QUIET.get(type(d))
        # (an episode said and not re-armed: its clear rows are counted row by row)
        out.append(q(d, xs, steps, memo) if q is not None and d.latch.level is None else None)
    return out


def piecewise(d: Detector, xs: list[float], steps: Sequence[int]) -> list[tuple[int, Alert]]:
    """Feed ``d`` the rows (``xs`` at ``steps``, every one finite): in bulk PIECE rows at a time where those are
    quiet, else row by row; (row, alert) for each alert."""
    q = QUIET.get(type(d))
    out: list[tuple[int, Alert]] = []
    for a in range(0, len(xs), PIECE):
        b = min(a + PIECE, len(xs))
        commit = q(d, xs[a:b], steps[a:b], {}) if q is not None and d.latch.level is None else None
        if commit is not None:
            commit()
            continue
        out += [(i, found) for i in range(a, b) if (found := d.feed(steps[i], xs[i])) is not None]
    return out


def _nonfinite(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    def commit() -> None:
        if d.run == 0:
            d.since = steps[0]
        d.run += len(xs)
        d.step = steps[-1]

    return commit


def _saturation(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    if not max(xs) <= d.cfg.sat_level or d.cfg.sat_rows <= 0:
        return None

    def commit() -> None:
        d.run, d.step = 0, steps[-1]

    return commit


def _flat(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, Flat)
    rows = d.cfg.flat_rows
    same = list(map(eq, [d.value, *xs[:-1]], xs))  # each row equal to the one before
    run, since = d.run, d.since
    if True not in same:
        run, since = 1, steps[-1]
        if run >= rows > 0:
            return None
    else:
        for i, s in enumerate(same):
            run = run + 1 if s else 1
            if run == 1:
                since = steps[i]
            if run >= rows > 0:  # (it would ask the gate, and may fire)
                return None

    def commit() -> None:
        d.run, d.since, d.value, d.step = run, since, xs[-1], steps[-1]

    return commit


def _spaced(starts: list[int], n: int) -> list[int]:
    """``starts`` (sorted, from 0) with more put in where two are more than SEG rows apart (or the last from n)."""
    out: list[int] = []
    for a, b in zip(starts, [*starts[1:], n], strict=True):
        out.extend(range(a, b, SEG))
    return out


def _tail_scale(win: Window, tail: Tail, xs: list[float], gap: float, diffs: list[float] | None,
                cut: float | None = None) -> float | None:
    """The tail's scale after the rows ``xs`` are each tested against the window before them (those past ``cut``
    only, when given), when no tested row's excursion passes the tail's top (nothing said, nothing noted); None
    otherwise. ``gap``: the window's resolution before the rows; ``diffs``: |x - previous| of each row where the
    test moves the resolution (Spike), None where it does not."""
    n = win.maxlen or 0
    lo, hi = (n - 1) // 2, n // 2
    top, scale, age = tail.top, tail.scale, tail.age
    if age == 0 or not top > 0 or lo < SEG:
        return None
    vals = [*win, *xs]
    tested = range(len(xs)) if cut is None else [i for i, x in enumerate(xs) if x > cut]
    # the rows that resample the scale, each with the tested rows before it in the block
    refresh = {tested[p]: p for p in range((-age) % Tail.REFRESH, len(tested), Tail.REFRESH)}
    starts = _spaced(sorted({0, *refresh}), len(xs))
    seen = 0  # the rows of diffs taken into gap
    for a, b in zip(starts, [*starts[1:], len(xs)], strict=True):
        s = win.ordered if a == 0 else sorted(vals[a:a + n])
        if a in refresh:
            if diffs is not None:  # the resolution as row a's test reads it
                gap = min(gap, min(filter(None, diffs[seen:a]), default=math.inf))
                seen = a
            scale = Tail.smoothed(scale, robust_sigma(vals[a:a + n], s, sorted_median(s), gap, True), age + refresh[a])
        k = b - a - 1
        seg = xs[a:b] if cut is None else [x for x in xs[a:b] if x > cut]
        if seg and max(max(seg) - s[lo - k], s[hi + k] - min(seg)) / scale > top:
            return None
    return scale


def _spike(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, Spike)
    w, c = d.win, d.cfg
    n = w.maxlen or 0
    if len(w) < n or n < c.min_history or d.run < n or not w.gap < math.inf or _negative_zero([*w, *xs]):
        return None
    diffs = list(map(abs, map(sub, xs, [w[-1], *xs[:-1]])))
    scale = _tail_scale(w, d.tail, xs, w.gap, diffs)
    if scale is None:
        return None
    gap = min(w.gap, min(filter(None, diffs), default=math.inf))

    def commit() -> None:
        w.shift(xs)
        w.gap = gap
        d.tail.scale, d.tail.age, d.step = scale, d.tail.age + len(xs), steps[-1]

    return commit


def _kl(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, KLBlowup)
    w, c = d.win, d.cfg
    n = w.maxlen or 0
    if len(w) < n or n < c.min_history or (d.levels and not max(xs) <= c.kl_warn) or _negative_zero([*w, *xs]):
        return None
    scale, age = d.tail.scale, d.tail.age
    if max(xs) > c.kl_jump_min:  # rows tested (a median of 0 skips the test: every one > 0 here)
        if not min(w.ordered[0], *xs) > 0:
            return None
        every = min(xs) > c.kl_jump_min
        found = _tail_scale(w, d.tail, xs, w.gap, None, None if every else c.kl_jump_min)
        if found is None:
            return None
        scale, age = found, age + (len(xs) if every else sum(1 for x in xs if x > c.kl_jump_min))

    def commit() -> None:
        w.shift(xs)
        d.tail.scale, d.tail.age, d.step = scale, age, steps[-1]

    return commit


class _Levels:
    """A level detector's hold and window over a block: row i's hold and window, and bounds over a segment (one
    for the column's level detectors: their holds and windows hold the same values)."""

    def __init__(self, vals: list[float], nw: int, nh: int) -> None:
        self.vals, self.nw, self.nh = vals, nw, nh
        n = len(vals) - nw - nh
        # bounds are tried over the whole block, else over shorter spans (tighter: fewer values left out)
        self.tiers = [[(a, min(a + size, n)) for a in range(0, n, size)] for size in (n, 25, SEG)]
        self._sorted: dict[int, list[float]] = {}
        self._bounds: dict[tuple[int, int], tuple[float, float, float, float]] = {}
        self._wins: dict[tuple[int, int], list[float]] = {}

    def window(self, i: int) -> list[float]:
        """Row i's window (after its hold gave its oldest value to it)."""
        return self.vals[i + 1: i + 1 + self.nw]

    def sorted_window(self, i: int) -> list[float]:
        s = self._sorted.get(i)
        if s is None:
            s = self._sorted[i] = sorted(self.window(i))
        return s

    def bounds(self, a: int, b: int) -> tuple[float, float, float, float]:
        """Over rows [a, b): bounds of the window's median (low, high) and of the current level (the low median of
        the hold: low, high), each from the sorted union of those rows' windows (holds): the j-th smallest of a
        subset lies between the union's j-th and its (j + the values the subset leaves out)-th."""
        found = self._bounds.get((a, b))
        if found is None:
            wins = self._union(a, b)
            holds = sorted(self.vals[self.nw + a + 1: self.nw + self.nh + b])
            more, j = b - a - 1, (self.nh - 1) // 2
            found = self._bounds[(a, b)] = (wins[(self.nw - 1) // 2], wins[self.nw // 2 + more], holds[j],
                                            holds[j + more])
        return found

    def _union(self, a: int, b: int) -> list[float]:
        u = self._wins.get((a, b))
        if u is None:
            u = self._wins[(a, b)] = sorted(self.vals[a + 1: b + self.nw])
        return u

    def median_high(self, a: int, b: int) -> float:
        """The bound above the window's median over rows [a, b) (as :meth:`bounds`, alone)."""
        return self._union(a, b)[self.nw // 2 + b - a - 1]

    def holds(self, test: Callable[[int, int], bool], tier: int = 0) -> bool:
        """``test(a, b)`` over every span of the whole block, or else of one of the finer tiers of spans (from
        ``tier`` on)."""
        return any(all(test(a, b) for a, b in spans) for spans in self.tiers[tier:])

    def floor(self, d: LevelDetector, steps: Sequence[int], upto: int) -> tuple[float, int]:
        """The detector's floor (and the step it was set at) after rows [0, upto)."""
        left = self.vals[:upto]  # each row's oldest window value, as it leaves
        mn = min(left, default=math.inf)
        return (mn, steps[left.index(mn)]) if mn < d.floor else (d.floor, d.floor_at)


def _steady(d: LevelDetector, xs: list[float], memo: dict[str, Any]) -> _Levels | None:
    nw, nh = d.win.maxlen or 0, d.hold.maxlen or 0
    if len(d.hold) < nh or len(d.win) < nw or nw < d.cfg.min_history or nh != d.cfg.hold:
        return None
    vals = [*d.win, *d.hold, *xs]
    lv = memo.get("levels")
    if isinstance(lv, _Levels) and lv.nw == nw and lv.nh == nh and lv.vals == vals:
        return lv
    if _negative_zero(vals):
        return None
    lv = memo["levels"] = _Levels(vals, nw, nh)
    return lv


def _commit_levels(d: LevelDetector, lv: _Levels, steps: Sequence[int], floor: tuple[float, int]) -> None:
    n = len(lv.vals)
    d.win.shift(lv.vals[n - lv.nh - lv.nw: n - lv.nh])
    d.hold.shift(lv.vals[n - lv.nh:])
    d.floor, d.floor_at = floor
    d.step = steps[-1]


def _reward(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, RewardCollapse)
    lv = _steady(d, xs, memo)
    if lv is None:
        return None
    c, n = d.cfg, len(xs)
    k = c.reward_rel_drop  # (the share past which a drop is said: below it _drop returns nothing, near or not)
    if k < 0:
        return None
    peak, peak_sigma, peak_at, peak_floor = d.peak, d.peak_sigma, d.peak_at, d.peak_floor
    peaks = [peak] * n  # the peak each row reads
    for a, b in lv.tiers[1]:
        if lv.median_high(a, b) < peak:
            peaks[a:b] = [peak] * (b - a)
            continue
        ordered = list(lv.sorted_window(a))  # a median may pass the peak: each row's, exactly (kept sorted)
        for i in range(a, b):
            if i > a:
                del ordered[bisect_left(ordered, lv.vals[i])]
                insort(ordered, lv.vals[i + lv.nw])
            m = sorted_median(ordered)
            if m > peak or (m == peak and still(peak_sigma, m)):
                peak, peak_sigma, peak_at = m, robust_sigma(lv.window(i), ordered, m, d.win.gap, False), steps[i]
                peak_floor = lv.floor(d, steps, i + 1)[0]
            peaks[i] = peak

    def quiet(a: int, b: int) -> bool:
        # no drop from the window's median, nor from the peak, reaches the level's clear share (the cheap test)
        mlo, mhi, cur_lo, _ = lv.bounds(a, b)
        lo, hi = peaks[a], peaks[b - 1]
        return mlo > 0 and lo > 0 and mhi - cur_lo <= k * mlo and hi - cur_lo <= k * lo

    if not lv.holds(quiet, 1):  # (from the spans the peak was checked over: their windows are sorted)
        return None
    floor = lv.floor(d, steps, n)

    def commit() -> None:
        _commit_levels(d, lv, steps, floor)
        d.peak, d.peak_sigma, d.peak_at, d.peak_floor = peak, peak_sigma, peak_at, peak_floor

    return commit


def _entropy_collapse(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, EntropyCollapse)
    lv = _steady(d, xs, memo)
    if lv is None or d.early is None:
        return None
    c, early = d.cfg, d.early
    if c.entropy_frac_recent < 0:
        return None

    def quiet(a: int, b: int) -> bool:
        _, mhi, cur_lo, _ = lv.bounds(a, b)
        # (the shares past which the detector says something: inside them it returns nothing, near or not)
        return ((early <= 0 or not cur_lo < c.entropy_frac_early * early)
                and (mhi <= 0 or not cur_lo < c.entropy_frac_recent * mhi))

    if not lv.holds(quiet):
        return None
    floor = lv.floor(d, steps, len(xs))

    def commit() -> None:
        _commit_levels(d, lv, steps, floor)

    return commit


def _rise(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, Rise)
    lv = _steady(d, xs, memo)
    hold = d.cfg.hold
    if lv is None or (isinstance(d, EntropyRise) and d.early is None) or hold <= 0:
        return None
    # the rows that sample the window's median, and the lowest level each row reads
    samples = [(i, sorted_median(lv.sorted_window(i))) for i in range(len(xs)) if (d.run + i) % hold == 0]
    bases, base = [], d.base
    for i, m in samples:
        base = min(base, m)
        bases.append((i, base))
    thr = d.factor()  # (below it the detector returns nothing, near or not)
    if thr < 0:
        return None

    def quiet(a: int, b: int) -> bool:
        low = min([d.base, *(v for i, v in bases if i < b)])  # (the lowest any row of them reads)
        return low > 0 and lv.bounds(a, b)[3] <= thr * low

    if not lv.holds(quiet):
        return None
    floor = lv.floor(d, steps, len(xs))

    def commit() -> None:
        for i, m in samples:
            d.step = steps[i]

            def sigma(i: int = i, m: float = m) -> float:
                return robust_sigma(lv.window(i), lv.sorted_window(i), m, d.win.gap, False)

            d.sample(m, sigma)
        d.run += len(xs)
        _commit_levels(d, lv, steps, floor)

    return commit


QUIET: dict[type[Detector], Callable[[Detector, list[float], Sequence[int], dict[str, Any]], Commit | None]] = {
    NonFinite: _nonfinite,
    Saturation: _saturation,
    Flat: _flat,
    Spike: _spike,
    GradSpike: _spike,
    KLBlowup: _kl,
    RewardCollapse: _reward,
    EntropyCollapse: _entropy_collapse,
    GradRise: _rise,
    EntropyRise: _rise,
}
