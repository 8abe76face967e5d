"""The statistics of a comparison: a window's mean, its 95% interval, the difference of two arms. Pure, stdlib.

Definitions (what the tests recompute with numpy/scipy):

- A run's window mean: the mean of its finite values in the window (NaN, inf and absent cells left out).
- An arm of n >= 2 seeds (runs): its mean is the mean of the seeds' window means; its spread is their sample
  variance over n (the squared standard error) with n - 1 degrees of freedom (Student t).
- An arm of one seed: its mean is the window mean; its spread comes from batch means: the window's finite values,
  in x order, cut into B = min(10, count) consecutive batches of as equal sizes as possible (the first ones one
  longer, as ``numpy.array_split`` cuts), the variance of the B batch means over B, with B - 1 degrees of freedom.
  Batches, not single values, so that autocorrelated noise (a training curve) does not read as independent draws.
  That holds only where the batch means are independent: where their lag-1 autocorrelation is beyond chance (one
  sided, at :data:`DRIFT_LEVEL`, against its distribution for independent means), the window drifts over a longer
  time than its batches and the spread is not estimable from it (no interval, no verdict). Without that check a
  curve that wanders as AR(1) with 0.9 (0.99) was called better or worse in 44% (85%) of comparisons of two runs of
  one process; with it, 2.5-7.8% over 400 such pairs at each of AR(1) 0, .5, .9, .99 (tests/compare/test_stats.py).
- An arm of one seed beside arms of several (of one metric): its spread is the seed-to-seed variance of a window
  mean pooled over the arms of two seeds or more (sum of (n - 1) s^2 over sum of (n - 1), that many degrees of
  freedom): one run's window mean is as far from its arm's mean as another arm's seeds are from theirs (the arms'
  seeds are taken as alike in spread). Batch means measure noise within one run only: with them, arms that
  differ by nothing but their seeds were called apart in 12-24% of 1000 comparisons (3 or 5 seeds against 1, a
  seed's level spread 1/10-1/4 of the within-run noise); pooled, in 4.5-5.1% (tests/compare/test_core.py). Where
  every arm has one seed, batch means it is: a difference beyond them is one between these runs, and the seeds'
  spread is not known.
- The interval of a mean: mean +- t(0.975, df) * sqrt(spread); none with fewer than 2 seeds / 2 values.
- The difference of an arm and the baseline where one of them is one seed beside arms of several: the pooled t
  (the seeds taken as alike in spread, as that seed's interval takes them): spread = the pooled variance times
  (1/n + 1/n'), its degrees of freedom the pool's. (Welch's here would count the pool's estimate as independent of
  the arm of several it came from, and called 10.5% of 1 seed against 3 apart at the 5% level.)
- The difference of an arm and the baseline: the difference of their means, its interval Welch's: spread = the sum
  of the two spreads, df by Welch-Satterthwaite (each side's spread and df as above). A zero spread gives the
  point itself as its interval.
- The p-value of a difference: two-sided, from the same t statistic (difference over its standard error) and
  degrees of freedom as its interval, so that it is below 5% exactly where the 95% interval excludes 0. Which arms
  are called better or worse out of several: :mod:`steptable.compare.family`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise, repeat
from operator import sub
from statistics import NormalDist

from steptable.compare.tdist import t_ppf, t_sf

LEVEL = 0.95
BATCHES = 10
#: one-sided level of the test that one seed's batch means drift (are serially correlated)
DRIFT_LEVEL = 0.05


@dataclass(frozen=True)
class Spread:
    """A mean with its squared standard error and that error's degrees of freedom (None: not estimable)."""

    mean: float
    var: float | None  # squared standard error of ``mean``
    df: float | None
    #: "seeds" (between-seed spread), "pooled" (one seed, the other arms' seed spread), "batches" (batch means of
    #: one seed), "drift" (those correlated)
    method: str

    def interval(self, level: float = LEVEL) -> tuple[float | None, float | None]:
        if self.var is None or self.df is None:
            return None, None
        if self.var == 0.0:
            return self.mean, self.mean
        h = t_ppf(0.5 + level / 2.0, self.df) * math.sqrt(self.var)
        return self.mean - h, self.mean + h


def mean(xs: Sequence[float]) -> float:
    """The mean of one or more values, taken about the first (equal values give that value, not a neighbour of it:
    ``fsum([c] * n) / n`` differs from ``c`` in its last bit for about one ``n`` in eight)."""
    x0 = xs[0]
    try:
        m = x0 + math.fsum(map(sub, xs, repeat(x0))) / len(xs)
        return m if math.isfinite(m) else math.fsum(xs) / len(xs)
    except (OverflowError, ValueError):  # (values near the largest float: their differences or sums overflow)
        return sum(x / len(xs) for x in xs)


def sample_var(xs: Sequence[float]) -> float:
    """The sample variance (n - 1 in the denominator) of two or more values; inf where it is past the largest
    float (values of 1e200: a diverged metric is shown, not a crash)."""
    m = mean(xs)
    return math.fsum((x - m) * (x - m) for x in xs) / (len(xs) - 1)  # (``**`` raises past 1e154; ``*`` gives inf)


def batch_means(xs: Sequence[float], batches: int = BATCHES) -> list[float]:
    """The means of ``min(batches, len(xs))`` consecutive batches of ``xs`` (numpy.array_split's sizes)."""
    cuts = batch_bounds(len(xs), batches)
    return [mean(xs[a:b]) for a, b in pairwise(cuts)]


def seeds_spread(means: Sequence[float]) -> Spread:
    """An arm of several seeds from their window means (one mean: no spread)."""
    n = len(means)
    if n < 2:
        return Spread(means[0] if n else math.nan, None, None, "seeds")
    var = sample_var(means) / n
    return Spread(mean(means), var if math.isfinite(var) else None, float(n - 1), "seeds")


