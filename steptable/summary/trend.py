"""Statistics of one column for the summary: first / last / min / max and the recent trend (tr%). Pure; the
definitions are in steptable.summary.report's module doc."""

from __future__ import annotations

import math
import sys
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise
from operator import eq, sub
from typing import Any, NamedTuple

from steptable.alerts.engine import cell_float

TREND_SHARE = 0.1
TREND_NOISE_MIN = 20  # values the noise of tr% is read from, at least (the last 2 windows when they hold more)
TREND_SE = 2.0  # a difference of the window locations within this many standard errors reads as no trend
TREND_TRIM = 0.1  # a window's location: the mean of its values without this share of them at each end
HOLD_RUNS_MIN = 5  # runs of equal values a series needs before it is read as held (updated every few steps)
REGIME_WINDOW = 20  # values either side of a regime change that its levels are read from
REGIME_NEAR = 3  # rows either side of where the window sums put a change that the full test is tried at
REGIME_SE = 5.0  # standard errors a regime change is beyond: a scan of every row makes 2-sigma changes by chance
_ROUNDING = 1e-9  # a noiseless series' standard error, relative to its scale (float rounding of equal levels)


@dataclass
class ColStats:
    """Raw statistics of one column; ``present`` counts finite numeric values, ``logged`` those and inf / logged NaN."""

    present: int = 0
    logged: int = 0
    first: float = math.nan
    last: float = math.nan
    lo: float = math.nan
    hi: float = math.nan
    trend: float | None = None  # percent, see the module doc
    first_text: str = ""  # first and last non-numeric text cells, shown when the column has no numbers
    last_text: str = ""
    moves: bool | None = None  # whether two values differ, where lo and hi were not worked out (column_glance)

    @property
    def varies(self) -> bool:
        return self.present >= 2 and (self.lo != self.hi if self.moves is None else self.moves)


def column_stats(values: Sequence[Any], nan_logged: bool = False, trend: bool = True) -> ColStats:
    """first / last / min / max / trend of one column (see the module doc); ``trend`` False: no trend (None), for a
    column that may not be shown (the trend is most of the cost)."""
    st = ColStats()
    if values and (type(values) is array or set(map(type, values)) == {float}):  # all numbers: a few C passes
        return _float_stats(st, values, nan_logged, trend)
    xs: list[float] = []
    last = math.nan  # the last number, inf included: a KL that went to inf must not read as its last finite value
    for v in values:
        x = v if type(v) is float else cell_float(v)
        if x is None:
            if isinstance(v, str) and v.strip():
                st.first_text = st.first_text or v
                st.last_text = v
        elif math.isfinite(x):
            xs.append(x)
            last = x
            st.logged += 1
        elif x == x or nan_logged:  # inf; a NaN only where it was logged (column() pads absent cells with NaN)
            last = x
            st.logged += 1
    st.last = last
    if xs:
        st.present = len(xs)
        st.first, st.lo, st.hi = xs[0], min(xs), max(xs)
        st.trend = trend_pct(xs) if trend else None
    return st


def column_glance(values: Sequence[Any], nan_logged: bool = False) -> ColStats:
    """What choosing the key columns reads of a column, without its min, max and trend: ``present``, ``logged``,
    ``first``, ``last``, the texts and whether it varies (``moves``; ``lo`` and ``hi`` are left NaN), as
    :func:`column_stats` has them. An ``array('d')`` of finite doubles is read in a few C passes over its bytes, with
    no float object a value; anything else as :func:`column_stats` reads it."""
    if type(values) is not array or not values or not _all_finite(values, raw := values.tobytes()):
        return column_stats(values, nan_logged, trend=False)
    n = len(values)
    st = ColStats(present=n, logged=n, first=values[0], last=values[-1])
    # (the first two doubles first: most columns differ there, and the whole test copies the column twice)
    if n == 1 or (raw[:8] == raw[8:16] and raw[8:] == raw[:-8]):  # every double the same bytes: one value
        st.moves = False
    elif values[0] != 0.0:  # other bytes are another value, except for 0.0 against -0.0
        st.moves = True
    else:
        st.moves = min(values) != max(values)
    return st


#: where a double's sign and top exponent bits are in its bytes
_TOP = 7 if sys.byteorder == "little" else 0


