"""A comparison's statistics (steptable.compare.stats) on numbers worked by hand: numpy.array_split's batches, the
seeds' and the batches' spreads, a mean's interval, Welch's difference; and how often one seed against one seed
calls a difference where there is none."""

from __future__ import annotations

import math
import random

import pytest

from steptable.compare.stats import (
    Spread,
    batch_bounds,
    batch_means,
    drifts,
    mean,
    seeds_spread,
    single_spread,
    welch,
)

T_975_DF2 = 4.302652729911275  # Student t, 97.5th percentile, 2 degrees of freedom


def test_batches_as_array_split_cuts_them() -> None:
    assert batch_bounds(23) == [0, 3, 6, 9, 11, 13, 15, 17, 19, 21, 23]  # the first 3 batches one longer
    assert batch_bounds(3) == [0, 1, 2, 3] and batch_bounds(0) == [0]
    assert batch_means([1.0, 2.0, 3.0, 4.0, 5.0], 2) == [2.0, 4.5]


def test_spreads_and_intervals() -> None:
    s = seeds_spread([1.0, 2.0, 3.0])
    assert s.mean == 2.0 and s.var == pytest.approx(1 / 3) and s.df == 2.0 and s.method == "seeds"  # sample var / n
    lo, hi = s.interval()
    assert lo == pytest.approx(2.0 - T_975_DF2 * math.sqrt(1 / 3))
    assert hi == pytest.approx(2.0 + T_975_DF2 * math.sqrt(1 / 3))
    assert seeds_spread([2.0]) == Spread(2.0, None, None, "seeds") and seeds_spread([2.0]).interval() == (None, None)
    assert single_spread([1.0, 3.0]) == Spread(2.0, 1.0, 1.0, "batches")  # two batches of one value
    empty = single_spread([])
    assert math.isnan(empty.mean) and empty.var is None
    assert Spread(5.0, 0.0, 3.0, "seeds").interval() == (5.0, 5.0)  # no spread: the point itself


@pytest.mark.parametrize("c", [0.0123, 0.7, 1e-6, 1 / 3, 2.5e-5, -0.04])
def test_equal_values_have_that_mean_and_no_spread(c: float) -> None:
    for n in range(1, 200):  # (fsum([c] * n) / n misses c in its last bit for about one n in eight)
        assert mean([c] * n) == c
        assert batch_means([c] * n) == [c] * min(n, 10)
        if n > 1:
            assert single_spread([c] * n).var == 0.0 and seeds_spread([c] * n) == Spread(c, 0.0, n - 1.0, "seeds")
    assert welch(single_spread([c] * 13), single_spread([c] * 12)) == (0.0, 0.0, 0.0)


def test_means_near_the_largest_float_do_not_overflow() -> None:
    assert mean([1e308, -1e308, 1e308, -1e308]) == 0.0  # (differences from the first value overflow)
    assert mean([1e308, 1e308]) == 1e308 and mean([-1e308, -1e308, -1e308]) == -1e308


def test_welch_difference() -> None:
    s = seeds_spread([1.0, 2.0, 3.0])
    d, lo, hi = welch(s, s)
    # the summed spread 2/3; df by Welch-Satterthwaite: (2/3)^2 / (2 * (1/3)^2 / 2) = 4
    half = 2.7764451051977987 * math.sqrt(2 / 3)  # Student t, 97.5th percentile, 4 degrees of freedom
    assert d == 0.0 and hi == pytest.approx(half) and lo == pytest.approx(-half)
    assert welch(s, seeds_spread([2.0])) == (0.0, None, None)  # a side without spread: no interval
    assert welch(Spread(2.0, 0.0, 1.0, "seeds"), Spread(1.0, 0.0, 1.0, "seeds")) == (1.0, 1.0, 1.0)


def test_batch_means_that_drift_are_told_from_independent_ones() -> None:
    """Means that climb (a window that wanders one way) drift; ones that alternate or scatter do not; fewer than 3,
    or all equal (to a live sum's rounding), cannot say."""
    assert drifts([float(i) for i in range(10)])
    assert drifts([0.0, 0.1, 0.3, 0.2, 0.5, 0.6, 1.1, 1.0, 1.4, 1.3])
    assert not drifts([1.0, -1.0] * 5)
    assert not drifts([0.3, -1.2, 0.8, 0.1, -0.4, 1.5, -0.9, 0.2, -0.1, 0.6])
    assert not drifts([1.0, 2.0]) and not drifts([110.0] * 10)
    assert not drifts([110.0, 110.00000000000001, 110.0, 109.99999999999999] * 2 + [110.0, 110.0])
    s = single_spread([float(i) for i in range(30)])  # a ramp: no interval from its window
    assert s.method == "drift" and s.interval() == (None, None) and welch(s, s) == (0.0, None, None)


