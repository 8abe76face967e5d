"""steptable.alerts.replaced: the alerts of the rows a resume replaced: read within a bounded budget of the
newest rows, the same NaN episodes the live engine said, finite-step counts exact or a lower bound, the loss column
the live engine bound."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.engine import AlertConfig
from steptable.alerts.history import scan
from steptable.alerts.replaced import read_replaced, replaced_alerts
from steptable.ingest import Follower, RunStore
from tests.alerts.helpers import clocked_rows, loss_rows
from tests.helpers import grpo_row, store_of, write_rows


@pytest.mark.parametrize(("spike_at", "said"), [(1000, True), (999, False)])
def test_every_detector_reads_the_newest_2000_replaced_rows_and_no_older_one(
    tmp_path: Path, spike_at: int, said: bool
) -> None:
    # a restart from step 500 of a 3,000-step run: the newest 2,000 replaced rows (steps 1000-2999) go through every
    # detector, so a grad norm spike at step 1000 is said; one at 999 is older, read for a NaN or inf only (the bound
    # that keeps a resume's cost fixed)
    rng = random.Random(40)
    rows = [grpo_row(rng, s) for s in range(3000)] + [grpo_row(rng, s) for s in range(500, 520)]
    rows[spike_at]["grad_norm"] = 40.0
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    spikes = [(a.step, a.column) for a in store.replaced if a.kind == "spike"]
    assert spikes == ([(spike_at, "grad_norm")] if said else [])


def test_a_nan_after_20000_finite_steps_from_the_first_row_is_counted_exactly(tmp_path: Path) -> None:
    # the loss finite from step 0 to 19999, NaN at 20000, long before the newest 2,000 replaced rows: the count back
    # to the first row is within the look back, so the alert says what the live engine said, not "19999+"
    rng = random.Random(41)
    rows = [grpo_row(rng, s) for s in range(23000)]
    for r in rows[20000:20010]:
        r["loss"] = math.nan
    live = [a.line() for a in scan([r["step"] for r in rows], {"loss": [r["loss"] for r in rows]})
            if a.kind == "nonfinite"]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows + [grpo_row(rng, s) for s in range(100, 120)])
    assert [a.line() for a in store.replaced] == [f"{line} (a row the resume at step 100 replaced)" for line in live]
    assert live == ["E step 20000 loss non-finite (NaN) after 20000 finite steps"]


def test_a_budget_of_one_row_reads_the_newest_replaced_row_through_every_detector(tmp_path: Path) -> None:
    # what is left of the store's budget, down to a single row, buys the newest replaced rows every test: a grad norm
    # spike in the last row before the restart is said
    rng = random.Random(49)
    rows = [grpo_row(rng, s) for s in range(400)]
    rows[-1]["grad_norm"] = 40.0
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    with store.lock:
        found, _ = replaced_alerts(store, 300, budget=1)
    assert [(a.step, a.column, a.kind) for a in found] == [(399, "grad_norm", "spike")]

def test_with_no_replay_budget_the_replaced_rows_are_read_for_nan_and_counted_as_none(tmp_path: Path) -> None:
    # past the budget a resume costs no replay: the store's budget counts 0 rows for it (so later rows win it back),
    # and the NaN that got the run restarted is still said
    rng = random.Random(42)
    rows = [grpo_row(rng, s) for s in range(400)]
    for r in rows[300:]:
        r["loss"] = math.nan
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    with store.lock:
        found, read = replaced_alerts(store, 100, budget=0)
    assert read == 0
    assert [(a.step, a.column, a.kind) for a in found] == [(300, "loss", "nonfinite")]


@pytest.mark.parametrize(("blip_from", "blip", "said"), [(500, 9, False), (500, 10, True), (495, 8, False),
                                                        (490, 10, True)])
def test_a_finite_blip_at_the_restart_step_ends_the_nan_episode_as_live(
    tmp_path: Path, blip_from: int, blip: int, said: bool
) -> None:
    # the loss NaN from step 400, finite for a few steps at the step the run is restarted from (500) or just before
    # it, then NaN again: fewer finite steps than the re-arm count (10) keep the episode (not said again), 10 end it
    # (a new one); the restart's replaced rows say what the live engine said from step 500 on
    rng = random.Random(43)
    rows = [grpo_row(rng, s) for s in range(3000)]
    for r in rows[400:blip_from] + rows[blip_from + blip:600]:
        r["loss"] = math.nan
    live = [f"{a.line()} (a row the resume at step 500 replaced)"
            for a in scan([r["step"] for r in rows], {"loss": [r["loss"] for r in rows]})
            if a.kind == "nonfinite" and a.step >= 500]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows + [grpo_row(rng, s) for s in range(500, 520)])
    assert [a.line() for a in store.replaced if a.kind == "nonfinite"] == live
    assert live == ([f"E step {blip_from + blip} loss non-finite (NaN) after {blip} finite steps (a row the resume at"
                     " step 500 replaced)"] if said else [])


def test_a_nan_episode_across_the_oldest_row_read_then_another_counts_from_its_end(tmp_path: Path) -> None:
    # NaN over steps 900-999, finite from 1000 (where the newest 2,000 replaced rows begin), NaN again at 1500: the
    # second one was finite for 500 steps, as the live engine said
    rng = random.Random(51)
    rows = [grpo_row(rng, s) for s in range(3000)]
    for r in rows[900:1000] + rows[1500:1510]:
        r["loss"] = math.nan
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows + [grpo_row(rng, s) for s in range(500, 520)])
    assert [(a.step, a.message.partition(" (a row")[0]) for a in store.replaced if a.kind == "nonfinite"] == [
        (900, "non-finite (NaN) after 900 finite steps"), (1500, "non-finite (NaN) after 500 finite steps")]


def test_a_reward_whose_first_cell_is_nan_was_finite_for_0_steps(tmp_path: Path) -> None:
    # the reward logged from step 800 on (the RL stage after SFT), NaN at once; the run restarted from step 500
    rng = random.Random(52)
    rows = [{k: v for k, v in grpo_row(rng, s).items() if s >= 800 or k != "reward"} for s in range(3000)]
    for r in rows[800:810]:
        r["reward"] = math.nan
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows + [grpo_row(rng, s) for s in range(500, 520)])
    assert [a.line() for a in store.replaced if a.kind == "nonfinite"] == [
        "E step 800 reward non-finite (NaN) after 0 finite steps (a row the resume at step 500 replaced)"]

def test_a_restart_of_a_healthy_run_reads_few_of_its_cells_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run 20,000 steps long restarted 20 steps back: the non-finite test's state at the restart shows in the last
    # few finite cells of each column, so the resume does not read the run's long history again (a cost that grew
    # with the file, at every resume)
    rng = random.Random(44)
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, [grpo_row(rng, s) for s in range(20_000)])
    f = Follower([path.parent], on_resume=read_replaced)
    f.scan()
    read: list[int] = []
    cells = RunStore.cells_between

    def counted(self: RunStore, key: str, start: int = 0, stop: int | None = None) -> list[Any]:
        out = cells(self, key, start, stop)
        read.append(len(out))
        return out

    monkeypatch.setattr(RunStore, "cells_between", counted)
    write_rows(path, [grpo_row(rng, s) for s in range(19_980, 19_990)])
    f.scan()
    (store,) = f.stores.values()
    assert store.resumes == [19_980] and 0 < sum(read) < 1000, sum(read)


def test_a_sparse_loss_finite_since_its_first_row_is_counted_exactly_past_the_look_back(tmp_path: Path) -> None:
    # a loss logged every 100th step, finite from step 0, NaN at 22,000 (older than the newest 2,000 replaced rows);
    # the run restarted from step 500. Its few cells before the restart are all it logged, so the count is exact
    # (what the live engine said), not "20000+"
    rng = random.Random(45)
    rows: list[dict[str, Any]] = [{"step": s, "grad_norm": 0.4 + abs(rng.gauss(0, 0.05)),
                                   **({"loss": 0.02 + rng.gauss(0, 0.01)} if s % 100 == 0 else {})}
                                  for s in range(24_200)]
    rows[22_000]["loss"] = math.nan
    live = [f"{a.line()} (a row the resume at step 500 replaced)"
            for a in scan([r["step"] for r in rows], {"loss": [r.get("loss") for r in rows]}) if a.kind == "nonfinite"]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows + [{"step": s, "grad_norm": 0.4} for s in range(500, 510)])
    assert [a.line() for a in store.replaced if a.kind == "nonfinite"] == live
    assert live == ["E step 22000 loss non-finite (NaN) after 22000 finite steps"
                    " (a row the resume at step 500 replaced)"]


@pytest.mark.parametrize("nan_at", [700, 2500])  # older than the newest 2,000 replaced rows, or among them
def test_a_reward_logged_as_counts_is_finite_for_the_nan_count(tmp_path: Path, nan_at: int) -> None:
    # the reward logged as [correct, sampled] completions, then NaN when the reward server failed: it was finite
    # for that many steps, the pairs counted as the live engine counts them; the run restarted from step 500
    rng = random.Random(46)
    rows = [{**grpo_row(rng, s), "reward": [sum(rng.random() < 0.4 for _ in range(64)), 64]} for s in range(3000)]
    for r in rows[nan_at:nan_at + 100]:
        r["reward"] = math.nan
    live = [f"{a.line()} (a row the resume at step 500 replaced)"
            for a in scan([r["step"] for r in rows], {"reward": [r["reward"] for r in rows]}) if a.kind == "nonfinite"]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows + [grpo_row(rng, s) for s in range(500, 510)])
    assert [a.line() for a in store.replaced if a.kind == "nonfinite"] == live
    assert live[0].startswith(f"E step {nan_at} reward non-finite (NaN) after {nan_at} finite steps")


def test_a_count_longer_than_the_look_back_is_a_lower_bound_never_a_wrong_exact_one(tmp_path: Path) -> None:
    # a loss logged every 2,500 steps, restarted from step 25,000, NaN at 27,500: the 20,000 rows read back hold
    # too few of its cells to tell where its finite stretch began, so the alert says "20000+" (the live engine,
    # which read every row, said 27500), not a shorter count as if exact
    rng = random.Random(47)
    rows: list[dict[str, Any]] = [{"step": s, "grad_norm": 0.4 + abs(rng.gauss(0, 0.05)),
                                   **({"loss": 0.02 + rng.gauss(0, 0.01)} if s % 2500 == 0 else {})}
                                  for s in range(29_600)]
    rows[27_500]["loss"] = math.nan
    rows += [{"step": s, "grad_norm": 0.4} for s in range(25_000, 25_010)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert [a.line() for a in store.replaced if a.kind == "nonfinite"] == [
        "E step 27500 loss non-finite (NaN) after 20000+ finite steps (a row the resume at step 25000 replaced)"]


def test_a_column_absent_for_longer_than_the_look_back_is_counted_as_a_lower_bound(tmp_path: Path) -> None:
    # a loss logged for the first 100 steps only, then NaN at step 25,100: no cell of it in the 20,000 rows read
    # back, so the count is "at least 20000" ("0+" read as if it had never been finite)
    rows: list[dict[str, Any]] = [{"step": s, "grad_norm": 0.4, **({"loss": 0.5} if s < 100 else {})}
                                  for s in range(27_500)]
    rows[25_100]["loss"] = math.nan
    rows += [{"step": s, "grad_norm": 0.4, "loss": 0.5} for s in range(200, 210)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert [a.line() for a in store.replaced if a.kind == "nonfinite"] == [
        "E step 25100 loss non-finite (NaN) after 20000+ finite steps (a row the resume at step 200 replaced)"]


def test_a_nan_long_after_an_older_one_counts_from_the_end_of_that_one(tmp_path: Path) -> None:
    # NaN at step 600 (older than the newest 2,000 replaced rows), finite again for 21,399 steps, NaN at 22,000
    # (among them); the restart from step 500 replaced both: each says the finite steps the live engine said
    rng = random.Random(48)
    rows = [grpo_row(rng, s) for s in range(23_900)]
    rows[600]["loss"] = rows[22_000]["loss"] = math.nan
    live = [f"{a.line()} (a row the resume at step 500 replaced)"
            for a in scan([r["step"] for r in rows], {"loss": [r["loss"] for r in rows]}) if a.kind == "nonfinite"]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows + [grpo_row(rng, s) for s in range(500, 510)])
    assert [a.line() for a in store.replaced if a.kind == "nonfinite"] == live
    assert [line.partition(" after ")[2].partition(" (")[0] for line in live] == ["600 finite steps",
                                                                                "21399 finite steps"]


def test_a_stall_before_a_restart_is_said_after_it(tmp_path: Path) -> None:
    # the run hung for an hour at step 600 (a stuck all-reduce), was killed and restarted from its step-500
    # checkpoint: a reader that meets the file afterwards is told of the hang among the replaced rows' alerts
    rng, t0 = random.Random(25), 1_700_000_000.0
    rows = clocked_rows(rng, range(600), t0) + clocked_rows(rng, range(600, 620), t0 + 9600) \
        + clocked_rows(rng, range(500, 650), t0 + 20_000)
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
    assert [a.line() for a in store.replaced] == [f"E step {nan_from} loss non-finite (NaN) after {nan_from} finite"
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
        "E step 800 loss non-finite (NaN) after 800 finite steps; also grad_norm (inf)"
        " (a row the resume at step 500 replaced)"]


def test_a_nan_before_the_read_and_another_after_a_recovery_are_both_said(tmp_path: Path) -> None:
    # NaN at 600-700 (older than the newest 2,000 rows), finite again, then NaN from 2900: two episodes, two lines
    rng = random.Random(30)
    rows = [grpo_row(rng, s) for s in range(3000)] + [grpo_row(rng, s) for s in range(500, 520)]
    for r in rows[600:1200] + rows[2900:3000]:
        r["loss"] = math.nan
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert [(a.step, a.kind) for a in store.replaced] == [(600, "nonfinite"), (2900, "nonfinite")]
    assert store.replaced[1].message.startswith("non-finite (NaN) after 1700 finite steps")


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
    assert len(store.resumes) == 152 and store._replaced._read < 21_000  # the budget ran out long before the crash
    assert [a.line() for a in store.replaced] == [
        "E step 250 loss non-finite (NaN) after 250 finite steps; also grad_norm (inf) (a row the resume at step 100"
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
        assert said == live == ["E step 500 train/loss non-finite (NaN) after 500 finite steps"]


def test_a_loss_key_left_by_dropped_rows_does_not_take_the_watch(tmp_path: Path) -> None:
    # a first attempt logged loss for 10 steps; the relaunch from step 0 logs train/loss (every 200th row): the old
    # key stays in the store with no cell, and train/loss is the one watched
    rows = [{"step": s, "loss": 0.5, "grad_norm": 0.4} for s in range(10)]
    rows += [{"step": s, "grad_norm": 0.4, **({"train/loss": math.nan if s >= 2850 else 0.5} if s % 200 == 50 else {})}
             for s in range(3000)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    crashed = rows[10:]
    for said, live in _said_vs_live(store, crashed, 100, ["loss", "train/loss"]):
        assert said == live == ["E step 2850 train/loss non-finite (NaN) after 2800 finite steps"]


def test_with_rearm_0_an_unbroken_nan_stretch_across_the_resume_is_one_episode(tmp_path: Path) -> None:
    # AlertConfig(rearm=0): any finite cell re-arms, but NaN after NaN is the same episode (the live engine said it
    # at its first row, before the resume)
    rows = [{"step": s, "loss": math.nan if 100 <= s < 130 else 0.5} for s in range(3000)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    for said, live in _said_vs_live(store, rows, 101, ["loss"], AlertConfig(rearm=0)):
        assert said == live == []


def test_many_resumes_read_a_bounded_number_of_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 short runs concatenated in one file (or 8 ranks' rows out of step): a replay at each resume made a
    summary 10-20x slower. The rows read for replaced alerts are bounded per run, and only watched columns are
    copied (a resume in a run of 1,500 keys built 5,000 whole rows)."""
    import steptable.alerts.replaced as replaced_mod
    from steptable.ingest.replacedrows import MAX_REPLACED_READ
    from steptable.ingest.store import RunStore

    read: list[int] = []
    feed = replaced_mod.feed_store
    monkeypatch.setattr(replaced_mod, "feed_store", lambda eng, store, a, b, *args, **kw: (
        read.append(b - a), feed(eng, store, a, b, *args, **kw))[1])
    monkeypatch.setattr(RunStore, "rows", lambda *a, **kw: pytest.fail("whole rows copied"))
    rng = random.Random(3)
    rows: list[dict[str, Any]] = []
    for _ in range(2000):
        rows += [{**r, **{f"k{j}": 1.0 for j in range(20)}} for r in loss_rows(range(100), rng)]
    write_rows(tmp_path / "cc" / "metrics.jsonl", rows)
    f = Follower([tmp_path], on_resume=read_replaced)
    f.scan()
    (store,) = f.stores.values()
    # a fixed amount and a fiftieth of the rows read (200,000): not a replay at each of the 1,999 resumes (460,000)
    assert len(store.resumes) == 1999 and MAX_REPLACED_READ <= sum(read) <= MAX_REPLACED_READ + 4_000 + 500