def _all_finite(values: array[float], raw: bytes | None = None) -> bool:
    """No NaN or inf in an ``array('d')`` (``raw``: its bytes, where the caller has them): no double whose top byte
    holds an exponent of all ones, looked for in C (finite doubles of magnitude 2**1009 or more share those top
    bytes: a column holding one takes the sum's test)."""
    top = (values.tobytes() if raw is None else raw)[_TOP::8]
    return (b"\x7f" not in top and b"\xff" not in top) or math.isfinite(sum(values))


def _float_stats(st: ColStats, values: Sequence[float], nan_logged: bool, trend: bool) -> ColStats:
    """:func:`column_stats` of floats only, as its loop reads them: every finite one is a number, inf is logged,
    NaN is logged only where ``nan_logged``."""
    finite = _all_finite(values) if type(values) is array else math.isfinite(sum(values))
    if finite:  # (a sum past the largest double reads as not finite: the filter then)
        xs = values  # (an array of doubles is read as it is: the trend reads slices of it)
        st.logged, st.last = len(xs), xs[-1]
    else:
        xs = [x for x in values if x - x == 0.0]  # (inf - inf and NaN - NaN are NaN)
        counted = values if nan_logged else [x for x in values if x == x]
        st.logged = len(counted)
        st.last = counted[-1] if counted else math.nan
    if xs:
        st.present = len(xs)
        st.first, st.lo, st.hi = xs[0], min(xs), max(xs)
        st.trend = trend_pct(xs) if trend else None
    return st


