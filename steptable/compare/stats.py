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
- The interval of a mean: mean +- t(0.975, df) * sqrt(spread); none with fewer than 2 seeds / 2 values.
- The difference of an arm and the baseline: the difference of their means, its interval Welch's: spread = the sum
  of the two spreads, df by Welch-Satterthwaite (each side's spread and df as above). A zero spread gives the
  point itself as its interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise, repeat
from operator import sub
from statistics import NormalDist

from steptable.compare.tdist import t_ppf

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
    method: str  # "seeds" (between-seed spread), "batches" (batch means of one seed), "drift" (those correlated)

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
    """The sample variance (n - 1 in the denominator) of two or more values."""
    m = mean(xs)
    return math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def batch_means(xs: Sequence[float], batches: int = BATCHES) -> list[float]:
    """The means of ``min(batches, len(xs))`` consecutive batches of ``xs`` (numpy.array_split's sizes)."""
    cuts = batch_bounds(len(xs), batches)
    return [mean(xs[a:b]) for a, b in pairwise(cuts)]


def seeds_spread(means: Sequence[float]) -> Spread:
    """An arm of several seeds from their window means (one mean: no spread)."""
    n = len(means)
    if n < 2:
        return Spread(means[0] if n else math.nan, None, None, "seeds")
    return Spread(mean(means), sample_var(means) / n, float(n - 1), "seeds")


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
    return Spread(m, sample_var(bm) / len(bm), float(len(bm) - 1), "batches")


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
    if ss <= b * (1e-12 * max(map(abs, bm))) ** 2:
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


def welch(arm: Spread, base: Spread, level: float = LEVEL) -> tuple[float, float | None, float | None]:
    """(difference arm - base, its interval's low and high ends); the ends None when a side has no spread."""
    d = arm.mean - base.mean
    if arm.var is None or base.var is None or arm.df is None or base.df is None:
        return d, None, None
    var = arm.var + base.var
    if var == 0.0:
        return d, d, d
    df = var * var / (arm.var**2 / arm.df + base.var**2 / base.df)
    h = t_ppf(0.5 + level / 2.0, df) * math.sqrt(var)
    return d, d - h, d + h
