"""steptable.alerts.levels: the level detectors: a reward or entropy collapse (against the window, the peak, the
floor), an entropy rise, and a grad-norm rise against its lowest level.

The end of a dip is no rise: a GRPO stretch of zero-advantage groups puts the grad norm near 0 for tens of steps, its
lowest 50-row median falls to a fifth of the usual level, and the end of the stretch would read as a rise. A rise
must also pass twice the level held before that low, or that of the older half of the last 300 rows when lower (a
run settled below an early level): so a dip of more than about 120 rows is at last read as the level the rise is
measured from, and its end said as a rise 150-200 rows after it."""

from __future__ import annotations

import math
import random
import re
from typing import Any

import pytest

from steptable.alerts.engine import Alert, AlertConfig, AlertEngine
from tests.alerts.helpers import fed, grad_norms, kinds, lines, noise, resumed, series, stream


def _dipped(seed: int, dip: int, after: list[float] | None = None) -> list[float]:
    """300 steps of a grad norm ~1, ``dip`` steps ~0.2, then 200 steps ~1 (or ``after``'s levels)."""
    rng = random.Random(seed)
    tail = after if after is not None else [1.0] * 200
    return ([abs(rng.gauss(1.0, 0.15)) for _ in range(300)] + [abs(rng.gauss(0.2, 0.05)) for _ in range(dip)]
            + [abs(rng.gauss(level, 0.15 * level)) for level in tail])


@pytest.mark.parametrize("dip", [26, 30, 40, 90, 120])
def test_the_end_of_a_dip_is_no_rise(dip: int) -> None:
    # measured against the lowest level alone, every seed would read a rise for dips of 30 rows and more
    for seed in range(10):
        got = [line for line in lines("grad_norm", _dipped(seed, dip)) if "rise" in line]
        assert got == [], (seed, got)


def test_a_blow_up_after_a_dip_is_still_a_rise() -> None:
    # back to ~1 for 100 steps, then climbing 0.05 a step: a W once the level passes twice the level before the dip
    # (and 4x its lowest), quoting that lowest level
    for seed in range(10):
        got = [line for line in lines("grad_norm", _dipped(seed, 40, [1.0] * 100 + [1 + i / 20 for i in range(100)]))
               if "rise" in line]
        assert len(got) == 1, (seed, got)
        level = float(got[0].split("rise to ")[1].split()[0])
        assert 1.8 < level < 2.8 and "its lowest level .2" in got[0], got


def test_a_blow_up_without_a_dip_is_said_at_four_times_its_lowest_level() -> None:
    for seed in range(10):
        rng = random.Random(seed)
        xs = [abs(rng.gauss(1.0, 0.15)) for _ in range(300)] + [abs(rng.gauss(1 + i / 20, 0.15)) for i in range(100)]
        got = [line for line in lines("grad_norm", xs) if "rise" in line]
        assert len(got) == 1 and "(x4." in got[0], got


def test_a_grad_norm_that_decays_then_blows_up_is_a_rise() -> None:
    # a decay from 10 to .5 over 600 steps: the level before each new low follows it down
    for seed in range(10):
        rng = random.Random(seed)
        xs = [abs(rng.gauss(10 * 0.99**i + 0.5, 0.05)) for i in range(600)]
        xs += [abs(rng.gauss(0.5 + i / 40, 0.05)) for i in range(150)]
        got = [line for line in lines("grad_norm", xs) if "rise" in line]
        assert len(got) == 1 and "(x4." in got[0], got


def test_a_resume_after_a_dip_carries_the_level_before_it() -> None:
    # the dip at steps 300-339 lies in rows the resumed engine does not replay; the return after the resume is no
    # rise there either, and a resumed engine says what one engine reading the kept and new rows says
    xs = _dipped(3, 40, [1.0] * 3000)
    kept = list(enumerate(xs[:3000]))
    crashed = kept + [(s, 1.0) for s in range(3000, 3100)]
    new = [(s, x) for s, x in enumerate(xs[3000:], start=3000)]
    got, want = resumed("grad_norm", crashed, kept, new)
    assert got == want
    assert not [line for line in got if "rise" in line]