def trend_pct(xs: Sequence[float]) -> float | None:
    """The recent trend in percent, 0 within the noise (see the module doc). ``xs``: finite values."""
    n = len(xs)
    if n < 2:
        return None
    k = min(max(1, round(n * TREND_SHARE)), n // 2)
    # Only the recent part is read (the two windows, at least the last TREND_NOISE_MIN values, or TREND_NOISE_MIN
    # updates of a held series): O(k log k), and linear in the values a held series needs.
    hold, start = hold_length(xs, max(0, n - max(2 * k, TREND_NOISE_MIN)))
    recent = xs[start:]
    scale = max(map(abs, recent))
    if not scale > 0:
        return 0.0
    if not math.isfinite(scale):
        return None
    ys = [x / scale for x in recent]  # |y| <= 1: values near the float limit (1e308) cannot overflow below
    w = _windows(ys, k, hold)
    if abs(w.change) <= _t_quantile(TREND_SE, w.dof) * w.se * math.sqrt(2):
        return 0.0
    mags = sorted(map(abs, recent))  # (only for a trend beyond the noise: the median |x|)
    return 100 * w.change / max(abs(w.prev), mags[len(mags) // 2] / scale / 4, w.noise)


class Windows(NamedTuple):
    """Two adjacent windows of a series: the earlier one's location, the change to the later one's, the noise of one
    value, the standard error of a window's location and the degrees of freedom the noise was read with."""

    prev: float
    change: float
    noise: float
    se: float
    dof: float


def _windows(ys: Sequence[float], k: int, hold: int) -> Windows:
    """The last two windows of ``k`` values of ``ys`` compared; the noise is read from all of ``ys`` (a series held
    ``hold`` steps between updates by its updates)."""
    # Trimmed means, not medians: the median of values on a grid (a reward that is the mean of 32 binary outcomes)
    # moves by whole grid steps, far beyond its standard error for continuous values. Spikes are still cut
    # (windows of 10 values or more).
    cut = int(k * TREND_TRIM)
    (prev, ss0, sw0), (last, ss1, sw1) = _trimmed(ys[-2 * k : -k], cut), _trimmed(ys[-k:], cut)
    # The noise of one value: successive differences (the slope, their mean, taken out) have sd noise * sqrt(2),
    # so a trend is not read as noise. Every pair: one pair in s would be blind to a value logged every step but
    # updated every s steps (all such pairs read 0: no noise, any change a trend, or 0/0 on a mostly-zero metric).
    # A series held h steps (logged every step, updated every h: Otsu thresholds between refreshes, an eval score
    # carried forward) is read by its updates: the differences of successive runs' values, with a 0 for each update
    # to the same value (hidden in a run) so that there are (values / h - 1) at least, its slope taken out (a stepped
    # schedule is a slope, not noise); a window holds k / h updates (at least one). At h = 1 this is every pair.
    heads = ys if hold == 1 else _run_heads(ys)
    diffs = list(map(sub, heads[1:], heads[:-1]))
    count = max(len(diffs), len(ys) / hold - 1)
    slope = sum(diffs) / count
    noise = math.sqrt((_squares(diffs, slope) + (count - len(diffs)) * slope**2) / (2 * count))
    per_window = max(1.0, k / hold)
    # A trimmed mean of k values has a standard error of sd_w / ((1 - 2 cut / k) sqrt(k)), sd_w the sd of the values
    # winsorized (those cut set to the nearest kept one); on a grid as for continuous values. It is read as the noise
    # times the windows' sd_w / sd, so neither a slope nor a spike counts as noise.
    shape = math.sqrt((sw0 + sw1) / (ss0 + ss1)) if ss0 + ss1 > 0 else 1.0
    se = noise * shape / ((1 - 2 * cut / k) * math.sqrt(per_window))
    return Windows(prev, last - prev, noise, se, 2 * count / 3)


def regime_changes(xs: Sequence[float]) -> list[int]:
    """The positions in ``xs`` (finite values) where the series changes regime: moves to another level and stays
    there, as a stepped schedule does at each step, not as a ramp, a spike or the noise does.

    At position ``i`` the REGIME_WINDOW values before it and the REGIME_WINDOW from it on are compared as tr% compares
    its two windows (trimmed means, the noise of successive differences), less the change the series' typical slope
    (the median successive difference) makes over a window; a change is beyond REGIME_SE standard errors, the
    largest within a window either side and twice the change a window before and after it (a warm-up ramp is no
    change of regime). With windows of 20 values a step of 4 times one value's noise is found (of 3 times: about
    3 in 4), and plain noise reads no change in a million values. A scan over running sums finds the few candidates
    (beyond half that many standard errors of the whole series' noise); only they get the full test, where the sums
    put the change or a few rows either side: about linear time."""
    w = REGIME_WINDOW
    n = len(xs)
    if n < 2 * w:
        return []
    diffs = sorted(map(sub, xs[1:], xs[:-1]))
    slope = diffs[len(diffs) // 2]
    spread = sorted(abs(d - slope) for d in diffs)[len(diffs) // 2] * 1.4826 / math.sqrt(2)  # MAD: one value's sd
    size = max(map(abs, xs))
    if not math.isfinite(size) or not size > 0:
        return []
    floor = max(REGIME_SE / 2 * spread * math.sqrt(2 / w), _ROUNDING * size) * w  # in window sums
    sums = [0.0, *accumulate(xs)]
    # each i's change of the window sums, the slope taken out: a ramp and a constant both read 0
    shift = [abs(sums[i + w] - 2 * sums[i] + sums[i - w] - slope * w * w) for i in range(w, n - w + 1)]
    out: list[int] = []
    for start in range(0, len(shift), w):  # the largest of each stretch of w, where it is the largest around it too
        block = shift[start : start + w]
        top = max(block)
        j = start + block.index(top)
        if not top > floor or top < max(shift[max(j - w, 0) : j + w + 1]):
            continue
        # a step stands out from the change a window either side of it; a ramp's change is the same all along
        around = max(shift[j - w] if j >= w else 0.0, shift[j + w] if j + w < len(shift) else 0.0)
        if top < 2 * around:
            continue
        # the full test where the sums put it, else a few rows either side (noise moves the sums' peak a little)
        peak = j + w
        near = range(max(peak - REGIME_NEAR, w), min(peak + REGIME_NEAR, n - w) + 1)
        for i in sorted(near, key=lambda i: abs(i - peak)):
            if not (out and i - w < out[-1]) and _regime_margin(xs[i - w : i + w], w, slope, spread) > 1:
                out.append(i)  # (the window before it starts after the last change)
                break
    return out


def _regime_margin(span: Sequence[float], w: int, slope: float, spread: float) -> float:
    """How far beyond the regime test the change between the halves of ``span`` (w values each) is: above 1 it
    passes (``slope``: the series' typical successive difference; ``spread``: one value's noise over the series)."""
    scale = max(map(abs, span))
    if not scale > 0:
        return 0.0
    ys = [x / scale for x in span]
    got = _windows(ys, w, hold_length(ys, 0)[0])
    # the whole series' noise as a floor: 40 values now and then read a noise far below it by chance
    least = spread / scale / ((1 - 2 * int(w * TREND_TRIM) / w) * math.sqrt(w))
    limit = _t_quantile(REGIME_SE, got.dof) * max(got.se, least, _ROUNDING) * math.sqrt(2)
    return abs(got.change - slope / scale * w) / limit


def run_lengths(xs: Sequence[float]) -> list[int]:
    """The lengths of the runs of equal successive values of ``xs`` (non-empty)."""
    out: list[int] = []
    run = 1
    for a, b in pairwise(xs):
        if a == b:
            run += 1
        else:
            out.append(run)
            run = 1
    out.append(run)
    return out


def _run_heads(ys: Sequence[float]) -> list[float]:
    """The value of each run of equal successive values of ``ys``."""
    return [ys[0], *(b for a, b in pairwise(ys) if a != b)]


def _short_run(runs: list[int]) -> int:
    """The hold of a series with these run lengths: a run is the hold times the updates in it (an update to the same
    value extends it: a mostly-zero metric), so its lower quartile, not its median."""
    runs = sorted(runs)
    return runs[len(runs) // 4]


def hold_length(xs: Sequence[float], start: int) -> tuple[int, int]:
    """How many steps ``xs`` holds a value between updates, and where its noise is read from (``start`` or before).

    The hold is 1 unless the series is held: over the values from ``start`` (or from further back, until they hold
    HOLD_RUNS_MIN runs of equal values: one level then another is a change, not a hold), successive values are equal
    far more often (3 standard errors and one pair) than values drawn independently with the same counts would be
    (a reward on a grid, a 0/1 column, a mostly zero clip ratio are not held). A held series' noise is read from at
    least TREND_NOISE_MIN holds. Linear in the values read."""
    n = len(xs)
    lo = start
    equal = sum(map(eq, xs[lo + 1 :], xs[lo:-1]))  # successive equal pairs; the runs are the values less these
    while n - lo - equal < HOLD_RUNS_MIN and lo > 0:
        lo, was = max(0, 2 * lo - n), lo
        equal += sum(map(eq, xs[lo + 1 : was + 1], xs[lo:was]))
    m = n - lo
    if m - equal < HOLD_RUNS_MIN or equal <= 2:  # (chance >= 1 / m: two equal pairs are never more than it)
        return 1, start
    chance = sum(c * c for c in Counter(xs[lo:]).values()) / (m * m)
    if equal / (m - 1) <= chance + 3 * math.sqrt(chance * (1 - chance) / (m - 1)) + 1 / (m - 1):
        return 1, start
    hold = _short_run(run_lengths(xs[lo:]))
    wide = max(0, min(lo, n - TREND_NOISE_MIN * hold))
    if wide < lo:
        hold = _short_run(run_lengths(xs[wide:]))
    return (hold, min(start, wide)) if hold > 1 else (1, start)


def _trimmed(xs: Sequence[float], cut: int) -> tuple[float, float, float]:
    """The mean of ``xs`` without its ``cut`` lowest and ``cut`` highest values, and the sums of squared deviations
    of ``xs`` and of ``xs`` winsorized (those values set to the nearest kept one)."""
    s = sorted(xs)
    n = len(s)
    lo, hi = s[cut], s[n - 1 - cut]
    w = [lo] * cut + s[cut : n - cut] + [hi] * cut
    mean, mean_w = sum(s) / n, sum(w) / n
    return sum(s[cut : n - cut]) / (n - 2 * cut), _squares(s, mean), _squares(w, mean_w)


def _squares(xs: Sequence[float], mean: float) -> float:
    """The sum of the squared deviations of ``xs`` from ``mean``, each square one correctly rounded product (half
    the time of ``** 2``, which calls the C library's ``pow``)."""
    return sum([(x - mean) * (x - mean) for x in xs])


def _t_quantile(z: float, df: float) -> float:
    """The Student t quantile of the normal one ``z`` for an sd read with ``df`` degrees of freedom (Cornish-Fisher):
    an sd from successive differences has about 2/3 of their count, so a noise read from 20 values is no sharper
    than the window means it judges (with the normal quantile, a flat N(0, 1) of 100 values would read a trend 7% of
    the time, not 5%)."""
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