def _wander(rng: random.Random, phi: float, steps: int = 300) -> list[float]:
    """AR(1) noise of variance 1 (a training curve's slow wander where phi is near 1)."""
    x = [rng.gauss(0.0, 1.0)]
    for _ in range(steps - 1):
        x.append(phi * x[-1] + rng.gauss(0.0, math.sqrt(1.0 - phi * phi)))
    return x


@pytest.mark.parametrize("phi", [0.0, 0.9, 0.99])
def test_one_seed_against_one_seed_of_the_same_process_rarely_differs(phi: float) -> None:
    """Two runs of one process (no difference), their last 30 steps compared as compare's default window does: the
    95% interval of the difference excludes 0 in at most 10% of 400 pairs. Without the drift check 10 batch means of
    3 steps read a wander as precision: 44% (phi .9) and 85% (phi .99) of such pairs were called better or worse."""
    rng = random.Random(int(phi * 100))
    told = 0
    for _ in range(400):
        a, b = (single_spread(_wander(rng, phi)[-30:]) for _ in range(2))
        _, lo, hi = welch(a, b)
        told += lo is not None and hi is not None and not lo <= 0.0 <= hi
    assert told / 400 <= 0.10, told


def test_spreads_of_values_near_the_largest_float_are_not_estimable_not_an_error() -> None:
    """Seeds (or one seed's batches) at 1e200: the squares of their deviations are past the largest float, so no
    interval, and a difference from them has none either; a spread of 1e300 squared in Welch's degrees of freedom
    does not overflow (each raised OverflowError: compare, summary and the watch's compare view exited)."""
    seeds = seeds_spread([1.0, 1e200, -1e200])
    assert seeds.var is None and seeds.interval() == (None, None)
    one = single_spread([1e200 * (-1) ** i for i in range(40)])
    assert one.var is None or math.isfinite(one.var)
    assert not drifts([1e300, -1e300, 1e300, 5.0])
    big = Spread(1.0, 1e300, 2.0, "seeds")
    d, lo, hi = welch(big, Spread(0.0, 1e299, 3.0, "seeds"))
    assert d == 1.0 and lo is not None and hi is not None and math.isfinite(lo) and lo < 0 < hi
    assert welch(seeds, big) == (seeds.mean - 1.0, None, None)


def test_p_value_is_the_intervals_t_test() -> None:
    """The two-sided p-value of a difference from the same t statistic and degrees of freedom as its interval
    (scipy's t distribution where installed): below .05 exactly where the 95% interval excludes 0."""
    from steptable.compare.stats import Difference, welch_diff

    t = pytest.importorskip("scipy.stats").t
    rng = random.Random(11)
    for _ in range(300):
        a = seeds_spread([rng.gauss(0.5, 1.0) for _ in range(rng.randint(2, 6))])
        b = seeds_spread([rng.gauss(0.0, 1.0) for _ in range(rng.randint(2, 6))])
        diff = welch_diff(a, b)
        assert diff.var is not None and diff.df is not None
        p = diff.p_value()
        assert p == pytest.approx(2 * t.sf(abs(diff.d) / math.sqrt(diff.var), diff.df), rel=1e-9)
        _, lo, hi = diff.interval()
        assert lo is not None and hi is not None and (p < 0.05) == (not lo <= 0.0 <= hi)
    assert Difference(1.0, None, None).p_value() is None  # no spread: no test
    assert Difference(1.0, 0.0, 1.0).p_value() == 0.0 and Difference(0.0, 0.0, 1.0).p_value() == 1.0
    # by hand: d = 2, var 1/3 + 1/3, df 4 (as test_welch_difference), t = 2 / sqrt(2/3) = 2.449...
    diff = welch_diff(Spread(2.0, 1 / 3, 2.0, "seeds"), Spread(0.0, 1 / 3, 2.0, "seeds"))
    assert diff.df == pytest.approx(4.0) and diff.p_value() == pytest.approx(2 * t.sf(2 / math.sqrt(2 / 3), 4))