def test_a_resume_carries_the_level_before_the_low_with_the_low() -> None:
    # ~1, the dip, then 1.5 for 3000 steps (all the resumed engine replays), then 2.5 after the resume: 2.5x the
    # level before the dip is a rise, as one engine reading it all says; the replay alone knows only 1.5
    xs = _dipped(4, 40, [1.5] * 2700 + [2.5] * 200)
    kept = list(enumerate(xs[:3040]))
    crashed = kept + [(s, 1.5) for s in range(3040, 3100)]
    new = [(s, x) for s, x in enumerate(xs[3040:], start=3040)]
    got, want = resumed("grad_norm", crashed, kept, new)
    assert got == want
    assert [line for line in got if "rise" in line]


def test_the_level_before_the_low_is_the_config_s_multiple() -> None:
    xs = _dipped(5, 40, [1.0] * 50 + [1.6] * 150)
    assert not [line for line in lines("grad_norm", xs) if "rise" in line]
    eng = AlertEngine(AlertConfig(flat_rows=0, grad_rise_pre=1.5))
    said = [a.line() for i, x in enumerate(xs) for a in eng.update(i, {"grad_norm": x})]
    assert [line for line in said if "rise" in line]


def _rises(xs: list[float]) -> list[str]:
    return [line for line in lines("grad_norm", xs) if "rise" in line]


def test_a_blow_up_long_after_an_early_drop_is_a_rise() -> None:
    # the level before the low (5, the first 40 steps) is long gone: 2,000 steps at .5 are where a rise is read from
    for seed in range(3):
        rng = random.Random(seed)
        xs = [abs(rng.gauss(5, 0.5)) for _ in range(40)] + [abs(rng.gauss(0.5, 0.05)) for _ in range(2000)]
        got = _rises(xs + [abs(rng.gauss(3.0, 0.3)) for _ in range(200)])
        assert len(got) == 1 and got[0].startswith("W step 204"), got


def test_a_fast_warmup_decay_then_a_climb_is_said_at_four_times_the_low() -> None:
    for seed in range(3):
        rng = random.Random(seed)
        xs = [abs(rng.gauss(1 + 9 * 0.955**i, 0.1)) for i in range(1600)]
        got = _rises(xs + [abs(rng.gauss(1 + i / 50, 0.1)) for i in range(400)])
        assert len(got) == 1 and "(x4.0" in got[0], got


def test_a_blow_up_after_a_lasting_drop_below_the_early_level_is_a_rise() -> None:
    # 1, then 0.1 for 3,000 steps (a learning-rate cut), then x8 of that: below the early level, still a rise
    for seed in range(3):
        rng = random.Random(seed)
        xs = [abs(rng.gauss(1, 0.15)) for _ in range(300)] + [abs(rng.gauss(0.1, 0.015)) for _ in range(3000)]
        assert len(_rises(xs + [abs(rng.gauss(0.8, 0.1)) for _ in range(200)])) == 1


@pytest.mark.parametrize(("start", "length"), [(200, 100), (200, 140), (215, 100), (215, 140), (245, 60)])
def test_a_resume_whose_replay_begins_inside_a_dip_says_what_one_engine_says(start: int, length: int) -> None:
    # the replay reads the first 20 rows and the last 80 before the resume at 300 (inside the dip); the crashed
    # run's rows went on in the dip, so the old engine's lowest was set after the resume
    for seed in range(8):
        rng = random.Random(seed)

        def level(s: int, rng: random.Random = rng) -> float:
            return abs(rng.gauss(0.2, 0.05)) if start <= s < start + length else abs(rng.gauss(1.0, 0.15))

        xs = [level(s) for s in range(600)]
        kept = list(enumerate(xs[:300]))
        crashed = kept + [(s, level(s)) for s in range(300, 400)]
        got, want = resumed("grad_norm", crashed, kept, list(enumerate(xs[300:], start=300)))
        assert got == want, (seed, got, want)
        assert length > 120 or not [line for line in got if "rise" in line]  # (longer dips: see the module doc)


SEEDS = range(5)


def test_reward_collapse_warns_once_and_again_after_recovery() -> None:
    xs = noise(3, 300, 0.6, 0.05) + noise(4, 100, 0.3, 0.05) + noise(5, 200, 0.6, 0.05) + noise(6, 100, 0.3, 0.05)
    got = stream(series("critic/score/mean", xs))
    assert [(a.level, a.kind) for a in got] == [("W", "reward_collapse")] * 2
    assert 300 <= got[0].step <= 310 and 600 <= got[1].step <= 610
    assert got[0].message.startswith("collapse to .3")


