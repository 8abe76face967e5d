"""steptable.alerts.window: the window's robust sigma (the MAD, the mean deviation of a two-level signal, the
upward spread, the resolution floor), the once-per-episode latch, and the Detector protocol."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from steptable.alerts.engine import AlertConfig, AlertEngine
from steptable.alerts.rules import Alert, Level
from steptable.alerts.window import Detector, Latch, Tail, Window, _mad, still
from tests.alerts.helpers import fed, lines


def test_spike_z_on_a_two_level_signal_is_finite_and_sane() -> None:
    """Over half the window on one value makes the MAD 0; the z-score then comes from the mean deviation instead
    of a 1e-9 floor (which would print z=500000000)."""
    eng = AlertEngine(AlertConfig(flat_rows=0))
    alerts = []
    for s in range(80):
        gn = 40.0 if s == 70 else (1.0 if s % 3 else 2.0)
        alerts += eng.update(s, {"grad_norm": gn, "loss": 1.0}, None)
    assert len(alerts) == 1 and "spike 40" in alerts[0].message_line()
    z = float(alerts[0].message_line().split("z=")[1].split()[0])
    assert 20 < z < 500


@pytest.mark.parametrize(("key", "mu", "sd"), [("response_length/clip_ratio", 0.9, 0.03), ("actor/kl_loss", 0.9, 0.2),
                                               ("actor/kl_loss", 1.0, 0.2)])
def test_a_value_hovering_at_its_threshold_is_one_alert(key: str, mu: float, sd: float) -> None:
    rng = random.Random(0)
    got = fed({key: max(0.0, rng.gauss(mu, sd))} for _ in range(1000))
    assert len(got) == 1, [a.line() for a in got]
    # once well below (< clear_frac of the threshold) for `rearm` rows, it is a new episode
    again = fed([*({key: mu + 0.2} for _ in range(20)), *({key: 0.1} for _ in range(10)),
                    *({key: mu + 0.2} for _ in range(20))])
    assert len(again) == 2


def test_a_dip_through_the_near_zone_restarts_the_clear_count() -> None:
    # clip ratio .95 for 6 rows (W), .8 for one row (within clear_frac of .9: not clear), 9 clear rows, .95 again:
    # 9 < rearm=10 clear rows, so it is the same episode
    rng = random.Random(2)
    xs = [rng.uniform(0.05, 0.2) for _ in range(30)] + [0.95] * 6 + [0.8]
    xs += [rng.uniform(0.05, 0.2) for _ in range(9)] + [0.95] * 6
    assert lines("response_length/clip_ratio", xs) == [
        "W step 34 response_length/clip_ratio saturated .95 (>.9 for 5 rows, since step 30)"]


def test_the_upper_spread_of_a_spike_test_needs_ten_values() -> None:
    # a two-level loss (.5 / .9): from 10 values the 90th percentile widens sigma and 3.0 is no spike; from 9 there
    # is no decile to read, and 3.0 is one (min_history lowered so the test runs that early)
    xs = [0.5, 0.9, 0.5, 0.5, 0.9, 0.5, 0.9, 0.5, 0.9, 0.5]
    assert lines("loss", [*xs[:9], 3.0], AlertConfig(flat_rows=0, min_history=9)) == [
        "W step 9 loss spike 3 (z=11 vs median .5 over 9)"]
    assert lines("loss", [*xs, 3.0], AlertConfig(flat_rows=0, min_history=10)) == []


def test_the_window_keeps_its_last_values_and_their_median() -> None:
    w = Window([5.0, 1.0, 3.0], maxlen=3)
    w.append(2.0)
    assert list(w) == [1.0, 3.0, 2.0] and w.median() == 2.0


def test_the_window_keeps_its_values_sorted_beside_them() -> None:
    rng = random.Random(3)
    w = Window(maxlen=50)
    for i in range(2000):  # repeats too (a quantised loss): a delete takes one copy of the value that left
        w.append(float(rng.randint(0, 20)) if i % 2 else rng.gauss(10, 3))
        assert w.ordered == sorted(w)
        assert w.median() == statistics.median(w) and w.low_median() == sorted(w)[(len(w) - 1) // 2]
    with pytest.raises(ValueError):
        Window(maxlen=5).median()


def test_sigma_is_the_scaled_mad_of_normal_noise() -> None:
    rng = random.Random(0)
    w = Window((rng.gauss(10.0, 2.0) for _ in range(2000)), maxlen=2000)
    assert 1.9 < w.sigma(w.median()) < 2.1


def test_a_constant_window_has_a_floor_sigma_that_reads_still() -> None:
    w = Window([0.25] * 30, maxlen=30)
    s = w.sigma(w.median())
    assert 0 < s <= 1e-9 and still(s, w.median())
    w.gap = 0.01  # a column resolved in steps of .01: half a step is the least sigma
    assert w.sigma(w.median()) == 0.005 and not still(0.005, 0.25)


def test_a_two_level_window_takes_its_sigma_from_the_mean_deviation() -> None:
    w = Window([1.0] * 20 + [2.0] * 10, maxlen=30)  # MAD 0: over half the values sit on 1.0
    assert w.sigma(w.median()) == pytest.approx(1.4826 * 0.8453 * 10 / 30)


def test_the_upward_spread_widens_sigma_from_ten_values() -> None:
    values = [0.0] * 6 + [1.0] * 4
    w = Window(values, maxlen=10)
    assert w.sigma(0.0, spread=True) == 1.0 / 1.2816 > w.sigma(0.0)
    w9 = Window(values[1:], maxlen=9)
    assert w9.sigma(0.0, spread=True) == w9.sigma(0.0)


def test_the_latch_fires_once_an_episode_and_on_escalation() -> None:
    latch = Latch()
    assert latch.step("W", rearm=3) and not latch.step("W", rearm=3)
    assert latch.step("E", rearm=3) and not latch.step("W", rearm=3)  # W -> E fires, E -> W does not
    assert not latch.step(None, rearm=3) and not latch.step(None, rearm=3)
    assert not latch.step("W", rearm=3)  # two clear rows of three: the same episode
    for _ in range(3):
        latch.step(None, rearm=3)
    assert latch.step("W", rearm=3)  # re-armed


def test_rows_near_the_threshold_do_not_count_towards_re_arming() -> None:
    latch = Latch()
    latch.step("W", rearm=2)
    latch.step(None, rearm=2)
    latch.step(None, rearm=2, near=True)  # the count starts again
    latch.step(None, rearm=2)
    assert not latch.step("W", rearm=2)


def test_a_detector_says_its_episode_once_with_its_key_kind_and_step() -> None:
    class Above(Detector):
        kind = "above"

        def check(self, x: float) -> tuple[Level, str] | None:
            return ("W", f"above 1 ({x})") if x > 1 else None

    det = Above(AlertConfig(rearm=2), "gn")
    got = [a for s, x in enumerate([0.5, 2.0, 3.0, 0.5, 0.5, 2.5]) if (a := det.feed(10 + s, x)) is not None]
    assert got == [Alert("W", 11, "gn", "above", "above 1 (2.0)"), Alert("W", 15, "gn", "above", "above 1 (2.5)")]


def test_the_tail_is_the_largest_excursion_either_way_and_a_resume_keeps_it() -> None:
    w = Window([1.0, 2.0] * 10, maxlen=50)  # median 1.5, sigma .5 (mean deviation, two levels)
    t = Tail()
    assert t.z(w, 3.5, 1.5) == pytest.approx(2 / w.sigma(1.5, spread=True))
    t.note(t.z(w, 3.5, 1.5), step=7)
    low = t.z(w, -4.5, 1.5)  # an excursion below the median counts as much as one above
    t.note(low, step=8)
    assert (t.top, t.at) == (low, 8)
    assert t.news(4.01 * low, 4.0) and not t.news(3.99 * low, 4.0)
    fresh = Tail()
    fresh.carry(t, at=9)  # the replaced engine's tail from before the resume
    assert (fresh.top, fresh.at) == (low, 8)
    later = Tail()
    later.carry(t, at=8)  # ... not one it saw at or after it
    assert later.top == 0.0


def test_mad_by_bisection_is_the_sorted_deviations_median() -> None:
    """The MAD read from the sorted window (no list of deviations) is the median of the sorted |x - m|, to the bit
    (ties, integers, a centre off the median, one value, zeros)."""
    median = statistics.median
    rnd = random.Random(3)
    for _ in range(20000):
        n = rnd.randrange(1, 60)
        xs = ([rnd.randrange(-3, 4) * 0.5 for _ in range(n)] if rnd.random() < 0.3
              else [rnd.gauss(0, 1) for _ in range(n)])
        s = sorted(xs)
        m = median(s) if rnd.random() < 0.7 else rnd.choice([rnd.gauss(0, 1), s[0], s[-1], s[0] - 1, s[-1] + 1])
        want = median([abs(x - m) for x in s])
        got = _mad(s, m)
        assert got == want and math.copysign(1, got) == math.copysign(1, want), (s, m)