def pooled_seeds(arms: Sequence[Spread]) -> tuple[float, float] | None:
    """(the seed-to-seed variance of a window mean, its degrees of freedom) pooled over ``arms``' spreads of two
    seeds or more ("seeds": ``var`` is s^2 / n, ``df`` n - 1); None where there is none."""
    num = den = 0.0
    for sp in arms:
        if sp.method == "seeds" and sp.var is not None and sp.df is not None:
            num += sp.var * (sp.df + 1.0) * sp.df
            den += sp.df
    return (num / den, den) if den and math.isfinite(num) else None


def one_of_seeds(m: float, pooled: tuple[float, float]) -> Spread:
    """An arm of one seed, of window mean ``m``, spread as one seed of arms whose seed-to-seed variance is
    ``pooled`` (:func:`pooled_seeds`)."""
    return Spread(m, pooled[0], pooled[1], "pooled")


def single_spread(values: Sequence[float], batches: int = BATCHES) -> Spread:
    """An arm of one seed from its window's finite values in x order (batch means)."""
    if not values:
        return Spread(math.nan, None, None, "batches")
    return batches_spread(mean(values), batch_means(values, batches))


def batches_spread(m: float, bm: Sequence[float]) -> Spread:
    """An arm of one seed from its window mean and the means of its window's batches (none estimable where those
    drift: :func:`drifts`)."""
    if len(bm) < 2:
        return Spread(m, None, None, "batches")
    if drifts(bm):
        return Spread(m, None, None, "drift")
    var = sample_var(bm) / len(bm)
    return Spread(m, var if math.isfinite(var) else None, float(len(bm) - 1), "batches")


def drifts(bm: Sequence[float], level: float = DRIFT_LEVEL) -> bool:
    """Are the batch means ``bm`` serially correlated beyond chance? Their lag-1 autocorrelation r against its
    distribution for independent means (mean -1/B, variance (B-2)^2 / (B^2 (B-1)), taken as normal), one-sided at
    ``level``. Fewer than 3 means, or all equal (to rounding: a live sum's means of one constant): no."""
    b = len(bm)
    if b < 3:
        return False
    m = mean(bm)
    d = [x - m for x in bm]
    ss = math.fsum(x * x for x in d)
    tiny = 1e-12 * max(map(abs, bm))
    if ss <= b * tiny * tiny or not math.isfinite(ss):
        return False
    r = math.fsum(x * y for x, y in pairwise(d)) / ss
    z = (r + 1.0 / b) / math.sqrt((b - 2) ** 2 / (b * b * (b - 1)))
    return z > NormalDist().inv_cdf(1.0 - level)


def batch_bounds(n: int, batches: int = BATCHES) -> list[int]:
    """Where ``batch_means`` cuts ``n`` values: the ``min(batches, n) + 1`` boundaries, 0 first and ``n`` last."""
    b = min(batches, n)
    if b == 0:
        return [0]
    size, extra = divmod(n, b)
    out = [0]
    for j in range(b):
        out.append(out[-1] + size + (j < extra))
    return out


@dataclass(frozen=True)
class Difference:
    """An arm's mean less the baseline's: the value, its squared standard error and that error's degrees of freedom
    (``var``/``df`` None: a side has no spread, so no interval and no test)."""

    d: float
    var: float | None
    df: float | None

    def interval(self, level: float = LEVEL) -> tuple[float, float | None, float | None]:
        """(the difference, its interval's low and high ends); the ends None without a spread, the point itself
        with a zero one."""
        if self.var is None or self.df is None:
            return self.d, None, None
        if self.var == 0.0:
            return self.d, self.d, self.d
        h = t_ppf(0.5 + level / 2.0, self.df) * math.sqrt(self.var)
        return self.d, self.d - h, self.d + h

    def p_value(self) -> float | None:
        """The two-sided p-value of a zero difference, from the t statistic and degrees of freedom the interval is
        made of (below ``1 - level`` exactly where the interval excludes 0, to rounding); None without a spread. A
        zero spread: 0 for a difference, 1 for none."""
        if self.var is None or self.df is None:
            return None
        if self.var == 0.0:
            return 1.0 if self.d == 0.0 else 0.0
        p = 2.0 * t_sf(abs(self.d) / math.sqrt(self.var), self.df)
        return min(1.0, p) if math.isfinite(p) else 1.0


def pooled_diff(arm: Spread, n_arm: int, base: Spread, n_base: int, pooled: tuple[float, float]) -> Difference:
    """The difference arm - base of arms of ``n_arm`` and ``n_base`` seeds whose seed-to-seed variance is
    ``pooled`` (:func:`pooled_seeds`)."""
    return Difference(arm.mean - base.mean, pooled[0] * (1.0 / n_arm + 1.0 / n_base), pooled[1])


def welch_diff(arm: Spread, base: Spread) -> Difference:
    """The difference arm - base, its spread the sum of theirs, df by Welch-Satterthwaite (no spread where a side
    has none)."""
    d = arm.mean - base.mean
    if arm.var is None or base.var is None or arm.df is None or base.df is None:
        return Difference(d, None, None)
    var = arm.var + base.var
    if var == 0.0:
        return Difference(d, 0.0, 1.0)
    wa, wb = arm.var / var, base.var / var  # (as shares of the sum: no square of a large spread overflows)
    return Difference(d, var, 1.0 / (wa * wa / arm.df + wb * wb / base.df))


def welch(arm: Spread, base: Spread, level: float = LEVEL) -> tuple[float, float | None, float | None]:
    """(difference arm - base, its interval's low and high ends); the ends None when a side has no spread."""
    return welch_diff(arm, base).interval(level)
