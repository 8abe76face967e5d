"""steptable.summary.trend: a column's statistics and its recent trend (tr%): flat noise reads no trend about one
time in twenty, a real rise or fall shows at its size, lattice values, spikes, non-finite values, and held series
(logged every step, updated every few) judged by their updates."""

from __future__ import annotations

import math
import random

import pytest

from steptable.summary.report import column_stats, trend_pct
from steptable.summary.trend import _t_quantile, hold_length, regime_changes
from tests.summary.helpers import held, lattice


@pytest.mark.parametrize("draw", ["normal", "grid"])
@pytest.mark.parametrize(("n", "hold"), [(60, 5), (200, 10), (1000, 2), (1000, 10), (5000, 50)])
def test_a_flat_held_series_reads_a_trend_about_as_rarely_as_a_plain_one(n: int, hold: int, draw: str) -> None:
    # judged by successive pairs, 34-100 of 100 would read a trend (held 2: a third; held 10: 85 or more)
    rng = random.Random(n * 100 + hold)
    hits = sum(trend_pct(held(n, hold, rng, draw)) != 0 for _ in range(100))
    assert hits <= 12


@pytest.mark.parametrize("hold", [2, 5])
def test_a_rise_of_a_held_series_still_shows_at_its_size(hold: int) -> None:
    # two standard deviations of an update, over the last 10% of the steps: +20% of the level
    trends = []
    for seed in range(100):
        t = trend_pct(held(1000, hold, random.Random(seed), rise_at=900, rise=0.2))
        assert t is not None
        trends.append(t)
    assert sum(t != 0 for t in trends) >= 95
    assert 15 < sorted(trends)[50] < 25


def test_a_level_then_another_is_a_change_not_a_hold() -> None:
    # too few runs to learn a hold from: the step is read as a plain series reads it
    assert trend_pct([1.0] * 90 + [2.0] * 10) == pytest.approx(100.0)
    assert trend_pct([0.5] * 54 + [0.7] * 6) == pytest.approx(40.0)
    assert hold_length([1.0] * 90 + [2.0] * 10, 80) == (1, 80)


