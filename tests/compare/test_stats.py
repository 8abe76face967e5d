"""A comparison's statistics (steptable.compare.stats) on numbers worked by hand: numpy.array_split's batches, the
seeds' and the batches' spreads, a mean's interval, Welch's difference."""

from __future__ import annotations

import math

import pytest

from steptable.compare.stats import Spread, batch_bounds, batch_means, seeds_spread, single_spread, welch

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


def test_welch_difference() -> None:
    s = seeds_spread([1.0, 2.0, 3.0])
    d, lo, hi = welch(s, s)
    # the summed spread 2/3; df by Welch-Satterthwaite: (2/3)^2 / (2 * (1/3)^2 / 2) = 4
    half = 2.7764451051977987 * math.sqrt(2 / 3)  # Student t, 97.5th percentile, 4 degrees of freedom
    assert d == 0.0 and hi == pytest.approx(half) and lo == pytest.approx(-half)
    assert welch(s, seeds_spread([2.0])) == (0.0, None, None)  # a side without spread: no interval
    assert welch(Spread(2.0, 0.0, 1.0, "seeds"), Spread(1.0, 0.0, 1.0, "seeds")) == (1.0, 1.0, 1.0)