def test_reward_collapse_to_floor_is_error() -> None:
    xs = noise(7, 300, 0.6, 0.05) + [0.0] * 50
    got = stream(series("rew", xs))
    assert kinds(got) == [("E", got[0].step, "rew", "reward_collapse")]
    assert "floor" in got[0].message and "-100%" in got[0].message


def test_reward_escalates_w_to_e_once() -> None:
    xs = noise(8, 300, 0.6, 0.05) + [0.3] * 15 + [0.0] * 30
    assert [a.level for a in stream(series("reward", xs))] == ["W", "E"]


@pytest.mark.parametrize("seed", SEEDS)
def test_reward_silent_on_noise_and_learning(seed: int) -> None:
    assert stream(series("reward", noise(seed, 2000, 0.5, 0.1))) == []
    rng = random.Random(seed)
    learning = [0.1 + 0.6 * (1 - math.exp(-i / 300)) + rng.gauss(0, 0.05) for i in range(2000)]
    assert stream(series("reward", learning)) == []


def test_entropy_collapse_vs_early_and_recent() -> None:
    xs = noise(9, 200, 0.8, 0.03) + noise(10, 100, 0.03, 0.005)
    got = stream(series("actor/entropy", xs))
    assert kinds(got) == [("W", got[0].step, "actor/entropy", "entropy_collapse")]
    assert 200 <= got[0].step <= 210 and got[0].message.endswith("(<10% of early .799)")
    # a sudden halving later in the run is measured against the recent level
    xs = noise(9, 200, 0.8, 0.03) + noise(10, 200, 0.5, 0.03) + noise(11, 50, 0.2, 0.02)
    got = stream(series("actor/entropy", xs))
    assert len(got) == 1 and 400 <= got[0].step <= 410 and "(<50% of recent .499)" in got[0].message


def test_entropy_second_episode_after_recovery() -> None:
    xs = noise(9, 200, 0.8, 0.03) + noise(10, 50, 0.03, 0.005) + noise(11, 200, 0.8, 0.03) + noise(12, 50, 0.03, 0.005)
    got = stream(series("entropy", xs))
    assert [a.kind for a in got] == ["entropy_collapse"] * 2 and 450 <= got[1].step <= 460


def test_entropy_rise_to_noise_is_said_once() -> None:
    # a policy drifting towards noise: entropy x5 over 20 steps, from a level well below where it began
    xs = [0.6 - 0.2 * i / 300 for i in range(300)] + [0.4 * (1 + i / 5) for i in range(20)] + [2.0] * 100
    xs = [x * math.exp(g) for x, g in zip(xs, noise(3, len(xs), 0, 0.04), strict=True)]
    got = stream(series("actor/entropy", xs))
    assert kinds(got) == [("W", got[0].step, "actor/entropy", "entropy_rise")]
    assert 300 <= got[0].step <= 325 and "its lowest level .4" in got[0].message and "the early .59" in got[0].message


@pytest.mark.parametrize("rise", [
    [0.15 + 0.35 * min(1.0, i / 500) for i in range(1000)],  # back up to where it began after an early dip
    [0.3 + 0.3 * i / 1000 for i in range(1000)],  # doubling over a run (a clip-higher run's entropy)
])
def test_entropy_recovering_or_rising_slowly_is_no_rise(rise: list[float]) -> None:
    xs = [0.5] * 30 + rise
    xs = [x * math.exp(g) for x, g in zip(xs, noise(4, len(xs), 0, 0.04), strict=True)]
    assert [a.kind for a in stream(series("entropy", xs)) if a.kind == "entropy_rise"] == []


def test_entropy_slow_decay_is_silent() -> None:
    rng = random.Random(11)
    xs = [0.8 - 0.3 * i / 2000 + rng.gauss(0, 0.03) for i in range(2000)]
    assert stream(series("entropy", xs)) == []


Row = dict[str, Any]


