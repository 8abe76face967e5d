"""steptable.alerts.detectors: the point conditions (non-finite values, loss and grad-norm spikes, KL blow-ups,
saturation, flat series) each fire on their event, stay silent on noise of the same scale, once per episode."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from steptable.alerts.engine import AlertConfig, AlertEngine
from tests.alerts.helpers import diverged, fed, grad_norms, heavy, kinds, lines, noise, series, stream

Row = dict[str, Any]


SEEDS = range(5)


def test_nonfinite_fires_once_per_episode() -> None:
    xs: list[Any] = noise(0, 600, 0.7, 0.05)
    for i in range(300, 320):
        xs[i] = math.nan  # one episode of 20 NaN rows
    xs[500] = "inf"  # a second one, logged as a string
    got = stream(series("loss", xs))
    assert kinds(got) == [("E", 300, "loss", "nonfinite"), ("E", 500, "loss", "nonfinite")]
    assert got[0].line() == "E step 300 loss non-finite (NaN) after 300 finite steps"
    assert got[1].message == "non-finite (inf) after 180 finite steps"


def test_nonfinite_rearms_only_after_clear_rows() -> None:
    xs: list[float] = [1.0] * 100
    xs[50] = xs[53] = math.nan  # 2 finite rows between: same episode
    xs[70] = -math.inf  # 16 finite rows between: new episode
    assert [a.step for a in stream(series("gn", xs))] == [50, 70]


def test_missing_key_and_none_are_not_nonfinite() -> None:
    rows: list[Row] = [{"loss": 1.0}, {}, {"loss": None}, {"other": math.nan}, {"loss": 1.1}]
    assert stream(rows) == []


def test_nonfinite_silent_on_noise() -> None:
    for seed in SEEDS:
        assert stream(series("actor/grad_norm", noise(seed, 1000, 1.0, 0.3, abs))) == []


def test_grad_norm_spike() -> None:
    xs = noise(1, 1000, 1.3, 0.2, abs)
    xs[400] = 14.2
    xs[700:703] = [9.0, 11.0, 10.0]  # a 3-row spike is one episode
    got = stream(series("gn", xs))
    assert kinds(got) == [("W", 400, "gn", "spike"), ("W", 700, "gn", "spike")]
    assert got[0].line().startswith("W step 400 gn spike 14.2 (z=")
    assert got[0].line().endswith("over 50)")


def test_loss_spike_and_no_spike_before_history() -> None:
    xs = noise(2, 300, 0.0, 0.05)
    xs[5] = 5.0  # too early: min_history rows first
    xs[200] = 2.0
    assert kinds(stream(series("train/loss", xs))) == [("W", 200, "train/loss", "spike")]


@pytest.mark.parametrize("seed", SEEDS)
def test_spike_silent_on_noise(seed: int) -> None:
    assert stream(series("grad_norm", noise(seed, 2000, 1.3, 0.2, abs))) == []
    assert stream(series("loss", noise(seed, 2000, -0.02, 0.05))) == []


def test_constant_series_with_step_change() -> None:
    xs = [1.0] * 100 + [1.2] * 10 + [3.0] + [1.0] * 20
    # 1.2 is within 50% of the median: no spike; 3.0 is a spike even though the MAD is 0
    assert [a.step for a in stream(series("loss", xs))] == [110]
    # a grad norm's routine single-step rises go to x3: it needs more than x4 (AlertConfig.grad_spike_min_rel)
    assert [a.step for a in stream(series("gn", xs))] == []
    assert [a.step for a in stream(series("gn", [*xs[:110], 4.5, *xs[111:]]))] == [110]


def test_non_finite_counts_the_steps_it_was_finite_for() -> None:
    """A run logging every 10th step, finite from step 10 to 790: the count is in steps (790), not rows (79,
    which would read as a NaN after a short run)."""
    eng = AlertEngine(AlertConfig(flat_rows=0))
    got = [a for s in range(10, 810, 10) for a in eng.update(s, {"loss": math.nan if s == 800 else 0.5})]
    assert [a.message for a in got] == ["non-finite (NaN) after 790 finite steps"]


def test_kl_jump_and_escalation() -> None:
    xs = noise(12, 400, 0.01, 0.002, abs)
    xs[300:305] = [0.2, 0.3, 20.0, 30.0, 25.0]  # x20 jump (W), then over the absolute error level (E)
    got = stream(series("kl", xs))
    assert kinds(got) == [("W", 300, "kl", "kl_blowup"), ("E", 302, "kl", "kl_blowup")]
    assert got[0].line() == "W step 300 kl blow-up .2 (x19.6 vs median .0102)"


def test_kl_two_episodes() -> None:
    xs = noise(12, 400, 0.01, 0.002, abs)
    xs[100] = xs[300] = 0.5
    assert [(a.level, a.step) for a in stream(series("train/kl", xs))] == [("W", 100), ("W", 300)]


def test_kl_absolute_threshold_and_multi_keys() -> None:
    rows: list[Row] = [{"actor/ppo_kl": 0.001, "actor/kl_loss": 0.5} for _ in range(50)]
    rows += [{"actor/ppo_kl": 0.001, "actor/kl_loss": 1.5} for _ in range(20)]
    rows += [{"actor/ppo_kl": 0.05, "actor/kl_loss": 1.5}]
    got = stream(rows)
    assert kinds(got) == [("W", 50, "actor/kl_loss", "kl_blowup"), ("W", 70, "actor/ppo_kl", "kl_blowup")]


@pytest.mark.parametrize("seed", SEEDS)
def test_kl_silent_on_noise(seed: int) -> None:
    assert stream(series("kl", noise(seed, 2000, 0.02, 0.005, abs))) == []
    rng = random.Random(seed)
    rising = [0.001 + 0.05 * i / 2000 + abs(rng.gauss(0, 0.002)) for i in range(2000)]
    assert stream(series("actor/kl_loss", rising)) == []


def test_saturation_consecutive_rows() -> None:
    rng = random.Random(13)
    xs: list[Any] = [rng.uniform(0.1, 0.3) for _ in range(200)]
    xs[50:54] = [0.95] * 4  # 4 rows: too short
    xs[100:130] = [(31, 32)] * 30  # fractions, one episode
    xs[160:170] = ["0.99"] * 10  # a second one after clear rows
    got = stream(series("response_length/clip_ratio", xs))
    assert kinds(got) == [("W", 104, "response_length/clip_ratio", "saturation"),
                          ("W", 164, "response_length/clip_ratio", "saturation")]
    assert got[0].message == "saturated .969 (>.9 for 5 rows, since step 100)"


def test_saturation_silent_near_but_below() -> None:
    rng = random.Random(14)
    assert stream(series("max_token_hit_rate", [rng.uniform(0.6, 0.9) for _ in range(1000)])) == []


@pytest.mark.parametrize("key", ["kl", "reward", "entropy"])
@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_a_reward_kl_or_entropy_gone_non_finite_is_an_error(key: str, bad: float) -> None:
    """Every watched role is checked for NaN/inf, not only loss and grad norm: a KL gone to inf is an error, not "no
    alerts" and exit status 0."""
    rng = random.Random(0)
    eng = AlertEngine()
    found = []
    for step in range(800):
        found += eng.update(step, {key: bad if step >= 600 else abs(rng.gauss(0.3, 0.03))})
    errors = [a for a in found if a.level == "E"]
    assert [(a.step, a.column, a.kind) for a in errors] == [(600, key, "nonfinite")]


