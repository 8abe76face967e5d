"""Student-t quantiles against scipy."""

from __future__ import annotations

import math

import pytest

from steptable.compare.tdist import betainc, t_ppf, t_sf

stats = pytest.importorskip("scipy.stats")
special = pytest.importorskip("scipy.special")

DFS = [0.5, 0.9, 1, 1.5, 2, 2.5, 3, 3.7, 4, 5, 7, 9, 10, 14.2, 29, 30, 57.3, 100, 300, 1000, 5e4, 1e5, 1e7, 1e12]
# p away from 1/2: there scipy's own ppf is off by ~1e-13 in probability, 1e-9 of a quantile near 0
PS = [1e-10, 1e-6, 1e-3, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999, 1 - 1e-6,
      1 - 1e-10]


@pytest.mark.parametrize("df", DFS)
def test_t_ppf_matches_scipy(df: float) -> None:
    for p in PS:
        assert t_ppf(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9), (p, df)


def test_t_ppf_edges() -> None:
    assert t_ppf(0.5, 7) == 0.0
    assert t_ppf(0.0, 3) == -math.inf and t_ppf(1.0, 3) == math.inf
    with pytest.raises(ValueError):
        t_ppf(1.5, 3)
    with pytest.raises(ValueError):
        t_ppf(0.9, 0)
    assert t_ppf(0.975, 2) == pytest.approx(4.302652729749464, rel=1e-12)  # closed form: 2 df


@pytest.mark.parametrize("df", [0.5, 1, 3, 9.5, 40, 1e4])
def test_t_sf_and_betainc_match_scipy(df: float) -> None:
    for t in [-50, -3, -0.5, -1e-4, 1e-4, 0.3, 1.96, 4, 30, 1e3]:
        assert t_sf(t, df) == pytest.approx(stats.t.sf(t, df), rel=1e-9, abs=1e-300)
    for a, b, x in [(0.5, 2.0, 0.1), (3.0, 0.5, 0.9), (50.0, 0.5, 0.99), (0.5, 5e3, 1e-5), (2.5, 7.0, 0.3)]:
        assert betainc(a, b, x) == pytest.approx(special.betainc(a, b, x), rel=1e-9)
