"""Edges of the summary's trend (tr%): the noise it is judged against, its t threshold, and long runs."""

from __future__ import annotations

import math
import random

import pytest

from steptable.summary.trend import _t_quantile, column_stats, trend_pct


@pytest.mark.parametrize(("df", "expected", "student"), [
    (2, 4.015625, 4.5265), (3, 3.1736111, 3.3068), (10, 2.280625, 2.2837), (100, 2.0253063, 2.0253091),
])
def test_t_threshold_is_the_cornish_fisher_t_quantile(df: float, expected: float, student: float) -> None:
    # z + (z^3 + z) / 4df + (5z^5 + 16z^3 + 3z) / 96df^2 (Abramowitz & Stegun 26.7.5): a noise read from few values
    # is less sure, so the bar is higher; it stays under Student's exact quantile (scipy's t.ppf(Phi(2), df))
    assert _t_quantile(2.0, df) == pytest.approx(expected, rel=1e-7)
    assert 2.0 < _t_quantile(2.0, df) < student


def test_flat_noise_reads_a_trend_about_one_time_in_twenty() -> None:
    # the noise's degrees of freedom (2/3 of the pairs) keep flat N(0, 1) near the nominal 2-s.e. rate; read as
    # sharper (all of the pairs), 100 values read a trend one time in 16
    rng = random.Random(1)
    runs = 8000
    hits = sum(trend_pct([rng.gauss(10, 1) for _ in range(100)]) != 0 for _ in range(runs))
    assert 0.04 < hits / runs < 0.0575


def test_four_values_with_one_late_jump_read_no_trend() -> None:
    # 0.92 0.98 1.01 1.24: the last step is four times the others; from four values that is a spike as much as a rise
    assert trend_pct([0.92, 0.98, 1.01, 1.24]) == 0.0


def test_a_spike_before_the_noise_window_does_not_mute_the_recent_rise() -> None:
    # the noise is read from the last 20 values (the windows are 4 + 4 here): a restart's wild first step 21 values
    # back must not make a clear +20% rise read as noise
    xs = [1.0 + 0.01 * (i * 7 % 5) for i in range(40)]
    xs[40 - 21] = 50.0
    xs[-4:] = [x + 0.2 for x in xs[-4:]]
    assert trend_pct(xs) == pytest.approx(20.1, abs=0.1)


@pytest.mark.parametrize("bad", [math.inf, -math.inf])
def test_an_infinite_value_gives_no_trend(bad: float) -> None:
    # trend_pct takes finite values (column_stats filters them); an inf that slips through gives no tr%, not a crash
    assert trend_pct([1.0, 2.0, bad]) is None
    assert trend_pct([1.0, 2.0, 3.0, 4.0, bad, 5.0]) is None


def _held_by_two(n: int, rng: random.Random) -> list[float]:
    """A metric the trainer updates every other step and logs every step (the value held in between)."""
    xs: list[float] = []
    while len(xs) < n:
        x = rng.gauss(10, 1)
        xs += [x, x]
    return xs[:n]


def test_a_metric_held_two_steps_in_a_long_run_does_not_crash_the_summary() -> None:
    # 0 for most of a 30000-step run, then 1 for a third of the last steps (updated every 2): a rise, read the same
    # wherever the pairs fall; reading one pair in two saw no noise at all and divided 0 by 0
    xs = [0.0] * 30000
    for i in range(27000, 30000, 2):
        if i // 2 % 3 == 0:
            xs[i] = xs[i + 1] = 1.0
    trends = [column_stats([0.0] * off + xs[: len(xs) - off]).trend for off in range(3)]
    assert trends[0] is not None and trends[0] > 50
    assert trends == pytest.approx([trends[0]] * 3)


def test_a_long_run_reads_no_more_false_trends_than_a_short_one() -> None:
    # a flat metric held two steps: 30000 steps must not read a trend more often than 16000 do (reading one pair in
    # two, past 20000 values, saw no noise and read a trend in every run)
    rng = random.Random(0)
    short = sum(trend_pct(_held_by_two(16000, rng)) != 0 for _ in range(20))
    long = sum(trend_pct(_held_by_two(30000, rng)) != 0 for _ in range(20))
    assert long <= short + 5 and long < 15