@pytest.mark.parametrize("seed", SEEDS)
def test_no_spikes_in_a_series_that_is_often_exactly_zero(seed: int) -> None:
    """A GRPO loss is exactly 0 on degenerate batches (every reward in the group equal): with near half of the
    window on one value the MAD is ~0, and ordinary values must still not read as spikes."""
    rng = random.Random(seed)
    xs = [0.0 if rng.random() < 0.45 else abs(rng.gauss(0, 0.01)) for _ in range(2000)]
    assert stream(series("loss", xs)) == []
    xs[1500] = 0.5  # a real spike still stands out
    assert [(a.step, a.kind) for a in stream(series("loss", xs))] == [(1500, "spike")]
    kl = [0.0] * 25 + [0.02 * (1 - math.exp(-t / 30)) * math.exp(rng.gauss(0, 0.3)) for t in range(1000)]
    assert stream(series("kl", kl)) == []  # KL rising from a warmup frozen at 0 is not a blow-up


def test_a_run_that_stopped_learning_is_flat() -> None:
    """A grad norm of exactly 0 and a reward that never moves: no value is out of range, but the run is dead, and
    a summary must not say "alerts 0". Said once per key, at the row that makes it flat_rows."""
    rows = [{"grad_norm": 0.0, "reward": 0.0, "loss": 0.3 + 0.01 * (s % 5)} for s in range(200)]
    got = [(a.step, a.column, a.kind) for a in stream(rows, AlertConfig())]
    assert got == [(49, "grad_norm", "flat"), (49, "reward", "flat")]
    noisy = [{"grad_norm": 0.4 + 0.01 * (s % 7), "reward": 0.5 + 0.01 * (s % 3)} for s in range(200)]
    assert stream(noisy, AlertConfig()) == []
    # a flat stretch that ends re-arms after `rearm` rows of other values
    again = [{"grad_norm": 0.0}] * 60 + [{"grad_norm": 0.1 * (s + 1)} for s in range(20)] + [{"grad_norm": 0.0}] * 60
    flat = [a for a in stream(again, AlertConfig()) if a.kind == "flat"]
    assert [a.step for a in flat] == [49, 129]
    # each names where its stretch began (the alert comes flat_rows rows later)
    assert flat[1].message == "flat at 0 since step 80 (no learning signal?)"


