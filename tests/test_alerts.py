"""Alert detectors: each fires on its event, stays silent on noise of the same scale, once per episode."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.engine import DEFAULT_ROLES, Alert, AlertConfig, AlertEngine, cell_float, cell_frac, scan
from tests.helpers import run_cli, write

Row = dict[str, Any]


def stream(rows: Iterable[Mapping[str, Any]], config: AlertConfig | None = None) -> list[Alert]:
    """The alerts of ``rows`` fed in order; the flat detector off unless a config is given (the series here are
    constant around the condition each test is about)."""
    eng = AlertEngine(config if config is not None else AlertConfig(flat_rows=0))
    out: list[Alert] = []
    for i, row in enumerate(rows):
        out.extend(eng.update(i, row))
    return out


def series(key: str, values: Sequence[Any]) -> list[Row]:
    return [{key: v} for v in values]


def noise(seed: int, n: int, mu: float, sd: float, f: Callable[[float], float] = lambda x: x) -> list[float]:
    rng = random.Random(seed)
    return [f(rng.gauss(mu, sd)) for _ in range(n)]


def kinds(alerts: Sequence[Alert]) -> list[tuple[str, int, str, str]]:
    return [(a.level, a.step, a.column, a.kind) for a in alerts]


SEEDS = range(5)


# ------------------------------------------------------------------------------------------------------ non-finite


def test_nonfinite_fires_once_per_episode() -> None:
    xs: list[Any] = noise(0, 600, 0.7, 0.05)
    for i in range(300, 320):
        xs[i] = math.nan  # one episode of 20 NaN rows
    xs[500] = "inf"  # a second one, logged as a string
    got = stream(series("loss", xs))
    assert kinds(got) == [("E", 300, "loss", "nonfinite"), ("E", 500, "loss", "nonfinite")]
    assert got[0].line() == "E step 300 loss non-finite (nan) after 300 finite steps"
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


# ---------------------------------------------------------------------------------------------------------- spikes


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


# ------------------------------------------------------------------------------------------------- reward collapse


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


# ------------------------------------------------------------------------------------------------ entropy collapse


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


def test_a_flat_episode_to_the_last_row_says_so_in_a_scan() -> None:
    """A run dead from step 0 to 999 read "flat at 0 for 50 rows since step 0": a blip at the start, to an agent."""
    steps = list(range(1000))
    (dead,) = scan(steps, {"grad_norm": [0.0] * 1000})
    assert (dead.step, dead.message) == (49, "flat at 0 for 1000 rows since step 0, still at the last row "
                                               "(no learning signal?)")
    # an episode that ended is said as it began
    (over,) = scan(steps, {"grad_norm": [0.0] * 100 + noise(5, 900, 1.0, 0.1)})
    assert over.message == "flat at 0 for 50 rows since step 0 (no learning signal?)"


def test_non_finite_counts_the_steps_it_was_finite_for() -> None:
    """A run logging every 10th step, finite from step 10 to 790: "after 79 finite steps" (rows) read as a NaN
    after a short run; it was finite for 790 steps."""
    eng = AlertEngine(AlertConfig(flat_rows=0))
    got = [a for s in range(10, 810, 10) for a in eng.update(s, {"loss": math.nan if s == 800 else 0.5})]
    assert [a.message for a in got] == ["non-finite (nan) after 790 finite steps"]


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


# ---------------------------------------------------------------------------------------------------------- KL


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


# ------------------------------------------------------------------------------------------------------ saturation


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


# ----------------------------------------------------------------------------------------------------------- stall


def test_stall_fires_once_and_rearms_on_next_row() -> None:
    eng = AlertEngine()
    for i in range(10):
        assert eng.update(i, {"loss": 1.0}, 1000.0 + 2 * i) == []
    last = 1018.0
    assert eng.check_stall(last + 59) == []  # 10 x 2 s is less than the 60 s floor
    got = eng.check_stall(last + 150)
    assert kinds(got) == [("W", 9, "", "stall")]
    assert got[0].line() == "W step 9 stalled: no row for 2.5m (75x median 2s/row)"
    assert eng.check_stall(last + 500) == []
    eng.update(10, {"loss": 1.0}, last + 600)
    assert len(eng.check_stall(last + 800)) == 1


def test_stall_needs_history_and_wall_times() -> None:
    eng = AlertEngine()
    assert eng.check_stall(1e9) == []
    for i in range(3):
        eng.update(i, {}, 100.0 + i)
    assert eng.check_stall(1e9) == []  # only 2 intervals
    eng2 = AlertEngine()
    for i in range(20):
        eng2.update(i, {}, None)
    assert eng2.check_stall(1e9) == []


# ------------------------------------------------------------------------------------------------------- hack/auroc


def test_hack_rising_while_auroc_falls() -> None:
    rng = random.Random(15)
    rows: list[Row] = []
    for i in range(400):
        p, au = (0.1, 0.9) if i % 200 < 100 else (0.5, 0.75)  # two episodes: at 100 and at 300
        row: Row = {"hack_s": (sum(rng.random() < p for _ in range(32)), 32)}
        if i % 2 == 0:
            row["auroc"] = au + rng.gauss(0, 0.01)  # sparse column
        rows.append(row)
    got = stream(rows)
    assert [(a.level, a.column, a.kind) for a in got] == [("W", "hack_s", "hack_auroc")] * 2
    assert 100 <= got[0].step <= 120 and 300 <= got[1].step <= 320
    assert got[0].message.startswith("rising ") and " while auroc " in got[0].message


@pytest.mark.parametrize("seed", SEEDS)
def test_hack_silent_when_only_one_moves(seed: int) -> None:
    rng = random.Random(seed)
    rising_hack = [{"hack_s": 0.1 + 0.4 * (i > 100), "auroc": 0.9 + rng.gauss(0, 0.01)} for i in range(300)]
    assert stream(rising_hack) == []
    noisy = [{"hack_s": [sum(rng.random() < 0.2 for _ in range(8)), 8], "auroc": rng.gauss(0.85, 0.03)}
             for _ in range(1000)]
    assert stream(noisy) == []


# ------------------------------------------------------------------------------------------------- hostile values


class _Hostile:
    def __float__(self) -> float:
        raise RuntimeError("no")


HOSTILE: list[Any] = [None, math.nan, "nan", "NaN", "inf", "-inf", "abc", "", "  ", True, False, (1, 0), (0, 0),
                      [1], [1, 2, 3], ("a", "b"), "3/0", "3/x", {}, {"a": 1}, object(), _Hostile(), 1j, 10**400,
                      -(10**400), b"1", bytearray(b"x"), 1e308 * 10, -0.0, 2**63, "1e999", "\x1b[2J"]


def test_hostile_values_never_crash() -> None:
    rng = random.Random(16)
    keys = [k for keys in DEFAULT_ROLES.values() for k in keys]
    rows = [{k: rng.choice(HOSTILE) for k in keys} for _ in range(400)]
    eng = AlertEngine()
    for i, row in enumerate(rows):
        for a in eng.update(i, row, rng.choice([None, math.nan, "x", 1.0 * i])):  # type: ignore[arg-type]
            assert a.line().isascii() and "\n" not in a.line()
    eng.check_stall(math.inf)
    eng.check_stall(math.nan)
    cols = {k: [r[k] for r in rows] for k in keys}
    assert scan(list(range(400)), cols) == stream(rows)


def test_cell_parsing() -> None:
    assert cell_float("1e-3") == 1e-3 and cell_float(True) == 1.0 and cell_float((3, 4)) == 0.75
    assert cell_float("3/4") == 0.75 and cell_float([1, 0]) is None and cell_float("abc") is None
    assert cell_float(10**400) == math.inf and cell_float(_Hostile()) is None and cell_float(1j) is None
    assert math.isnan(cell_float("nan") or 0.0)
    assert cell_frac((3, 8)) == (3.0, 8.0) and cell_frac("1/2") == (1.0, 2.0) and cell_frac((1, math.nan)) is None


def test_nan_missing_config() -> None:
    rows: list[Row] = [{"loss": 1.0}, {"loss": math.nan}, {"loss": 1.0}]
    assert stream(rows, AlertConfig(nan_missing=True, flat_rows=0)) == []
    assert len(stream([*rows, {"loss": "nan"}], AlertConfig(nan_missing=True, flat_rows=0))) == 1
    assert len(stream(rows)) == 1


# -------------------------------------------------------------------------------------------------- roles / scan


def test_role_override_and_binding() -> None:
    xs: list[Any] = [1.0] * 50 + [math.nan]
    cfg = AlertConfig(roles={"loss": ("my_loss",)}, flat_rows=0)
    assert kinds(stream(series("my_loss", xs), cfg)) == [("E", 50, "my_loss", "nonfinite")]
    assert stream(series("loss", xs), cfg) == []
    assert stream(series("kl", [50.0]), AlertConfig(roles={"kl": ()})) == []
    # a single-key role binds to the first candidate present; an alias logged later is ignored
    rows: list[Row] = [{"train/loss": 1.0}] * 5 + [{"train/loss": 1.0, "loss": math.nan}]
    assert stream(rows) == []
    assert "entropy" in AlertConfig().role_keys()["entropy"]
    assert "train/weight_entropy" not in AlertConfig().role_keys()["entropy"]


def _event_columns(n: int, seed: int) -> dict[str, list[Any]]:
    rng = random.Random(seed)
    cols: dict[str, list[Any]] = {
        "loss": [rng.gauss(0.5, 0.05) for _ in range(n)],
        "gn": [abs(rng.gauss(1.0, 0.2)) for _ in range(n)],
        "reward": [rng.gauss(0.6 if i < n // 2 else 0.1, 0.05) for i in range(n)],
        "entropy": [rng.gauss(0.8 if i < n // 3 else 0.05, 0.01) for i in range(n)],
        "kl": [abs(rng.gauss(0.01, 0.002)) for _ in range(n)],
        "response_length/clip_ratio": [0.95 if 200 < i < 220 else 0.1 for i in range(n)],
        "hack_s": [(rng.randint(0, 4) if i < n // 2 else rng.randint(12, 20), 32) for i in range(n)],
        "auroc": [None if i % 3 else (0.9 if i < n // 2 else 0.7) for i in range(n)],
        "note": ["x"] * n,
    }
    cols["loss"][100] = math.nan
    cols["gn"][150] = 30.0
    cols["kl"][400] = 3.0
    cols["reward"][50] = None
    return cols


def test_scan_equals_streaming() -> None:
    n = 600
    cols = _event_columns(n, 17)
    steps = list(range(0, 2 * n, 2))
    walls = [1000.0 + 5 * i + (900 if i >= 300 else 0) for i in range(n)]
    rows = [{k: c[i] for k, c in cols.items() if c[i] is not None} for i in range(n)]
    eng = AlertEngine()
    streamed: list[Alert] = []
    for i, row in enumerate(rows):
        streamed.extend(eng.check_stall(walls[i]))
        streamed.extend(eng.update(steps[i], row, walls[i]))
    scanned = scan(steps, cols, walls)
    assert scanned == streamed
    assert {a.kind for a in scanned} == {"nonfinite", "spike", "reward_collapse", "entropy_collapse", "kl_blowup",
                                         "saturation", "hack_auroc", "stall"}
    no_walls = scan(steps, cols)  # without wall times: the same alerts but the stall
    assert no_walls == [a for a in streamed if a.kind != "stall"] != []


def test_spike_z_on_a_two_level_signal_is_finite_and_sane() -> None:
    """Over half the window on one value makes the MAD 0; the z-score then comes from the mean deviation instead
    of a 1e-9 floor (which printed z=500000000)."""
    eng = AlertEngine(AlertConfig(flat_rows=0))
    alerts = []
    for s in range(80):
        gn = 40.0 if s == 70 else (1.0 if s % 3 else 2.0)
        alerts += eng.update(s, {"grad_norm": gn, "loss": 1.0}, None)
    assert len(alerts) == 1 and "spike 40" in alerts[0].message_line()
    z = float(alerts[0].message_line().split("z=")[1].split()[0])
    assert 20 < z < 500


@pytest.mark.parametrize("key", ["kl", "reward", "entropy"])
@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_a_reward_kl_or_entropy_gone_non_finite_is_an_error(key: str, bad: float) -> None:
    """Only loss and grad norm were watched for NaN/inf: a KL gone to inf passed as "no alerts", exit status 0."""
    rng = random.Random(0)
    eng = AlertEngine()
    found = []
    for step in range(800):
        found += eng.update(step, {key: bad if step >= 600 else abs(rng.gauss(0.3, 0.03))})
    errors = [a for a in found if a.level == "E"]
    assert [(a.step, a.column, a.kind) for a in errors] == [(600, key, "nonfinite")]


@pytest.mark.parametrize("seed", SEEDS)
def test_no_spikes_in_a_series_that_is_often_exactly_zero(seed: int) -> None:
    """A GRPO loss is exactly 0 on degenerate batches (every reward in the group equal): near half of the window on
    one value made the MAD ~0 and ordinary values read as spikes (44 warnings in 2,000 healthy rows)."""
    rng = random.Random(seed)
    xs = [0.0 if rng.random() < 0.45 else abs(rng.gauss(0, 0.01)) for _ in range(2000)]
    assert stream(series("loss", xs)) == []
    xs[1500] = 0.5  # a real spike still stands out
    assert [(a.step, a.kind) for a in stream(series("loss", xs))] == [(1500, "spike")]
    kl = [0.0] * 25 + [0.02 * (1 - math.exp(-t / 30)) * math.exp(rng.gauss(0, 0.3)) for t in range(1000)]
    assert stream(series("kl", kl)) == []  # KL rising from a warmup frozen at 0 is not a blow-up


def test_a_pause_the_run_keeps_making_is_its_rhythm_not_a_stall() -> None:
    """An evaluation of 90 s every 50 steps (rows 5 s apart): said at its first two pauses, not at every one; a
    pause far longer than those still is."""
    eng = AlertEngine()
    t, got = 1000.0, []
    for step in range(400):
        t += 5 + (90 if step and step % 50 == 0 else 0) + (900 if step == 325 else 0)
        got += eng.check_stall(t)
        got += eng.update(step, {"loss": 1.0}, t)
    assert [a.step for a in got if a.kind == "stall"] == [49, 99, 324]


def test_a_run_that_stopped_learning_is_flat() -> None:
    """A grad norm of exactly 0 and a reward that never moves: no value is out of range, but the run is dead (a
    summary said "alerts 0" for 200 such steps). Said once per key, at the row that makes it flat_rows."""
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
    assert flat[1].message == "flat at 0 for 50 rows since step 80 (no learning signal?)"


def test_a_stall_far_past_the_median_is_said_in_the_compact_number_format() -> None:
    # a run found again after days: the ratio was printed whole (95694940x), eight digits nobody reads
    eng = AlertEngine()
    for i in range(30):
        eng.update(i, {"loss": 1.0}, float(i))
    (alert,) = eng.check_stall(29.0 + 95_694_940)
    assert "(9.57e7x median 1s/row)" in alert.line()


def test_a_tinyzero_entropy_collapse_is_alerted_on_actor_entropy_loss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # TinyZero logs the policy's entropy as actor/entropy_loss (its legend says so); a collapse there went unsaid
    lines = [f"(main_task pid=7) step:{s} - critic/kl:0.001 - actor/entropy_loss:{0.6 if s < 80 else 0.01} - "
             f"critic/score/mean:0.5" for s in range(1, 101)]
    write(tmp_path / "tz" / "train.log", "\n".join(lines) + "\n")
    _, out, _ = run_cli(["tail", str(tmp_path / "tz"), "--alerts-only"], capsys)
    assert "actor/entropy_loss collapse" in out, out
    # a run logging both names is watched on actor/entropy (the later verl name), once
    eng = AlertEngine()
    for s in range(100):
        eng.update(s, {"actor/entropy": 0.6 if s < 80 else 0.01, "actor/entropy_loss": 0.6})
    assert eng._bound["entropy"] == "actor/entropy"