def rewards(seed: int, n: int, at: int, f: Any) -> list[Row]:
    """A GRPO mean reward over 512 samples (success rate climbing to ~.6, sd ~.04 a step) changed by ``f(rate, k)``
    from row ``at``."""
    rng = random.Random(seed)
    out: list[Row] = []
    for i in range(n):
        p = 0.2 + 0.4 * (1 - math.exp(-4 * i / n))
        if i >= at:
            p = f(p, i - at)
        x = max(0.0, min(1.0, p + rng.gauss(0, 0.01 + 0.05 * p)))
        out.append({"critic/score/mean": round(x * 512) / 512})
    return out


@pytest.mark.parametrize("steps", [100, 200, 400])
def test_a_slow_reward_collapse_is_warned_then_an_error(steps: int) -> None:
    """A decline over more than ~50 steps is reported although the window's median follows it down."""
    got = fed(rewards(1, 2200, 1500, lambda p, k: max(0.01, p * (1 - k / steps))))
    assert [(a.level, a.kind) for a in got] == [("W", "reward_collapse"), ("E", "reward_collapse")]
    w, e = got
    assert 1500 < w.step < 1500 + steps * 0.7 and w.step < e.step <= 1500 + steps
    assert "from peak ." in w.message and e.message.startswith("collapse to floor ")


@pytest.mark.parametrize("seed", range(3))
def test_a_harder_curriculum_is_one_warning(seed: int) -> None:
    """Reward down 45% in one step (harder prompts), then climbing back slowly past the peak test's threshold and
    hovering there: one W, never an E, never again."""
    got = fed(rewards(seed, 3000, 1500, lambda p, k: p * 0.55 + 0.1 * min(1.0, k / 1000)))
    assert [(a.level, a.kind) for a in got] == [("W", "reward_collapse")]
    # and a slow 30% drift down (harder prompts mixed in over 500 steps): at most one W
    drift = fed(rewards(seed, 3000, 1500, lambda p, k: p * (1 - 0.3 * min(1.0, k / 500))))
    assert [a.level for a in drift] in ([], ["W"])


def test_healthy_noisy_rewards_are_silent() -> None:
    for seed in range(3):
        assert fed(rewards(seed, 3000, 3000, lambda p, k: p)) == []


@pytest.mark.parametrize("ramp", [20, 50])
def test_a_gradual_grad_norm_blowup_is_a_rise_against_its_lowest_level(ramp: int) -> None:
    """x10 over 20-50 steps: no single step is a spike against the rows before it; the level test sees it."""
    xs = [g * min(10.0, 1 + 9 * max(0, i - 1500) / ramp) for i, g in enumerate(grad_norms(1, 2000))]
    got = [a for a in fed({"actor/grad_norm": g} for g in xs) if a.step >= 1500]
    assert got[0].step <= 1500 + ramp  # over 20 steps one of them may be a spike first
    rise = [a for a in got if a.kind == "grad_rise"]
    assert len(rise) == 1 and rise[0].step <= 1500 + ramp and "its lowest level .3" in rise[0].message


def _sds(alerts: list[Alert]) -> list[int]:
    return [int(m.group(1)) for a in alerts if (m := re.search(r"(\d+)sd\)", a.message))]


def test_a_reward_at_0_dipping_negative_is_no_collapse_to_floor() -> None:
    rng = random.Random(1)
    rows = [{"reward": 0.0 if s < 300 else -sum(rng.random() < 0.02 for _ in range(256)) / 512} for s in range(600)]
    got = [a for a in fed(rows) if a.kind == "reward_collapse"]
    assert all(a.level == "W" and "floor" not in a.message for a in got), [a.line() for a in got]
    assert all(z < 1000 for z in _sds(got)), [a.line() for a in got]


def test_a_reward_at_1_settling_lower_has_a_finite_z() -> None:
    rng = random.Random(1)
    rows = [{"reward": min(1.0, s / 300) if s < 900 else sum(rng.random() < 0.62 for _ in range(256)) / 256}
            for s in range(1200)]
    got = [a for a in fed(rows) if a.kind == "reward_collapse"]
    assert [a.level for a in got] == ["W"] and all(z < 1000 for z in _sds(got)), [a.line() for a in got]


def test_a_collapse_back_to_0_is_still_to_floor() -> None:
    rng = random.Random(2)
    rows = [{"reward": max(0.0, (0.0 if s < 100 else 0.7 if s < 400 else 0.0) + rng.gauss(0, 0.03))}
            for s in range(500)]
    got = [a for a in fed(rows) if a.kind == "reward_collapse"]
    assert any(a.level == "E" and "collapse to floor" in a.message for a in got), [a.line() for a in got]