@pytest.mark.parametrize("seed", range(3))
def test_routine_x3_grad_norm_steps_are_no_spike(seed: int) -> None:
    assert fed({"actor/grad_norm": g} for g in grad_norms(seed, 3000)) == []


@pytest.mark.parametrize(("factor", "level"), [(15.0, "W"), (100.0, "W"), (math.inf, "E")])
def test_real_grad_norm_blowups_are_still_caught(factor: float, level: str) -> None:
    # (routine x3 steps are this column's tail: a spike is news at spike_tail = 4 times their excursion; a x10
    # step on a .29 draw is x8 the median, 3.3 times the routine excursion, within its tail)
    xs = grad_norms(0, 1000)
    xs[500] *= factor
    got = fed({"actor/grad_norm": g} for g in xs)
    assert [(a.level, a.step) for a in got] == [(level, 500)]


def trl_rows(n: int, seed: int = 0) -> list[Row]:
    """TRL GRPO (beta .04): the Trainer logs round(loss, 4), so the loss reads 0, .0001, .0002 for the whole run."""
    rng = random.Random(seed)
    out: list[Row] = []
    for s in range(n):
        kl = 1e-4 * 100 ** (s / n) * math.exp(rng.gauss(0, 0.2))
        out.append({"loss": round(0.04 * kl + rng.gauss(0, 1e-5), 4), "kl": kl, "reward": 0.5 + rng.gauss(0, 0.08),
                    "grad_norm": 0.5 * math.exp(rng.gauss(0, 0.15))})
    return out


def test_a_rounded_loss_is_neither_flat_nor_spiking() -> None:
    """A loss rounded to a few digits on a run that learns is neither 'flat at 0' nor a 'spike .0001 (z=100000)':
    sigma is floored at half the column's resolution, not 1e-9."""
    assert fed(trl_rows(2000)) == []


def test_a_spike_on_a_quantised_loss_is_still_a_spike_and_a_huge_z_reads_999() -> None:
    rows = trl_rows(1000)
    rows[900]["loss"] = 0.5
    got = fed(rows)
    assert [(a.step, a.column, a.kind) for a in got] == [(900, "loss", "spike")]
    assert got[0].message.startswith("spike .5 (z>999 vs median ")


def test_a_frozen_run_is_still_flat() -> None:
    rows = trl_rows(600)
    for r in rows[300:]:
        r.update(loss=0.0, grad_norm=0.0, reward=0.25)
    flat = [(a.step, a.column) for a in fed(rows) if a.kind == "flat"]
    assert flat == [(349, "loss"), (349, "grad_norm"), (349, "reward")]
    # a loss exactly flat with no grad norm logged says so alone
    alone = [{"loss": 0.0, "reward": 0.5 + 0.01 * (i % 7)} for i in range(60)]
    assert [(a.step, a.column, a.kind) for a in fed(alone)] == [(49, "loss", "flat")]


def test_a_divergence_is_one_error_line() -> None:
    got = fed(diverged())
    assert [(a.level, a.step, a.column, a.kind) for a in got] == [("E", 200, "actor/pg_loss", "nonfinite")]
    assert got[0].line() == ("E step 200 actor/pg_loss non-finite (NaN) after 200 finite steps; "
                             "also actor/grad_norm (NaN), critic/score/mean (NaN), actor/entropy (NaN), "
                             "actor/ppo_kl (NaN), actor/kl_loss (NaN)")
    two = fed({"loss": 1.0, "gn": math.inf if i == 30 else 1.0} | ({"loss": math.nan} if i == 30 else {})
                 for i in range(40))
    assert [a.message for a in two] == ["non-finite (NaN) after 30 finite steps; also gn (inf)"]


