"""The level detectors (reward and entropy collapses, grad-norm and entropy rises) over a quiet block, for
steptable.alerts.quiet: a column's hold and window over the block, bounds on its median and on its current level over
spans of it, and each detector's test against them. Pure, stdlib only."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Collection, Sequence
from functools import partial
from typing import Any

from steptable.alerts.levels import EntropyCollapse, EntropyRise, LevelDetector, RewardCollapse, Rise
from steptable.alerts.window import MAD_SIGMA, Detector, robust_sigma, sorted_median, still

#: how a detector is advanced over a block, once every detector's test has passed
Commit = Callable[[], None]
#: rows a bound anchored on one exact window covers (more rows, looser bounds)
SEG = 10


def negative_zero(values: Collection[float]) -> bool:
    """A -0.0 among ``values``: a sorted list and one kept by insort may order 0.0 and -0.0 differently, so
    those are left to the rows."""
    return 0.0 in values and any(v == 0 and math.copysign(1.0, v) < 0 for v in values)


class _Levels:
    """A level detector's hold and window over a block: row i's hold and window, and bounds over a segment (one
    for the column's level detectors: their holds and windows hold the same values)."""

    def __init__(self, vals: list[float], nw: int, nh: int, hints: dict[str, int] | None = None) -> None:
        self.vals, self.nw, self.nh = vals, nw, nh
        # the tier of spans each detector's test last held over (tried first: the outcome is the same in any order)
        self.hints = {} if hints is None else hints
        n = len(vals) - nw - nh
        # bounds are tried over the whole block, else over shorter spans (tighter: fewer values left out)
        self.tiers = [[(a, min(a + size, n)) for a in range(0, n, size)] for size in (n, 25, SEG)]
        self._sorted: dict[int, list[float]] = {}
        self._bounds: dict[tuple[int, int], tuple[float, float, float, float]] = {}
        self._wins: dict[tuple[int, int], list[float]] = {}
        self._extremes: dict[tuple[int, int], tuple[float, float, float, float]] = {}
        self._least: dict[int, tuple[float, int]] = {}

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

    def sigma_low(self, a: int, b: int, mlo: float, mhi: float) -> float:
        """A bound below the window's robust sigma (``Window.sigma`` without ``spread``) over rows [a, b), where the
        window's median lies in [mlo, mhi]; 0 where none is found. Each value's distance from its window's median is
        at least its distance from [mlo, mhi], so the MAD is at least the middle such distance of the union of the
        windows (a subset's k-th smallest is at least the union's); above 0, the MAD is the sigma's own (not the
        mean deviation of a window half on one value), and the sigma at least MAD_SIGMA times it."""
        u = self._union(a, b)
        i, j = bisect_left(u, mlo), bisect_right(u, mhi)
        r = (self.nw - 1) // 2 - (j - i)  # (the values between the bounds: each may sit on its median)
        if r < 0:
            return 0.0
        below = [mlo - x for x in u[:i]]
        below.reverse()
        return MAD_SIGMA * sorted(below + [x - mhi for x in u[j:]])[r]

    def median_high(self, a: int, b: int) -> float:
        """The bound above the window's median over rows [a, b) (as :meth:`bounds`, alone)."""
        return self._union(a, b)[self.nw // 2 + b - a - 1]

    def extremes(self, a: int, b: int) -> tuple[float, float, float, float]:
        """Looser bounds than :meth:`bounds`, in the same order, found without a sort: the least and the greatest
        value of the union of the windows, and of the holds (a median, a low median, lies between them)."""
        found = self._extremes.get((a, b))
        if found is None:
            v, nw = self.vals, self.nw
            # the windows' values are head + mid, the holds' mid + tail: each value read once
            head, mid, tail = v[a + 1: a + 1 + nw], v[a + 1 + nw: b + nw], v[b + nw: b + nw + self.nh]
            lm, hm = min(mid, default=math.inf), max(mid, default=-math.inf)
            found = self._extremes[(a, b)] = (min(min(head), lm), max(max(head), hm), min(lm, min(tail)),
                                              max(hm, max(tail)))
        return found

    def holds(self, test: Callable[[int, int, tuple[float, float, float, float]], bool], kind: str,
              tier: int = 0) -> bool:
        """``test(a, b, bounds)`` over every span of the whole block (first with :meth:`extremes`, which most
        quiet blocks pass, then :meth:`bounds`), or else of one of the finer tiers of spans (from ``tier`` on); the
        tier ``kind``'s test last held over is tried first (a column's noise mostly passes at one tier)."""
        n = len(self.vals) - self.nw - self.nh
        if tier == 0 and test(0, n, self.extremes(0, n)):
            return True
        last = self.hints.get(kind)
        for t in sorted(range(tier, len(self.tiers)), key=lambda t: t != last):  # (``last`` first, the rest in order)
            if all(test(a, b, self.bounds(a, b)) for a, b in self.tiers[t]):
                self.hints[kind] = t
                return True
        return False

    def floor(self, d: LevelDetector, steps: Sequence[int], upto: int) -> tuple[float, int]:
        """The detector's floor (and the step it was set at) after rows [0, upto)."""
        least = self._least.get(upto)
        if least is None:  # (the column's level detectors read the same rows)
            left = self.vals[:upto]  # each row's oldest window value, as it leaves
            mn = min(left, default=math.inf)
            least = self._least[upto] = (mn, left.index(mn) if left else 0)
        mn, at = least
        return (mn, steps[at]) if mn < d.floor else (d.floor, d.floor_at)


def _steady(d: LevelDetector, xs: list[float], memo: dict[str, Any]) -> _Levels | None:
    nw, nh = d.win.maxlen or 0, d.hold.maxlen or 0
    if len(d.hold) < nh or len(d.win) < nw or nw < d.cfg.min_history or nh != d.cfg.hold:
        return None
    vals = [*d.win, *d.hold, *xs]
    lv = memo.get("levels")
    if isinstance(lv, _Levels) and lv.nw == nw and lv.nh == nh and lv.vals == vals:
        return lv
    if negative_zero(vals):
        return None
    lv = memo["levels"] = _Levels(vals, nw, nh, memo.get("hints"))
    return lv


def _commit_levels(d: LevelDetector, lv: _Levels, steps: Sequence[int], floor: tuple[float, int]) -> None:
    n = len(lv.vals)
    d.win.shift(lv.vals[n - lv.nh - lv.nw: n - lv.nh])
    d.hold.shift(lv.vals[n - lv.nh:])
    d.floor, d.floor_at = floor
    d.step = steps[-1]


def reward(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
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
        for a1 in range(a, b, SEG):  # (shorter spans, tighter bounds: a climbing reward's near its peak)
            b1 = min(a1 + SEG, b)
            if b - a > SEG and lv.median_high(a1, b1) < peak:
                peaks[a1:b1] = [peak] * (b1 - a1)
                continue
            ordered = list(lv.sorted_window(a1))  # a median may pass the peak: each row's, exactly (kept sorted)
            for i in range(a1, b1):
                if i > a1:
                    del ordered[bisect_left(ordered, lv.vals[i])]
                    insort(ordered, lv.vals[i + lv.nw])
                m = sorted_median(ordered)
                if m > peak or (m == peak and still(peak_sigma, m)):
                    peak, peak_sigma, peak_at = m, robust_sigma(lv.window(i), ordered, m, d.win.gap, False), steps[i]
                    peak_floor = lv.floor(d, steps, i + 1)[0]
                peaks[i] = peak

    def quiet(a: int, b: int, bounds: tuple[float, float, float, float]) -> bool:
        # no drop from the window's median, nor from the peak, reaches the level's clear share (the cheap test)
        mlo, mhi, cur_lo, _ = bounds
        lo, hi = peaks[a], peaks[b - 1]
        return mlo > 0 and lo > 0 and mhi - cur_lo <= k * mlo and hi - cur_lo <= k * lo

    if not lv.holds(quiet, d.kind, 1):  # (from the spans the peak was checked over: their windows are sorted)
        return None
    floor = lv.floor(d, steps, n)

    def commit() -> None:
        _commit_levels(d, lv, steps, floor)
        d.peak, d.peak_sigma, d.peak_at, d.peak_floor = peak, peak_sigma, peak_at, peak_floor

    return commit


def entropy_collapse(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, EntropyCollapse)
    lv = _steady(d, xs, memo)
    if lv is None or d.early is None:
        return None
    c, early = d.cfg, d.early
    if c.entropy_frac_recent < 0:
        return None

    def quiet(a: int, b: int, bounds: tuple[float, float, float, float]) -> bool:
        mlo, mhi, cur_lo, _ = bounds
        # (the shares past which the detector says something: inside them it returns nothing, near or not)
        if not (early <= 0 or not cur_lo < c.entropy_frac_early * early):
            return False
        if mhi <= 0 or not cur_lo < c.entropy_frac_recent * mhi:
            return True
        # ... or a drop within the window's noise (uniform noise's level dips under half its median every few rows)
        return c.drop_sigma >= 0 and (sig := lv.sigma_low(a, b, mlo, mhi)) > 0 and (mhi - cur_lo) / sig <= c.drop_sigma

    if not lv.holds(quiet, d.kind):
        return None
    floor = lv.floor(d, steps, len(xs))

    def commit() -> None:
        _commit_levels(d, lv, steps, floor)

    return commit


def rise(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, Rise)
    lv = _steady(d, xs, memo)
    hold, c = d.cfg.hold, d.cfg
    if lv is None or (isinstance(d, EntropyRise) and d.early is None) or hold <= 0:
        return None
    thr, drop = d.factor(), c.drop_sigma  # (below them the detector returns nothing, near or not)
    if thr < 0 or drop < 0:
        return None
    # the rows that sample the window's median, and each (row, lowest level, its sigma) as a sample lowers it
    vals, nw = lv.vals, lv.nw  # (row i's window: vals[i + 1: i + 1 + nw])
    samples = [(i, sorted_median(sorted(vals[i + 1: i + 1 + nw]))) for i in range((-d.run) % hold, len(xs), hold)]
    lows, base = [(0, d.base, d.base_sigma)], d.base
    for i, m in samples:
        if m < base:
            base = m
            lows.append((i, m, robust_sigma(lv.window(i), lv.sorted_window(i), m, d.win.gap, False)))
    sigmas = {i: sigma for i, _, sigma in lows[1:]}
    early = d.early if isinstance(d, EntropyRise) else None

    def quiet(a: int, b: int, bounds: tuple[float, float, float, float]) -> bool:
        cur = bounds[3]  # (the highest level any row of them reads)
        if early is not None and (not early > 0 or cur <= c.entropy_rise_early * early):
            return True  # (EntropyRise's ``beyond``: no higher than that share of the early level is no rise)
        # against each lowest level those rows read: not a multiple of it, or within its noise
        return all(not low > 0 or cur <= thr * low or cur - low <= drop * sigma
                   for i, low, sigma in lows if i < b and not (i <= a and _later(lows, i, a)))

    if not lv.holds(quiet, d.kind):
        return None
    floor = lv.floor(d, steps, len(xs))

    def commit() -> None:
        for i, m in samples:
            d.step = steps[i]
            d.sample(m, partial(sigmas.__getitem__, i))  # (called only where m lowers the base)
        d.run += len(xs)
        _commit_levels(d, lv, steps, floor)

    return commit


def _later(lows: list[tuple[int, float, float]], i: int, a: int) -> bool:
    """A later entry of ``lows`` than the one at row ``i`` is in force by row ``a``."""
    return any(i < j <= a for j, _, _ in lows)
