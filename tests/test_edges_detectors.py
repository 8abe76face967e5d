"""Edges of the alert detectors that a mutation run left unpinned: which level a reward collapse gets, when an
episode re-arms, the peak a slow decline is measured from, columns that never go positive, what a resume carries."""

from __future__ import annotations

import math
import random

from steptable.alerts.engine import AlertConfig
from tests.alerts.helpers import lines, resumed

# ------------------------------------------------------------------------------------------------- reward collapse


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


# ------------------------------------------------------------------------------------------------------ re-arming


def test_a_dip_through_the_near_zone_restarts_the_clear_count() -> None:
    # clip ratio .95 for 6 rows (W), .8 for one row (within clear_frac of .9: not clear), 9 clear rows, .95 again:
    # 9 < rearm=10 clear rows, so it is the same episode
    rng = random.Random(2)
    xs = [rng.uniform(0.05, 0.2) for _ in range(30)] + [0.95] * 6 + [0.8]
    xs += [rng.uniform(0.05, 0.2) for _ in range(9)] + [0.95] * 6
    assert lines("response_length/clip_ratio", xs) == [
        "W step 34 response_length/clip_ratio saturated .95 (>.9 for 5 rows, since step 30)"]


# ---------------------------------------------------------------------------------------------------------- entropy


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


# -------------------------------------------------------------------------------------------------------- grad rise


def test_a_grad_rise_quotes_the_lowest_level_sampled_every_hold_rows() -> None:
    # the lowest 50-row median is sampled every `hold` rows from the first full window on: the numbers it quotes
    rng = random.Random(7)
    xs = [abs(rng.gauss(1.0, 0.15)) for _ in range(300)] + [abs(rng.gauss(1.0 + i / 20, 0.15)) for i in range(100)]
    assert lines("grad_norm", xs) == ["W step 363 grad_norm rise to 3.89 (x4.01 its lowest level .971)"]


# ----------------------------------------------------------------------------------------------------------- spikes


def test_a_jump_of_eight_resolution_steps_over_a_still_loss_is_a_spike() -> None:
    # a loss logged to 4 digits sitting on .0002 (MAD 0): sigma is half its resolution (.0001), so .0010 is z=16
    rng = random.Random(9)
    xs = [round(0.0002 + (0.0001 if rng.random() < 0.04 else 0), 4) for _ in range(100)] + [0.001] + [0.0002] * 20
    assert lines("loss", xs) == ["W step 100 loss spike .001 (z=16 vs median .0002 over 50)"]


def test_a_nan_in_the_replaced_rows_does_not_shorten_the_finite_run_after_a_resume() -> None:
    # the crashed run hit NaN at step 400; the resume from 300 never did: its NaN at 550 is after 550 finite steps
    rng = random.Random(11)
    kept = [(s, rng.gauss(0.7, 0.05)) for s in range(300)]
    crashed = kept + [(s, math.nan if s == 400 else rng.gauss(0.7, 0.05)) for s in range(300, 450)]
    new = [(s, math.nan if s == 550 else rng.gauss(0.7, 0.05)) for s in range(300, 600)]
    got, want = resumed("loss", crashed, kept, new)
    assert got == want == ["E step 550 loss non-finite (nan) after 550 finite steps"]


def test_a_negative_floor_of_the_replaced_rows_is_not_carried() -> None:
    # the crashed run's reward fell to -1 after step 330; the resumed run never went below 0, so its fall to 0 is a
    # collapse to its floor (E), as for a run that never crashed
    rng = random.Random(12)
    kept = [(s, rng.gauss(0.6, 0.05)) for s in range(300)]
    crashed = kept + [(s, -1.0 if s >= 330 else rng.gauss(0.6, 0.05)) for s in range(300, 500)]
    new = [(s, rng.gauss(0.6, 0.05) if s < 450 else abs(rng.gauss(0.0, 0.01))) for s in range(300, 500)]
    got, want = resumed("reward", crashed, kept, new)
    assert got == want
    assert got[0].startswith("E step 45") and "collapse to floor" in got[0]


def test_a_penalty_floor_seen_before_the_resume_survives_it() -> None:
    # a -1 penalty at steps 30-39 (rows the bounded replay skips) and again in the replaced rows: the floor the
    # run reached before the resume is -1, so a fall to 0 later is no fall to the floor (W), as without a crash
    rng = random.Random(13)

    def early(s: int) -> float:
        return -1.0 if 30 <= s < 40 else rng.gauss(0.7 if 110 <= s < 160 else 0.6, 0.03)

    kept = [(s, early(s)) for s in range(300)]
    crashed = kept + [(s, -1.0 if 330 <= s < 360 else rng.gauss(0.6, 0.03)) for s in range(300, 450)]
    new = [(s, rng.gauss(0.6, 0.03) if s < 450 else abs(rng.gauss(0.0, 0.01))) for s in range(300, 500)]
    got, want = resumed("reward", crashed, kept, new)
    assert got == want
    assert got[0].startswith("W step 45") and "floor" not in got[0]


def test_a_spike_quotes_its_z_up_to_999_and_past_it_as_z_over_999() -> None:
    # a loss logged in quarter steps, still at 1.0 (sigma: half the .25 resolution): z=999 is quoted, 999.5 is >999
    assert lines("loss", [1.25] + [1.0] * 60 + [125.875]) == ["W step 61 loss spike 126 (z=999 vs median 1 over 50)"]
    assert lines("loss", [1.25] + [1.0] * 60 + [125.9375]) == [
        "W step 61 loss spike 126 (z>999 vs median 1 over 50)"]


def test_a_quarter_of_the_window_zeros_before_the_loss_moved_does_not_blind_the_spike_test() -> None:
    # a GRPO loss 0 for its first 5 steps (every group failed), then ordinary: 5 zeros of 20 is a quarter, tested
    rng = random.Random(15)
    xs = [0.0] * 5 + [abs(rng.gauss(0.05, 0.01)) for _ in range(15)] + [2.0]
    assert [a.split(" (")[0] for a in lines("loss", xs)] == ["W step 20 loss spike 2"]


def test_the_upper_spread_of_a_spike_test_needs_ten_values() -> None:
    # a two-level loss (.5 / .9): from 10 values the 90th percentile widens sigma and 3.0 is no spike; from 9 there
    # is no decile to read, and 3.0 is one (min_history lowered so the test runs that early)
    xs = [0.5, 0.9, 0.5, 0.5, 0.9, 0.5, 0.9, 0.5, 0.9, 0.5]
    assert lines("loss", [*xs[:9], 3.0], AlertConfig(flat_rows=0, min_history=9)) == [
        "W step 9 loss spike 3 (z=11 vs median .5 over 9)"]
    assert lines("loss", [*xs, 3.0], AlertConfig(flat_rows=0, min_history=10)) == []


# --------------------------------------------------------------------------------------------------------------- KL


def test_a_kl_jump_counts_only_above_the_minimum_kl() -> None:
    # KL .0005 early in training, then exactly .01 (x20): kl_jump_min=.01 is the level a jump must pass
    rng = random.Random(14)
    xs = [round(abs(rng.gauss(0.0005, 0.0001)), 5) for _ in range(60)] + [0.01]
    assert lines("kl", xs) == []


def test_a_kl_of_exactly_the_error_level_is_a_warning() -> None:
    # E above kl_error=10; exactly 10, x20 its median, is the W jump
    rng = random.Random(16)
    xs = [abs(rng.gauss(0.5, 0.05)) for _ in range(60)] + [10.0]
    assert [a.split(" (")[0] for a in lines("kl", xs)] == ["W step 60 kl blow-up 10"]