@pytest.mark.parametrize("seed", range(10))
def test_no_spike_when_loss_and_grad_norm_leave_an_exact_0_stretch(seed: int) -> None:
    """GRPO while every group fails: loss and grad norm exactly 0, then ordinary values. The zeros are no noise to
    measure the first values against."""
    rng = random.Random(seed)
    rows = [{"loss": 0.0, "grad_norm": 0.0} if s < 120 else
            {"loss": rng.gauss(0, 0.01), "grad_norm": 0.25 * math.exp(rng.gauss(0, 0.2))} for s in range(300)]
    rows[280]["loss"] = 1.0  # once the window holds the new values, a real spike is one
    got = [a for a in fed(rows) if a.kind == "spike"]  # (the zeros are a flat W: said at step 49)
    assert [(a.step, a.column) for a in got] == [(280, "loss")], [a.line() for a in got]


@pytest.mark.parametrize(("zeros", "key", "noise", "big"), [(2, "loss", 0.02, 1e6), (3, "loss", 0.02, 1e6),
                                                           (5, "grad_norm", 1.0, 1e4)])
def test_a_few_leading_zeros_do_not_blind_the_spike_test(zeros: int, key: str, noise: float, big: float) -> None:
    # the "no spike against the zeros" rule kept the test off for a window's length after two leading zeros: an
    # explosion in those rows went unsaid
    rng = random.Random(zeros)
    eng = AlertEngine()
    values = [0.0] * zeros + [noise * (1 + rng.gauss(0, 0.2)) for _ in range(30)] + [big]
    spikes = [a for s, v in enumerate(values) for a in eng.update(s, {key: v}) if a.kind == "spike"]
    assert [a.step for a in spikes] == [len(values) - 1], spikes


def test_a_jump_of_eight_resolution_steps_over_a_still_loss_is_a_spike() -> None:
    # a loss logged to 4 digits sitting on .0002 (MAD 0): sigma is half its resolution (.0001), so .0010 is z=16
    rng = random.Random(9)
    xs = [round(0.0002 + (0.0001 if rng.random() < 0.04 else 0), 4) for _ in range(100)] + [0.001] + [0.0002] * 20
    assert lines("loss", xs) == ["W step 100 loss spike .001 (z=16 vs median .0002 over 50)"]


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


def heavy_rows(seed: int, n: int = 4000) -> list[Row]:
    """A healthy run whose loss, grad norm and KL have heavy-tailed (Student-t, df 3) noise."""
    loss, gn, kl = heavy(seed, n, 0.5, 0.1), heavy(seed + 100, n, 1.0, 0.2), heavy(seed + 200, n, 0.02, 0.3)
    return [{"loss": lo, "grad_norm": g, "kl": k} for lo, g, k in zip(loss, gn, kl, strict=True)]


#: seeds whose heavy-tailed run has single rows 11-27 robust sigma out (spikes against a Gaussian z). Not seed 5:
#: its KL draws t=59 once (x11 its median, a draw of about one in a million), which is said: the goal is at most
#: one warning per 1M cells on heavy tails (bench/bench_alerts.py), not none
HEAVY_SEEDS = (1, 2, 3, 4, 6)


@pytest.mark.parametrize("seed", HEAVY_SEEDS)
def test_a_heavy_tailed_healthy_run_raises_nothing(seed: int) -> None:
    rows = heavy_rows(seed)
    # each seed's run has routine excursions a Gaussian z calls spikes (z > spike_z)
    assert any(a.kind == "spike" for a in fed(rows, AlertConfig(spike_tail=0.0)))
    assert fed(rows) == []


@pytest.mark.parametrize("seed", HEAVY_SEEDS)
def test_incidents_in_a_heavy_tailed_run_are_still_said(seed: int) -> None:
    rng = random.Random(seed)
    rows, at = heavy_rows(seed), rng.randrange(1500, 3500)
    rows[at]["loss"] *= 20
    got = fed(rows)
    assert [(a.step, a.column, a.kind) for a in got] == [(at, "loss", "spike")]
    rows[at + 200]["loss"] *= 20  # a spike that repeats is news again
    assert [(a.step, a.kind) for a in fed(rows)] == [(at, "spike"), (at + 200, "spike")]
    rows = heavy_rows(seed)
    rows[at]["kl"] = rows[at]["kl"] * 30 + 0.5  # a jump x30, below the absolute KL levels
    assert [(a.step, a.column, a.kind) for a in fed(rows)] == [(at, "kl", "kl_blowup")]
    rows = heavy_rows(seed)
    rows[at]["grad_norm"] *= 25
    rows[at + 100]["loss"] = math.nan
    assert [(a.step, a.column, a.kind) for a in fed(rows)] == [(at, "grad_norm", "spike"), (at + 100, "loss",
                                                                                             "nonfinite")]
