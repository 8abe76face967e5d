"""Edges of the alert engine that a user sees: when a stall starts and what it remembers, the hack/AUROC warning's
episodes, a crash vs an interruption, the age text, and the store readers (replays, replaced rows, clockless runs)."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.engine import (
    Alert,
    AlertConfig,
    AlertEngine,
    clockless_gap,
    end_alert,
    feed_store,
    fmt_age,
    replay_spans,
    resumed_engine,
    scan,
)
from steptable.alerts.replaced import read_replaced
from steptable.ingest import Follower, RunStore
from steptable.table import runinfo
from tests.helpers import grpo_row, store_of, write_rows


def _frac(rng: random.Random, p: float, n: int = 1024) -> list[int]:
    """A hack count over ``n`` sampled completions (the ``[hacked, sampled]`` cell a GRPO run logs)."""
    return [sum(rng.random() < p for _ in range(n)), n]


# --- crash vs interruption -------------------------------------------------------------------------------------


def test_a_crash_is_an_error_and_an_interruption_a_warning() -> None:
    # Ctrl-C / a scheduler's SIGTERM is someone stopping the run (W); an exception is the run failing (E, exit 1)
    closed = {"closed": 1_700_000_000.0}
    stopped = end_alert({**closed, "end": runinfo.end_of(KeyboardInterrupt())}, 812)
    crashed = end_alert({**closed, "end": runinfo.end_of(RuntimeError("CUDA error"))}, 812)
    assert stopped is not None and stopped.line() == "W step 812 run interrupted"
    assert crashed is not None and crashed.line() == "E step 812 run ended with RuntimeError"
    assert end_alert({**closed}, 812) is None  # a normal end says nothing


# --- age text --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "text"), [
    (99.4, "99s"), (99.6, "1.66m"), (100, "1.67m"),  # seconds up to 99, then minutes (never "100s")
    (5996, "99.9m"), (5999.5, "1.67h"), (6000, "1.67h"),  # minutes below 100 (never "100m"), then hours
    (172799, "48h"), (172800, "2d"),  # hours below 48, then days
])
def test_an_age_changes_unit_at_each_boundary(seconds: float, text: str) -> None:
    assert fmt_age(seconds) == text


def test_a_short_window_does_not_switch_the_stall_test_off() -> None:
    # AlertConfig(window=3) keeps 3 values for the spike tests; the stall test still needs its 5 row intervals
    eng = AlertEngine(AlertConfig(window=3))
    for s in range(10):
        eng.update(s, {"loss": 1.0}, wall_time=1000.0 + 10 * s)
    stalled = [a.line() for a in eng.check_stall(1090.0 + 3600)]
    assert stalled == ["W step 9 stalled: no row for 60m (360x median 10s/row)"]


def test_a_day_is_86400_seconds() -> None:
    # 202606.7 s is 2.34498 days: a stall message must not round it up to 2.35d
    assert fmt_age(202606.7) == "2.34d"


# --- stalls of a run whose rows carry a clock --------------------------------------------------------------------


def _walls(rng: random.Random, n: int, t0: float = 1_700_000_000.0, every: float = 10.0) -> list[float]:
    out = [t0]
    for _ in range(n - 1):
        out.append(out[-1] + every + rng.uniform(-1, 1))
    return out


def test_the_stall_check_starts_at_stall_min_rows_intervals() -> None:
    # five row intervals (stall_min_rows) are enough to know the run's pace: a pause of 10 minutes after them is a
    # stall, and the engine says it can judge stalls itself from then on (a reader then skips the file-age check)
    rng = random.Random(7)
    eng = AlertEngine()
    walls = _walls(rng, 6)
    for i, t in enumerate(walls[:5]):
        eng.update(i, grpo_row(rng, i), t)
    assert not eng.times_rows() and eng.check_stall(walls[4] + 600) == []  # four intervals: too few
    eng.update(5, grpo_row(rng, 5), walls[5])
    assert eng.times_rows()
    (a,) = eng.check_stall(walls[5] + 600)
    assert (a.level, a.step, a.kind) == ("W", 5, "stall") and a.message.startswith("stalled: no row for 10m (")


def test_a_pause_right_after_the_first_intervals_counts_towards_the_runs_rhythm() -> None:
    # an evaluation of 10 minutes at step 6, 30 and 54 of a run of 10 s steps: the first two pauses are said, the
    # third is the run's rhythm (two earlier pauses at least two thirds as long), also when the first one came at
    # the very first row the stall check could judge
    rng = random.Random(8)
    walls, t = [], 1_700_000_000.0
    for i in range(70):
        t += 600.0 if i in (6, 30, 54) else 10.0 + rng.uniform(-1, 1)
        walls.append(t)
    steps = list(range(70))
    rows = [grpo_row(rng, s) for s in steps]
    cols = {k: [r[k] for r in rows] for k in ("loss", "grad_norm", "reward")}
    found = [(a.level, a.step, a.kind) for a in scan(steps, cols, walls)]
    assert found == [("W", 5, "stall"), ("W", 29, "stall")]


def test_a_gap_of_exactly_the_stall_threshold_is_not_yet_a_stall() -> None:
    # the threshold is 10x the median interval (100 s here): past it is a stall, at it not (as the pauses the run
    # came back from are counted: the two tests must agree on one gap)
    eng = AlertEngine()
    for i in range(6):
        eng.update(i, {"loss": 0.5 - 0.01 * i}, 1000.0 + 10.0 * i)
    assert eng.check_stall(1050.0 + 100.0) == []
    assert [a.kind for a in eng.check_stall(1050.0 + 100.5)] == ["stall"]


def test_a_one_row_window_judges_the_pace_by_the_last_interval() -> None:
    # AlertConfig(window=1): the median row interval is the last one alone, not the last two
    eng = AlertEngine(AlertConfig(window=1, stall_min_rows=1, stall_min_s=0.0))
    for i, t in enumerate((0.0, 100.0, 101.0)):  # intervals 100 s then 1 s: the pace is now 1 s a row
        eng.update(i, {"loss": 0.5}, t)
    assert [a.kind for a in eng.check_stall(101.0 + 20.0)] == ["stall"]


# --- reward hacking vs a probe's AUROC ---------------------------------------------------------------------------


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


# --- scan and the store readers ------------------------------------------------------------------------------------


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


def test_a_resumed_engine_keeps_the_config_it_was_given(tmp_path: Path) -> None:
    # the tail/app's thresholds (e.g. a stricter reward drop) hold after a resume too, given or taken from the engine
    # the resumed one replaces
    rng = random.Random(22)
    store = store_of(tmp_path / "r" / "metrics.jsonl", [grpo_row(rng, s) for s in range(200)])
    cfg = AlertConfig(reward_rel_drop=0.1, window=100)
    with store.lock:
        assert resumed_engine(store, 150, cfg).config == cfg
        assert resumed_engine(store, 150, old=AlertEngine(cfg)).config == cfg
        assert resumed_engine(store, 150).config == AlertConfig()


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


def _clocked(rng: random.Random, steps: range, t0: float) -> list[dict[str, Any]]:
    return [{**grpo_row(rng, s), "ts": t0 + 10.0 * (s - steps[0]) + rng.uniform(0, 1)} for s in steps]


def test_restarts_after_crashes_are_not_the_runs_rhythm(tmp_path: Path) -> None:
    # a run restarted twice, each after two hours in the queue: those gaps are restarts, not pauses the run came back
    # from, so an hour without rows afterwards is still a stall
    rng, t0 = random.Random(24), 1_700_000_000.0
    rows = _clocked(rng, range(600), t0) + _clocked(rng, range(500, 560), t0 + 13_000) \
        + _clocked(rng, range(540, 700), t0 + 20_000)
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert store.resumes == [500, 540]
    eng = AlertEngine()
    with store.lock:
        assert feed_store(eng, store, 0, len(store), set(store.resumes), stalls=True) == []
        last = store.wall_times_between(len(store) - 1)[0]
    assert [a.kind for a in eng.check_stall(last + 3600)] == ["stall"]


def test_a_stall_before_a_restart_is_said_after_it(tmp_path: Path) -> None:
    # the run hung for an hour at step 600 (a stuck all-reduce), was killed and restarted from its step-500
    # checkpoint: a reader that meets the file afterwards is told of the hang among the replaced rows' alerts
    rng, t0 = random.Random(25), 1_700_000_000.0
    rows = _clocked(rng, range(600), t0) + _clocked(rng, range(600, 620), t0 + 9600) \
        + _clocked(rng, range(500, 650), t0 + 20_000)
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert [(a.level, a.step, a.kind) for a in store.replaced] == [("W", 599, "stall")]
    assert store.replaced[0].message.startswith("stalled: no row for 60.2m (")
    assert store.replaced[0].message.endswith("(a row the resume at step 500 replaced)")


@pytest.mark.parametrize("nan_from", [1000, 999, 700, 500])
def test_a_nan_that_began_before_the_newest_2000_replaced_rows_is_still_said(tmp_path: Path, nan_from: int) -> None:
    # the loss went NaN hours before someone restarted from step 500: that is why they restarted, whether it began
    # where the newest 2,000 replaced rows begin (1000), in the rows the bounded replay reads (999, 700) or before
    # them (500, the first replaced row)
    rng = random.Random(27)
    rows = [grpo_row(rng, s) for s in range(3000)] + [grpo_row(rng, s) for s in range(500, 520)]
    for r in rows[nan_from:3000]:
        r["loss"] = math.nan
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert [a.line() for a in store.replaced] == [f"E step {nan_from} loss non-finite (nan) after {nan_from} finite"
                                                  " steps (a row the resume at step 500 replaced)"]


def test_a_nan_that_began_in_the_kept_rows_is_not_said_again_as_replaced(tmp_path: Path) -> None:
    # NaN from step 300 on, restart from step 500: the live reader said it at step 300, in rows the resume keeps
    rng = random.Random(28)
    rows = [grpo_row(rng, s) for s in range(3000)] + [grpo_row(rng, s) for s in range(500, 520)]
    for r in rows[300:3000]:
        r["loss"] = math.nan
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert [a for a in store.replaced if a.kind == "nonfinite"] == []
    assert [(a.step, a.column) for a in scan(list(range(3000)), {"loss": [r["loss"] for r in rows[:3000]]})
            if a.kind == "nonfinite"] == [(300, "loss")]


def test_columns_that_went_nan_together_long_before_a_restart_are_one_line(tmp_path: Path) -> None:
    # a divergence: loss and grad norm NaN at once, the reward logged every 10th step (absent in between), and an
    # inf grad norm kept as such; the eval-only reward stays finite and says nothing
    rng = random.Random(29)
    rows = [grpo_row(rng, s) for s in range(3000)] + [grpo_row(rng, s) for s in range(500, 520)]
    for r in rows[:3000]:
        if r["step"] % 10:
            del r["reward"]
    for r in rows[800:3000]:
        r["loss"], r["grad_norm"] = math.nan, math.inf
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert [a.line() for a in store.replaced] == [
        "E step 800 loss non-finite (nan) after 800 finite steps; also grad_norm (inf)"
        " (a row the resume at step 500 replaced)"]


def test_a_nan_before_the_read_and_another_after_a_recovery_are_both_said(tmp_path: Path) -> None:
    # NaN at 600-700 (older than the newest 2,000 rows), finite again, then NaN from 2900: two episodes, two lines
    rng = random.Random(30)
    rows = [grpo_row(rng, s) for s in range(3000)] + [grpo_row(rng, s) for s in range(500, 520)]
    for r in rows[600:1200] + rows[2900:3000]:
        r["loss"] = math.nan
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert [(a.step, a.kind) for a in store.replaced] == [(600, "nonfinite"), (2900, "nonfinite")]
    assert store.replaced[1].message.startswith("non-finite (nan) after 1700 finite steps")


def _preempted(rng: random.Random, restarts: int) -> list[dict[str, Any]]:
    """A GRPO run on preemptible nodes: 300 steps, then ``restarts`` restarts from the checkpoint at step 100 each
    after 200 more steps (the file keeps every attempt)."""
    rows = [grpo_row(rng, s) for s in range(300)]
    for _ in range(restarts):
        rows += [grpo_row(rng, s) for s in range(100, 300)]
    return rows


def test_a_run_restarted_a_hundred_times_still_says_the_nan_it_was_last_restarted_over(tmp_path: Path) -> None:
    # past the replay budget the replaced rows are read once for a NaN or inf: the latest crash is still said
    rng = random.Random(31)
    rows = _preempted(rng, 150)
    crashed = [grpo_row(rng, s) for s in range(100, 300)]
    for r in crashed[150:]:
        r["loss"], r["grad_norm"] = math.nan, math.inf
    rows += crashed + [grpo_row(rng, s) for s in range(100, 110)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert len(store.resumes) == 152 and store._replay_read < 21_000  # the budget ran out long before the crash
    assert [a.line() for a in store.replaced] == [
        "E step 250 loss non-finite (nan) after 250 finite steps; also grad_norm (inf) (a row the resume at step 100"
        " replaced)"]


def test_past_the_budget_a_nan_already_on_before_the_replaced_rows_is_not_said_again(tmp_path: Path) -> None:
    # the loss went NaN at step 290 of an attempt that was then continued (not restarted) and restarted later:
    # the NaN began in rows the resume keeps, said live when they were read
    rng = random.Random(32)
    rows = _preempted(rng, 150)
    for r in rows[-10:]:
        r["loss"] = math.nan
    rows += [{**grpo_row(rng, s), "loss": math.nan} for s in range(300, 320)]
    rows += [grpo_row(rng, s) for s in range(310, 330)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert store.resumes[-1] == 310 and [a for a in store.replaced if a.kind == "nonfinite"] == []


def _nan_spans(rng: random.Random, n: int) -> set[int]:
    """Rows whose loss is NaN: a few episodes of random length, some with a short finite blip inside."""
    bad: set[int] = set()
    for _ in range(rng.randint(0, 4)):
        a = rng.randrange(n)
        bad.update(range(a, min(n, a + rng.choice([1, 5, 40, 700, 3000]))))
        if rng.random() < 0.5:
            bad -= set(range(a + 3, a + 3 + rng.choice([1, 2, 9, 10, 30])))
    return bad


@pytest.mark.parametrize("seed", range(24))
def test_the_nan_episodes_of_replaced_rows_are_those_the_live_engine_said(tmp_path: Path, seed: int) -> None:
    # whatever the NaN pattern (dense or a loss logged every 7th or 100th row, blips shorter or longer than the
    # re-arm count) and whether the replay budget is left or spent, the replaced rows' non-finite alerts are
    # exactly what one engine reading the crashed run's rows in order said from the resume step on
    from steptable.alerts.replaced import replaced_alerts

    rng = random.Random(seed)
    n, every = rng.randint(3000, 6000), rng.choice([1, 1, 7, 100])
    bad = _nan_spans(rng, n)
    rows = [{"step": i, "grad_norm": 0.4 + 0.01 * (i % 7),
             **({"loss": math.nan if i in bad else 0.5 + 0.001 * (i % 13)} if i % every == 0 else {})}
            for i in range(n)]
    at = rng.randrange(1, n)
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    truth = [a.line() for a in scan([r["step"] for r in rows], {"loss": [r.get("loss") for r in rows]})
             if a.kind == "nonfinite" and a.step >= at]
    for budget in (2000, 300, 0):
        with store.lock:
            got, _ = replaced_alerts(store, at, budget=budget)
        said = [a.line().removesuffix(f" (a row the resume at step {at} replaced)") for a in got
                if a.kind == "nonfinite"]
        assert said == truth, (budget, every, at)


def _said_vs_live(store: RunStore, rows: list[dict[str, Any]], at: int, keys: list[str], config: AlertConfig | None
                  = None) -> list[tuple[list[str], list[str]]]:
    """(replaced rows' non-finite lines, one engine's over the crashed rows from step ``at`` on) at three budgets."""
    from steptable.alerts.replaced import replaced_alerts

    cols = {k: [r.get(k) for r in rows] for k in keys}
    live = [a.line() for a in scan([r["step"] for r in rows], cols, config=config)
            if a.kind == "nonfinite" and a.step >= at]
    out = []
    for budget in (2000, 5, 0):
        with store.lock:
            got, _ = replaced_alerts(store, store.index_of_step(at), config, budget=budget)
        out.append(([a.line().removesuffix(f" (a row the resume at step {at} replaced)") for a in got
                     if a.kind == "nonfinite"], live))
    return out


def test_the_replaced_rows_watch_the_loss_column_the_live_engine_bound(tmp_path: Path) -> None:
    # the first row logs only train/loss, later rows loss too: the live engine watches train/loss (the first row
    # that had a loss), so its NaN from step 500 is what the replaced rows say, not the other column's silence
    rng = random.Random(33)
    rows = [{"step": s, "train/loss": math.nan if s >= 500 else 0.5 + rng.gauss(0, 0.01),
             **({"loss": 0.4 + rng.gauss(0, 0.01)} if s else {})} for s in range(3000)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    for said, live in _said_vs_live(store, rows, 100, ["loss", "train/loss"]):
        assert said == live == ["E step 500 train/loss non-finite (nan) after 500 finite steps"]


def test_a_loss_key_left_by_dropped_rows_does_not_take_the_watch(tmp_path: Path) -> None:
    # a first attempt logged loss for 10 steps; the relaunch from step 0 logs train/loss (every 200th row): the old
    # key stays in the store with no cell, and train/loss is the one watched
    rows = [{"step": s, "loss": 0.5, "grad_norm": 0.4} for s in range(10)]
    rows += [{"step": s, "grad_norm": 0.4, **({"train/loss": math.nan if s >= 2850 else 0.5} if s % 200 == 50 else {})}
             for s in range(3000)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    crashed = rows[10:]
    for said, live in _said_vs_live(store, crashed, 100, ["loss", "train/loss"]):
        assert said == live == ["E step 2850 train/loss non-finite (nan) after 2800 finite steps"]


def test_with_rearm_0_an_unbroken_nan_stretch_across_the_resume_is_one_episode(tmp_path: Path) -> None:
    # AlertConfig(rearm=0): any finite cell re-arms, but NaN after NaN is the same episode (the live engine said it
    # at its first row, before the resume)
    rows = [{"step": s, "loss": math.nan if 100 <= s < 130 else 0.5} for s in range(3000)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    for said, live in _said_vs_live(store, rows, 101, ["loss"], AlertConfig(rearm=0)):
        assert said == live == []


# --- runs whose rows carry no clock: the file's age against the run's own step time --------------------------------

_MTIME = 1_700_000_000  # the file's last write, whole seconds (exact as a float)


def _clockless(path: Path, rows: list[dict[str, Any]]) -> RunStore:
    write_rows(path, rows)
    os.utime(path, (_MTIME, _MTIME))
    f = Follower([path.parent], on_resume=read_replaced)
    f.scan()
    (store,) = f.stores.values()
    assert store.last_update == _MTIME and not store.has_clock
    return store


def _verl(rng: random.Random, step: int, step_s: float | None) -> dict[str, Any]:
    row = {"step": step, "actor/pg_loss": rng.gauss(0, 0.1), "critic/score/mean": 0.5 + rng.gauss(0, 0.05)}
    return row if step_s is None else {**row, "timing_s/step": step_s}


def _gaps(store: RunStore, *seconds: float) -> list[bool]:
    return [clockless_gap(store, _MTIME + s) is not None for s in seconds]


def test_a_short_clockless_run_is_judged_by_all_its_step_times(tmp_path: Path) -> None:
    # 30 steps of ~72 s (fewer than a window): an hour without a write is a stall, 10 minutes is a step under way
    rng = random.Random(31)
    store = _clockless(tmp_path / "v" / "exp.jsonl", [_verl(rng, s, 72 + rng.gauss(0, 2)) for s in range(1, 31)])
    assert _gaps(store, 600, 3600) == [False, True]


def test_rows_without_a_step_time_do_not_blind_the_clockless_check(tmp_path: Path) -> None:
    # eval rows between the train rows carry no step time (the store pads them with NaN): the pace is the train
    # rows' own, and an hour without a write is still a stall
    rng = random.Random(32)
    rows = [_verl(rng, s, 72 + rng.gauss(0, 2) if s % 2 == 0 else None) for s in range(1, 101)]
    store = _clockless(tmp_path / "v" / "exp.jsonl", rows)
    assert _gaps(store, 600, 3600) == [False, True]


def test_a_run_whose_last_progress_says_done_is_not_stalled_behind_an_eval_row(tmp_path: Path) -> None:
    # tinker's supervised loop: progress reaches 1 at step 100, then a final eval row (step 101) holds no progress
    rows: list[dict[str, Any]] = [{"step": s, "train_mean_nll": 1.0 / s, "time/total": 30.0, "progress": s / 100}
                                  for s in range(1, 101)]
    rows.append({"step": 101, "test/nll": 0.5})
    store = _clockless(tmp_path / "sl" / "metrics.jsonl", rows)
    assert _gaps(store, 3 * 3600) == [False]


def test_a_clockless_stall_waits_for_twice_the_longest_recent_step(tmp_path: Path) -> None:
    # 60 s steps with a 1,300 s validation + checkpoint every 50th: 30 minutes into a step may be the next one of
    # those, 50 minutes is past twice the longest
    rows = [_verl(random.Random(s), s, 1300.0 if s % 50 == 0 else 60.0) for s in range(1, 121)]
    store = _clockless(tmp_path / "v" / "exp.jsonl", rows)
    assert _gaps(store, 1800, 3000) == [False, True]


def test_a_clockless_gap_of_exactly_the_threshold_is_not_yet_a_stall(tmp_path: Path) -> None:
    # steps of exactly 72 s: the threshold is 720 s; at it not a stall (as the engine's own check), past it one
    rows = [_verl(random.Random(s), s, 72.0) for s in range(1, 41)]
    store = _clockless(tmp_path / "v" / "exp.jsonl", rows)
    assert _gaps(store, 720, 720.5) == [False, True]
    assert clockless_gap(store, _MTIME + 720.5) == (720.5, 72.0, "timing_s/step", 40)