def test_a_stepped_schedule_reads_its_fall() -> None:
    # a learning rate cut by 10% every 10 steps (deterministic, held between cuts): the last 100 steps sit ~10 cuts
    # below the 100 before
    xs = [1e-3 * 0.9 ** (i // 10) for i in range(1000)]
    assert hold_length(xs, 800)[0] == 10
    t = trend_pct(xs)
    assert t is not None and -70 < t < -60
    # shorter, exact staircases: a slope, not noise (read by the size of a step they read 0)
    assert trend_pct([1e-3 * 0.9 ** (i // 10) for i in range(300)]) == pytest.approx(-27.1)
    assert trend_pct([0.2 + (i // 20) / 30 for i in range(300)]) == pytest.approx(7.745, abs=0.01)


def test_an_eval_score_rising_in_steps_of_its_noise_reads_a_rise() -> None:
    # 0.2 -> 0.7 over 300 steps, evaluated every 20 steps with sd 0.01: a rise in every seed
    for seed in range(20):
        rng = random.Random(seed)
        xs = [v for u in range(15) for v in [0.2 + u / 28 + rng.gauss(0, 0.01)] * 20]
        t = trend_pct(xs)
        assert t is not None and t > 5


def test_a_plain_series_that_turns_held_is_read_as_plain_when_no_hold_is_found() -> None:
    # the hold is 1: the noise is read from where a plain series' is
    rng = random.Random(2)
    xs = [rng.gauss(1, 0.1) for _ in range(91)] + [v for v in (rng.gauss(1, 0.1) for _ in range(7)) for _ in range(11)]
    hold, start = hold_length(xs, len(xs) - 34)
    assert hold > 1 or start == len(xs) - 34


@pytest.mark.parametrize(("xs", "hold"), [
    ([float(random.Random(1).random() < 0.5) for _ in range(1000)], 1),  # a 0/1 column: repeats by chance
    ([sum(random.Random(i).random() < 0.3 for _ in range(32)) / 32 for i in range(1000)], 1),  # a reward on a grid
    ([0.0 if random.Random(i).random() < 0.9 else 0.01 * i for i in range(1000)], 1),  # a mostly-zero clip ratio
    ([v for v in (random.Random(i).gauss(1, 0.1) for i in range(400)) for _ in range(3)], 3),
    ([0.0] * 400 + [random.Random(i // 2).choice([0.0, random.Random(i // 2).random()]) for i in range(600)], 2),
])
def test_the_hold_is_read_from_how_often_values_repeat_beyond_chance(xs: list[float], hold: int) -> None:
    # (the last: zeros, then a value updated every 2 steps, half the time to 0: its zero runs are 2, 4, 6... long)
    assert hold_length(xs, len(xs) - 200)[0] == hold


def test_a_held_series_reads_its_noise_from_at_least_twenty_updates() -> None:
    xs = held(5000, 50, random.Random(3))
    assert hold_length(xs, 4000) == (50, 4000)  # 20 holds of 50 are the last 1000 values
    assert hold_length(xs, 4900) == (50, 4000)


def test_a_loss_that_is_only_nan_is_shown() -> None:
    st = column_stats([math.nan, None, math.nan], nan_logged=True)
    assert (st.present, st.logged) == (0, 2) and math.isnan(st.last)


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


def test_fractions_bools_and_strings_summarise_as_rates() -> None:
    st = column_stats([(1, 4), [3, 4], "1/2", (1, 0), True, "0.25", "abc", None])
    assert (st.present, st.first, st.last, st.lo, st.hi) == (5, 0.25, 0.25, 0.25, 1.0)


def test_a_column_that_ends_at_inf_shows_it_last() -> None:
    """A KL that blew up to inf shows inf as ``last`` (the last finite value would read as healthy); min, max and
    tr% stay finite."""
    st = column_stats([0.01, 0.02, 0.015, math.inf, math.inf, math.nan])
    assert (st.present, st.first, st.last, st.lo, st.hi) == (3, 0.01, math.inf, 0.01, 0.02)
    assert column_stats([math.inf, 0.5]).last == 0.5
    # from a store's cells(): None is absent, a NaN was logged (and is the column's last value)
    assert math.isnan(column_stats([0.5, 0.4, math.nan, None], nan_logged=True).last)
    assert column_stats([0.5, 0.4, math.nan, None]).last == 0.4  # column(): NaN pads absent cells


def test_trend_of_values_near_the_float_limit_is_finite() -> None:
    """Values near 1.8e308 give a finite tr% (their sums must not overflow to inf: -inf or -nan)."""
    assert trend_pct([(-1) ** i * 1e308 for i in range(4)]) == 0.0  # (all noise)
    assert trend_pct([-1e308] * 18 + [1e308] * 2) == pytest.approx(200.0)
    assert trend_pct([1.0] + [1.7e308] * 19) == pytest.approx(0.0)
    assert trend_pct([1.7e308] * 18 + [-1.7e308] * 2) == pytest.approx(-200.0)


def _flat(mu: float, sd: float, seed: int, n: int = 1000) -> list[float]:
    g = random.Random(seed)
    return [g.gauss(mu, sd) for _ in range(n)]


@pytest.mark.parametrize(("mu", "sd"), [(0.05, 0.3), (0.0, 1.0), (-0.2, 0.5), (0.5, 0.05)])
def test_trend_of_flat_noise_reads_as_none(mu: float, sd: float) -> None:
    """tr% compared window means to the mean: N(0.05, 0.3) read a median |tr%| of 49 (a flat reward +57)."""
    ts = sorted(abs(t) for s in range(200) if (t := trend_pct(_flat(mu, sd, s))) is not None)
    assert len(ts) == 200
    assert ts[100] == 0.0 and ts[180] == 0.0  # median and 90th percentile: no trend
    assert sum(t > 0 for t in ts) <= 20  # a 2-standard-error gate lets about 5% through


def test_a_trend_beyond_the_noise_still_shows() -> None:
    g = random.Random(1)
    ramp = [0.1 + 0.5 * i / 1000 + g.gauss(0, 0.05) for i in range(1000)]  # +0.05 from one window to the next
    t = trend_pct(ramp)
    assert t is not None and 5 < t < 14  # 100 * .05 / .55 = 9
    jump = [x + (0.5 if i >= 900 else 0.0) for i, x in enumerate(_flat(0.05, 0.3, 2))]  # 1.7 sd in the last 10%
    t = trend_pct(jump)
    assert t is not None and t > 50
    decay = [2 * math.exp(-i / 300) + g.gauss(0, 0.05) for i in range(1000)]  # a loss still going down
    t = trend_pct(decay)
    assert t is not None and -40 < t < -15


@pytest.mark.parametrize(("m", "p"), [(32, 0.3), (1, 0.5)])
def test_flat_lattice_reads_no_trend(m: int, p: float) -> None:
    """Mean of 32 Bernoulli(0.3): 38 of 100 flat series read a trend (|tr%| ~10-25); a 0/1 column 57 of 100."""
    ts = [trend_pct(lattice(s, p, m)) for s in range(100)]
    assert sum(t != 0.0 for t in ts) <= 10  # a 2-standard-error gate lets about 5% through


def test_a_rise_on_the_lattice_still_shows() -> None:
    n = 3000
    for seed in range(10):
        step = trend_pct(lattice(seed, [0.3 if i < 0.9 * n else 0.4 for i in range(n)], n=n))
        assert step is not None and 25 < step < 45  # 100 * .1 / .3 = 33
        ramp = [0.3 + 0.1 * min(max((i - 0.8 * n) / (0.2 * n), 0.0), 1.0) for i in range(n)]  # over the last 20%
        t = trend_pct(lattice(seed, ramp, n=n))
        assert t is not None and 8 < t < 25  # the windows' p: .375 vs .325, +15%


def test_a_few_spikes_are_not_a_trend() -> None:
    """The windows' means are trimmed: three spikes of 50 in the last 100 values of a flat 1 +- 0.1 move a mean by 1.5
    (150%); they read as no trend as often as flat noise does, and never as a large one."""
    ts = []
    for seed in range(100):
        g = random.Random(seed)
        xs = [1 + g.gauss(0, 0.1) for _ in range(1000)]
        for i in (950, 970, 990):
            xs[i] = 50.0
        ts.append(trend_pct(xs))
    assert sum(t != 0.0 for t in ts) <= 10 and max(abs(t or 0.0) for t in ts) < 3


def test_a_column_of_floats_reads_as_the_general_loop_reads_it() -> None:
    """The all-floats shortcut gives the statistics the per-value loop gives (a float subclass takes the loop):
    gaps, logged NaN, inf, a sum past the largest double, a single value, nan_logged either way."""
    import random

    class F(float):
        pass

    rng = random.Random(0)
    specials = [math.nan, math.inf, -math.inf, 1e308, -1e308]
    for _ in range(400):
        n = rng.choice([1, 2, 5, 50, 500])
        xs = [rng.gauss(0, 1) * 10 ** rng.randint(-3, 3) for _ in range(n)]
        for _ in range(rng.choice([0, 0, 1, 5])):
            xs[rng.randrange(n)] = rng.choice(specials)
        for logged in (False, True):
            # (compared as text: NaN reads as nan on both sides, and F(x) as x)
            assert repr(column_stats(xs, logged)) == repr(column_stats([F(x) for x in xs], logged)), (xs, logged)
    assert column_stats([math.nan] * 3, False).logged == 0 and column_stats([math.nan] * 3, True).logged == 3
def test_regime_changes_of_a_stepped_schedule() -> None:
    """A learning rate halved at rows 300 and 600 changes regime there and nowhere else; noisy levels too."""
    lr = [1e-3] * 300 + [5e-4] * 300 + [2.5e-4] * 300
    assert regime_changes(lr) == [300, 600]
    r = random.Random(1)
    noisy = [(1.0 if i < 500 else 2.0) + r.gauss(0, 0.2) for i in range(1000)]
    assert regime_changes(noisy) == [500]


@pytest.mark.parametrize("seed", range(3))
def test_no_regime_change_in_noise_a_ramp_or_a_spike(seed: int) -> None:
    r = random.Random(seed)
    assert regime_changes([r.gauss(0, 1) for _ in range(20_000)]) == []
    assert regime_changes([i * 0.01 for i in range(2000)]) == []  # a slope is no change of regime
    spiky = [r.gauss(1, 0.05) for _ in range(5000)]
    spiky[2500] = 1000.0
    assert regime_changes(spiky) == []
    # single-row spikes of z 11-27 in one row of 100 (the alerts corpus' heavy-tailed family)
    heavy = [r.gauss(0, 1) + (r.uniform(11, 27) * r.choice((-1, 1)) if r.random() < 0.01 else 0.0)
             for _ in range(20_000)]
    assert regime_changes(heavy) == []


def test_a_step_of_four_times_the_noise_is_found_where_it_is() -> None:
    found = 0
    for seed in range(20):
        r = random.Random(seed)
        xs = [r.gauss(0, 1) + (4.0 if i >= 10_000 else 0.0) for i in range(20_000)]
        got = regime_changes(xs)
        assert len(got) <= 1
        found += bool(got) and abs(got[0] - 10_000) <= 3
    assert found >= 18


def test_a_warm_up_is_no_regime_change_but_the_step_after_it_is() -> None:
    lr = [min(i, 100) * 1e-5 if i < 500 else 5e-4 for i in range(1000)]  # warm-up to 1e-3, halved at 500
    assert regime_changes(lr) == [500]


def test_regime_changes_of_short_or_flat_series() -> None:
    assert regime_changes([1.0, 2.0] * 10) == []  # fewer than two windows
    assert regime_changes([0.0] * 500) == []
    assert regime_changes([3.0] * 100 + [4.0] * 100) == [100]