def test_a_negative_reward_falling_far_below_its_floor_is_an_error() -> None:
    # a penalty-style reward at -1 falling to -3 read W once "to floor" needed a reference clearly above the floor
    rng = random.Random(7)
    eng = AlertEngine()
    rows = [-1 + rng.gauss(0, 0.05) for _ in range(200)] + [-3 + rng.gauss(0, 0.05) for _ in range(20)]
    found = [a for s, v in enumerate(rows) for a in eng.update(s, {"reward": v}) if a.kind == "reward_collapse"]
    assert found and found[0].level == "E" and "to floor" in found[0].message, found


def test_a_collapse_to_the_floor_after_a_slow_decline_is_an_error_from_the_peak() -> None:
    # the window's median followed the decline down to .3 (a drop from there is a W: .04 is not within 10% of
    # .3's floor gap); measured from the peak .8 it is a fall to the floor: the worse of the two is said
    rng = random.Random(5)
    xs = [rng.gauss(0.8, 0.03) for _ in range(150)]
    xs += [rng.gauss(0.8 - 0.5 * i / 400, 0.03) for i in range(400)]
    xs += [abs(rng.gauss(0.04, 0.01)) for _ in range(60)]
    assert lines("reward", xs) == [
        "W step 349 reward collapse to .552 from peak .809 (-32%, 8sd)",
        "E step 554 reward collapse to floor .0442 from peak .809 (-95%, 24sd)",
    ]


def test_a_slow_decline_after_a_perfect_warmup_is_measured_from_the_first_noisy_peak() -> None:
    # reward exactly 1.0 for 80 rows (no noise to measure a drop in), then noisy: while the window's median is
    # still 1.0 the peak takes that window's noise, once, and keeps it; the slow decline is said at -30%
    rng = random.Random(3)
    xs = [1.0] * 80 + [min(1.0, rng.gauss(0.9, 0.04)) for _ in range(100)]
    xs += [min(1.0, rng.gauss(0.9 - 0.6 * i / 600, 0.04)) for i in range(600)]
    assert lines("reward", xs) == ["W step 352 reward collapse to .699 from peak 1 (-30%, 125sd)"]


def test_a_reward_with_occasional_easy_batches_still_collapses_on_its_usual_noise() -> None:
    # 15% of batches score .8, the rest .5 +- .02: the drop test reads the noise around the median (MAD), not the
    # upper tail the spike tests widen sigma by; a fall to .2 is said within the hold of 10 rows
    rng = random.Random(8)
    xs = [rng.gauss(0.8, 0.02) if rng.random() < 0.15 else rng.gauss(0.5, 0.02) for _ in range(200)]
    xs += [rng.gauss(0.2, 0.02) for _ in range(30)]
    assert lines("reward", xs) == ["W step 204 reward collapse to .237 from .5 (-53%, 9sd)"]


def test_a_second_collapse_after_a_partial_recovery_is_said_again() -> None:
    # .6 -> .2, back to .5 for 40 rows (within 24% of the window's median: clear, however many sigma), -> .2 again
    rng = random.Random(17)
    xs = [rng.gauss(0.6, 0.01) for _ in range(100)] + [rng.gauss(0.2, 0.01) for _ in range(15)]
    xs += [rng.gauss(0.5, 0.01) for _ in range(40)] + [rng.gauss(0.2, 0.01) for _ in range(15)]
    assert lines("reward", xs) == ["W step 104 reward collapse to .204 from .6 (-66%, 38sd)",
                                   "W step 159 reward collapse to .208 from .493 (-58%, 19sd)"]


def test_a_reward_drop_must_be_more_than_the_relative_threshold() -> None:
    # a still reward of 10 (an occasional 10.25) falling to exactly 7 is -30%: not more than reward_rel_drop
    xs = ([10.0] * 4 + [10.25]) * 20
    assert lines("reward", xs + [7.0] * 15) == []
    assert lines("reward", xs + [6.75] * 15) == ["W step 104 reward collapse to 6.75 from 10 (-32%, 52sd)"]


