"""steptable.alerts.engine: the AlertEngine over a run's rows: scan equals streaming, roles and config, hostile
cells, the merged non-finite line, the hack-rate warning, the end-of-run alert, ages, replay spans, feeding from a
store."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.engine import (
    DEFAULT_ROLES,
    Alert,
    AlertConfig,
    AlertEngine,
    end_alert,
    fmt_age,
)
from steptable.alerts.history import feed_store, replay_spans, scan
from steptable.table import runinfo
from tests.alerts.helpers import Unfloatable, fed, kinds, noise, series, stream
from tests.helpers import grpo_row, store_of

Row = dict[str, Any]


SEEDS = range(5)


def test_a_flat_episode_reads_the_same_in_a_scan_and_in_the_stream() -> None:
    """One text for one episode in every view: a scan (summary, watch) said "flat ... for 80 rows ..., still at the
    last row" where the streaming engine (tail --alerts-only) said "for 50 rows" of the same episode. The text says
    where the episode began, which no view reads differently."""
    steps = list(range(1000))
    cols = {"grad_norm": [0.0] * 1000}
    (dead,) = scan(steps, cols)
    eng = AlertEngine()
    streamed = [a for s in steps for a in eng.update(s, {"grad_norm": cols["grad_norm"][s]})]
    assert streamed == [dead]
    assert (dead.step, dead.message) == (49, "flat at 0 since step 0 (no learning signal?)")
    (over,) = scan(steps, {"grad_norm": [0.0] * 100 + noise(5, 900, 1.0, 0.1)})
    assert over.message == "flat at 0 since step 0 (no learning signal?)"


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


HOSTILE: list[Any] = [None, math.nan, "nan", "NaN", "inf", "-inf", "abc", "", "  ", True, False, (1, 0), (0, 0),
                      [1], [1, 2, 3], ("a", "b"), "3/0", "3/x", {}, {"a": 1}, object(), Unfloatable(), 1j, 10**400,
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


def test_nan_missing_config() -> None:
    rows: list[Row] = [{"loss": 1.0}, {"loss": math.nan}, {"loss": 1.0}]
    assert stream(rows, AlertConfig(nan_missing=True, flat_rows=0)) == []
    assert len(stream([*rows, {"loss": "nan"}], AlertConfig(nan_missing=True, flat_rows=0))) == 1
    assert len(stream(rows)) == 1


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


def test_a_role_binds_at_the_first_row_whose_cell_is_not_none_though_earlier_rows_held_the_key() -> None:
    # the engine keeps a plan per key set: a row whose only candidate is None must not leave the role unwatched
    rows: list[Row] = [{"loss": None, "x": 1.0}] * 3 + [{"loss": 1.0, "x": 1.0}] * 30 + [{"loss": math.nan, "x": 1}]
    assert kinds(stream(rows)) == [("E", 33, "loss", "nonfinite")]
    eng = AlertEngine(AlertConfig(flat_rows=0))
    for s in range(5):
        eng.update(s, {"loss": 1.0, "train/loss": 1.0})
    eng.bind("loss", "train/loss")  # bound already (to "loss"): the plan stays
    assert [a.column for a in eng.update(5, {"loss": math.nan, "train/loss": 1.0})] == ["loss"]


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


def test_one_hacking_ramp_is_one_alert() -> None:
    for seed in range(3):
        rng = random.Random(seed)
        rows: list[Row] = []
        for s in range(2000):
            k = max(0, s - 1000)
            hr, au = 0.08 + min(0.4, k * 0.4 / 50), 0.85 - min(0.25, k * 0.25 / 50)
            rows.append({"hack_s": [sum(rng.random() < hr for _ in range(32)), 32], "auroc": rng.gauss(au, 0.03)})
        got = fed(rows)
        assert [a.kind for a in got] == ["hack_auroc"] and 1000 < got[0].step < 1060


def test_the_replay_is_bounded_and_keeps_the_early_rows() -> None:
    cfg = AlertConfig()
    assert replay_spans(10, cfg) == [(0, 10)]
    (head, tail) = replay_spans(1_000_000, cfg)
    assert head == (0, cfg.entropy_early) and tail[1] == 1_000_000 and tail[1] - tail[0] < 200


def test_the_merged_non_finite_line_names_every_column_with_its_value() -> None:
    rows = [{"loss": 1.0, "grad_norm": 1.0, "entropy": 0.5, "kl": 0.01} for _ in range(40)]
    rows.append({"loss": math.nan, "grad_norm": math.inf, "entropy": math.nan, "kl": -math.inf})
    (a,) = fed(rows)
    assert a.message == "non-finite (NaN) after 40 finite steps; also grad_norm (inf), entropy (NaN), kl (-inf)"


def _frac(rng: random.Random, p: float, n: int = 1024) -> list[int]:
    """A hack count over ``n`` sampled completions (the ``[hacked, sampled]`` cell a GRPO run logs)."""
    return [sum(rng.random() < p for _ in range(n)), n]


def test_a_crash_is_an_error_and_an_interruption_a_warning() -> None:
    # Ctrl-C / a scheduler's SIGTERM is someone stopping the run (W); an exception is the run failing (E, exit 1)
    closed = {"closed": 1_700_000_000.0}
    stopped = end_alert({**closed, "end": runinfo.end_of(KeyboardInterrupt())}, 812)
    crashed = end_alert({**closed, "end": runinfo.end_of(RuntimeError("CUDA error"))}, 812)
    assert stopped is not None and stopped.line() == "W step 812 run interrupted"
    assert crashed is not None and crashed.line() == "E step 812 run ended with RuntimeError"
    assert end_alert({**closed}, 812) is None  # a normal end says nothing


@pytest.mark.parametrize(("seconds", "text"), [
    (99.4, "99s"), (99.6, "1.66m"), (100, "1.67m"),  # seconds up to 99, then minutes (never "100s")
    (5996, "99.9m"), (5999.5, "1.67h"), (6000, "1.67h"),  # minutes below 100 (never "100m"), then hours
    (172799, "48h"), (172800, "2d"),  # hours below 48, then days
])
def test_an_age_changes_unit_at_each_boundary(seconds: float, text: str) -> None:
    assert fmt_age(seconds) == text


def test_an_endless_age_reads_unknown_and_a_negative_or_nan_one_zero() -> None:
    assert (fmt_age(math.inf), fmt_age(-math.inf), fmt_age(math.nan)) == ("?", "0s", "0s")


def test_a_day_is_86400_seconds() -> None:
    # 202606.7 s is 2.34498 days: a stall message must not round it up to 2.35d
    assert fmt_age(202606.7) == "2.34d"


def _hack_rows(rng: random.Random, hack: list[float], auroc: list[float], train_rows: int = 0) -> list[Alert]:
    """Feed one eval row per observation (hack count, probe AUROC) with ``train_rows`` training rows after each."""
    eng, out, step = AlertEngine(), [], 0
    for h, au in zip(hack, auroc, strict=True):
        out += eng.update(step, {"loss": 0.3 + rng.gauss(0, 0.02), "hack_s": _frac(rng, h), "auroc": au})
        step += 1
        for _ in range(train_rows):
            out += eng.update(step, {"loss": 0.3 + rng.gauss(0, 0.02)})
            step += 1
    return [a for a in out if a.kind == "hack_auroc"]


def test_training_rows_between_eval_rows_do_not_rearm_the_hack_warning() -> None:
    # two jumps of the hack rate (and drops of the AUROC) 20 evals apart, five clear evals between them: one episode,
    # one W; the four training rows after each eval carry no hack rate and tell the detector nothing
    rng = random.Random(11)
    hack = [0.05 + 0.3 * (k >= 20) + 0.3 * (k >= 40) for k in range(70)]
    auroc = [0.92 - 0.1 * (k >= 20) - 0.1 * (k >= 40) + rng.gauss(0, 0.003) for k in range(70)]
    found = _hack_rows(rng, hack, auroc, train_rows=4)
    assert [(a.level, a.column) for a in found] == [("W", "hack_s")] and found[0].step in (120, 125), found


def test_a_hack_rate_still_climbing_keeps_one_episode_while_the_auroc_pauses() -> None:
    # the hack rate climbs all along; the AUROC drops, holds for 28 evals, drops again: still the same episode
    # (either signal still moving keeps it open), not a second W once the AUROC has held for `rearm` rows
    rng = random.Random(12)
    hack = [0.05 + 0.015 * k for k in range(60)]
    auroc = [0.9 - 0.1 * (k >= 20) - 0.1 * (k >= 48) + rng.gauss(0, 0.004) for k in range(60)]
    assert len(_hack_rows(rng, hack, auroc)) == 1


def test_a_hack_rate_logged_as_a_plain_share_is_watched() -> None:
    # hack_s as a float share (0.05 -> 0.35) rather than a count: the same warning
    rng = random.Random(13)
    eng, found = AlertEngine(), []
    for k in range(40):
        row = {"hack_s": 0.05 + 0.3 * (k >= 20) + rng.gauss(0, 0.01), "auroc": 0.92 - 0.1 * (k >= 20)}
        found += eng.update(k, row)
    assert [(a.kind, a.step, a.column) for a in found] == [("hack_auroc", 24, "hack_s")]


def test_the_hack_warning_comes_at_the_hack_row_that_tips_it() -> None:
    # the probe's AUROC is measured every 10 steps, the hack rate at every step: the W comes at the step whose hack
    # rate tipped the comparison, not at the next AUROC measurement
    rng = random.Random(14)
    eng, found = AlertEngine(), []
    for s in range(300):
        row: dict[str, Any] = {"hack_s": _frac(rng, 0.05 if s < 250 else 0.4, 256)}
        if s % 10 == 0:
            row["auroc"] = 0.95 - 0.006 * (s // 10) + rng.gauss(0, 0.002)
        found += eng.update(s, row)
    (a,) = found
    assert a.kind == "hack_auroc" and 250 < a.step < 260, a


def test_a_hack_rate_without_an_auroc_or_with_a_tiny_window_is_no_error() -> None:
    # a run that logs hack_s but no probe AUROC has nothing to compare: no W, no crash
    rng = random.Random(15)
    eng = AlertEngine()
    assert [a for k in range(60) for a in eng.update(k, {"hack_s": _frac(rng, 0.05 + 0.01 * k)})] == []
    # hack_window=1 still compares two observations (the halves of a window of one would be empty)
    eng = AlertEngine(AlertConfig(hack_window=1))
    found = [a for k in range(6) for a in eng.update(k, {"hack_s": [5 + 60 * k, 100], "auroc": 0.9 - 0.1 * k})]
    assert [(a.kind, a.step) for a in found] == [("hack_auroc", 1)]


def test_a_column_shorter_than_the_steps_is_absent_where_it_ends() -> None:
    # a metric that stopped being logged (an entropy logged for the first 60 steps only): its column is shorter
    # than the steps; scan reads it as absent past its end, as it reads None cells, and still sees the NaN loss
    rng = random.Random(21)
    steps = list(range(100))
    loss: list[Any] = [0.5 - 0.002 * s + rng.gauss(0, 0.01) for s in steps]
    loss[90] = math.nan
    entropy = [1.2 + rng.gauss(0, 0.02) for _ in range(60)]
    found = scan(steps, {"loss": loss, "entropy": entropy})
    assert [(a.level, a.step, a.column, a.kind) for a in found] == [("E", 90, "loss", "nonfinite")]
    assert found == scan(steps, {"loss": loss, "entropy": entropy + [None] * 40})


def test_the_replay_spans_follow_the_config() -> None:
    # the first entropy_early rows and the last rows every window looks back over (window + rearm + min_history)
    assert replay_spans(5000) == [(0, 20), (4920, 5000)]
    cfg = AlertConfig(window=200, entropy_early=50)
    assert replay_spans(5000, cfg) == [(0, 50), (4770, 5000)]


def test_a_sparse_column_of_a_store_is_no_nan(tmp_path: Path) -> None:
    # the store pads an entropy logged every 5th step with NaN: those cells are absent, not a non-finite entropy
    # (a false E); the NaN loss the run logged is still one
    rng = random.Random(23)
    rows = []
    for s in range(120):
        r = grpo_row(rng, s)
        if s % 5 == 0:
            r["entropy"] = 1.1 + rng.gauss(0, 0.03)
        rows.append(r)
    rows[-1]["loss"] = math.nan
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    with store.lock:
        found = feed_store(AlertEngine(), store, 0, len(store))
    assert [(a.level, a.step, a.column, a.kind) for a in found] == [("E", 119, "loss", "nonfinite")]


def test_an_engine_dropped_is_freed_by_reference_counting() -> None:
    """A loss's flat test asks the grad norm's (its gate) without holding the engine: an engine dropped is freed
    without the collector (the MCP server makes one for every run a call reads). The gate still answers: a loss flat
    while the grad norm moves is no alert; flat with it, one."""
    import gc
    import weakref

    gc.collect()
    gc.disable()  # (nothing freed by a pass of the collector's own)
    try:
        eng = AlertEngine()
        moving = [a for s in range(60) for a in eng.update(s, {"loss": 0.25, "grad_norm": 1.0 + s / 100})]
        still = [a for s in range(60, 120) for a in eng.update(s, {"loss": 0.25, "grad_norm": 2.0})]
        assert [a.column for a in moving if a.kind == "flat"] == []
        assert [a.column for a in still if a.kind == "flat"] == ["loss", "grad_norm"]
        ref = weakref.ref(eng)
        del eng
        assert ref() is None
    finally:
        gc.enable()