def test_a_collapse_in_the_first_rows_is_said_as_soon_as_the_window_holds_min_history_rows() -> None:
    # hold=10 rows for the level, min_history=20 in the window: row 29 is the first that can say it
    rng = random.Random(18)
    xs = [rng.gauss(0.6, 0.02) for _ in range(22)] + [abs(rng.gauss(0.05, 0.01)) for _ in range(20)]
    assert lines("reward", xs) == ["E step 29 reward collapse to floor .0582 from .598 (-90%, 25sd)"]


def test_a_fall_back_to_a_negative_penalty_floor_is_an_error() -> None:
    # a format penalty of -1 early on, then a reward learning from .4 to .7; at step 300 it falls back to about
    # -.95: within 10% of the gap from its peak down to the -1 floor, an error
    rng = random.Random(19)
    xs = [-1.0 if 30 <= s < 40 else rng.gauss(0.4 + s / 1000, 0.03) for s in range(300)]
    xs += [rng.gauss(-0.95, 0.02) for _ in range(30)]
    got = lines("reward", xs)
    assert [x.split(" reward")[0] for x in got] == ["E step 34", "E step 304"]
    assert got[1].startswith("E step 304 reward collapse to floor -.9")


def test_an_early_level_shorter_than_the_hold_works() -> None:
    # entropy_early=5 < hold=10: the early level is in before the first current level; no crash, the collapse said
    rng = random.Random(4)
    xs = [rng.gauss(1.2, 0.05) for _ in range(100)] + [abs(rng.gauss(0.05, 0.01)) for _ in range(40)]
    assert lines("entropy", xs, AlertConfig(flat_rows=0, entropy_early=5)) == [
        "W step 104 entropy collapse .0604 (<10% of early 1.22)"]


def test_an_entropy_column_at_or_below_zero_never_collapses() -> None:
    # 0 for 40 rows (not computed yet), then a negated entropy growing in size: a collapse is a positive level
    # falling towards 0; from an early or recent level of 0 or below there is nothing to fall from
    rng = random.Random(6)
    xs = [0.0] * 40 + [-abs(rng.gauss(0.6 + i / 200, 0.05)) for i in range(300)]
    assert lines("entropy", xs) == []


def test_a_grad_rise_quotes_the_lowest_level_sampled_every_hold_rows() -> None:
    # the lowest 50-row median is sampled every `hold` rows from the first full window on: the numbers it quotes
    rng = random.Random(7)
    xs = [abs(rng.gauss(1.0, 0.15)) for _ in range(300)] + [abs(rng.gauss(1.0 + i / 20, 0.15)) for i in range(100)]
    assert lines("grad_norm", xs) == ["W step 363 grad_norm rise to 3.89 (x4.01 its lowest level .971)"]


def test_uniform_noise_entropy_over_100k_rows_is_no_rise() -> None:
    """The 148 MB stationary-noise run (every column uniform on [0, 1)) raised 57 "entropy rise" warnings: its
    lowest 50-row median, read over 100k rows, is a third of the usual one, and a 10-row level three times that is
    ordinary. A rise must also clear the noise the low was measured in."""
    rnd = random.Random(0)
    assert [ln for ln in lines("entropy", [rnd.random() for _ in range(100_000)]) if "rise" in ln] == []


def test_a_collapse_from_near_zero_quotes_the_change_not_a_percentage() -> None:
    """"collapse ... (-5100%)": a percentage of a reference near 0 (or of a fall across 0) says nothing; the
    absolute change does."""
    rnd = random.Random(1)
    xs = [0.01 + 0.002 * rnd.gauss(0, 1) for _ in range(200)] + [-0.5 + 0.002 * rnd.gauss(0, 1) for _ in range(40)]
    got = [ln for ln in lines("reward", xs) if "collapse" in ln]
    assert len(got) == 1 and "%" not in got[0] and re.search(r"\(-\.5\d*, \d+sd\)", got[0]), got
    # a fall towards 0 from a clearly positive level keeps its share
    ys = [0.5 + 0.02 * rnd.gauss(0, 1) for _ in range(200)] + [0.1 + 0.02 * rnd.gauss(0, 1) for _ in range(40)]
    assert any(re.search(r"from \.5\d* \(-7\d%, \d+sd\)", ln) for ln in lines("reward", ys))
