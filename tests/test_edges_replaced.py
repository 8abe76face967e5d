"""Edges a mutation run of steptable/replaced.py (the alerts of the rows a resume replaces) and steptable/keycols.py
(which columns a summary shows) left unpinned: the bounds of the replaced rows' reading, the count of finite steps
before a NaN far back, and which held or single-valued columns get a summary row."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.engine import scan
from steptable.alerts.replaced import read_replaced, replaced_alerts
from steptable.ingest import Follower, RunStore
from steptable.summary.report import summarize
from tests.helpers import grpo_row, run_cli, store_of, write_rows
from tests.trainer_logs import trainer_state

# --- the rows a resume replaces ---------------------------------------------------------------------------------


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
    assert live == ["E step 20000 loss non-finite (nan) after 20000 finite steps"]


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
    assert live == ([f"E step {blip_from + blip} loss non-finite (nan) after {blip} finite steps (a row the resume at"
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
        (900, "non-finite (nan) after 900 finite steps"), (1500, "non-finite (nan) after 500 finite steps")]


def test_a_reward_whose_first_cell_is_nan_was_finite_for_0_steps(tmp_path: Path) -> None:
    # the reward logged from step 800 on (the RL stage after SFT), NaN at once; the run restarted from step 500
    rng = random.Random(52)
    rows = [{k: v for k, v in grpo_row(rng, s).items() if s >= 800 or k != "reward"} for s in range(3000)]
    for r in rows[800:810]:
        r["reward"] = math.nan
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows + [grpo_row(rng, s) for s in range(500, 520)])
    assert [a.line() for a in store.replaced if a.kind == "nonfinite"] == [
        "E step 800 reward non-finite (nan) after 0 finite steps (a row the resume at step 500 replaced)"]

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
    assert live == ["E step 22000 loss non-finite (nan) after 22000 finite steps"
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
    assert live[0].startswith(f"E step {nan_at} reward non-finite (nan) after {nan_at} finite steps")


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
        "E step 27500 loss non-finite (nan) after 20000+ finite steps (a row the resume at step 25000 replaced)"]


def test_a_column_absent_for_longer_than_the_look_back_is_counted_as_a_lower_bound(tmp_path: Path) -> None:
    # a loss logged for the first 100 steps only, then NaN at step 25,100: no cell of it in the 20,000 rows read
    # back, so the count is "at least 20000" ("0+" read as if it had never been finite)
    rows: list[dict[str, Any]] = [{"step": s, "grad_norm": 0.4, **({"loss": 0.5} if s < 100 else {})}
                                  for s in range(27_500)]
    rows[25_100]["loss"] = math.nan
    rows += [{"step": s, "grad_norm": 0.4, "loss": 0.5} for s in range(200, 210)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert [a.line() for a in store.replaced if a.kind == "nonfinite"] == [
        "E step 25100 loss non-finite (nan) after 20000+ finite steps (a row the resume at step 200 replaced)"]


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


# --- which columns a summary shows (steptable/keycols.py) --------------------------------------------------------


def _table(text: str) -> dict[str, list[str]]:
    """Row name -> its cells, of a single run's text summary."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("col "))
    rows = [ln.split(" ") for ln in lines[start + 1:] if ln and not ln.startswith("alerts")]
    return {r[0]: r[1:] for r in rows}


def _write_trl(d: Path, steps: int, every: int, held: float | None = None) -> None:
    """A TRL GRPO trainer_state.json of ``steps`` steps, a fixed learning rate, an evaluation every ``every`` steps
    (its reward ``held`` at one value, if given)."""
    rng = random.Random(4)
    hist: list[dict[str, Any]] = []
    for step in range(1, steps + 1):
        acc = round(0.2 + 0.01 * step + rng.uniform(-0.02, 0.02), 4)
        hist.append({"step": step, "loss": round(rng.uniform(-0.01, 0.01), 5), "reward": round(acc + 0.5, 4),
                     "kl": round(0.0004 * step, 6), "entropy": round(0.7 - 0.002 * step + rng.uniform(0, 0.01), 4),
                     "learning_rate": 1e-6, "grad_norm": round(rng.uniform(0.05, 0.3), 4),
                     "completions/mean_length": round(300 + 8 * step + rng.uniform(0, 5), 2),
                     "epoch": round(step / steps, 4)})
        if step % every == 0:
            hist.append({"step": step, "epoch": round(step / steps, 4), "eval_loss": round(rng.uniform(-0.01, 0.01), 5),
                         "eval_reward": held if held is not None else round(acc + 0.45 + rng.uniform(0, 0.05), 4),
                         "eval_kl": round(0.0004 * step, 6), "eval_entropy": round(0.7 - 0.002 * step, 4)})
    p = d / f"checkpoint-{steps}" / "trainer_state.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(trainer_state(hist, steps, {"epoch": 1.0, "eval_steps": every})))


def _summary(d: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, list[str]]:
    rc, out, _ = run_cli(["summary", str(d)], capsys)
    assert rc == 0, out
    return _table(out)


def test_an_eval_reward_held_at_every_other_step_is_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # evaluated every 2nd step (half the rows), the evaluation reward never moved: a stalled run's headline, not a
    # setting like a fixed learning rate logged every row
    _write_trl(tmp_path / "grpo", 40, 2, held=0.5)
    rows = _summary(tmp_path / "grpo", capsys)
    assert rows["eval_rew"][:4] == [".5"] * 4 and "lr" not in rows, rows


def test_a_one_row_run_shows_each_declared_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # after its first logged step a run's single learning rate is all there is to see of it
    _write_trl(tmp_path / "grpo", 1, 5)
    assert _summary(tmp_path / "grpo", capsys)["lr"][:2] == ["1e-6", "1e-6"]


def test_a_fixed_learning_rate_is_a_setting_from_its_second_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two rows that agree already make it a constant: no row for it, while the varying length gets one
    _write_trl(tmp_path / "grpo", 2, 5)
    rows = _summary(tmp_path / "grpo", capsys)
    assert "lr" not in rows and "len" in rows, rows


def test_a_single_evaluation_shows_what_it_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # one evaluation at the end of the run: its KL and entropy are single values, each the news of that evaluation
    _write_trl(tmp_path / "grpo", 40, 40)
    rows = _summary(tmp_path / "grpo", capsys)
    assert rows["eval_kl"][:2] == [".016", ".016"] and "eval_entropy" in rows, rows


def test_a_negative_column_budget_shows_no_key_column(tmp_path: Path) -> None:
    # a library caller's max_columns below 0 is no budget at all, as 0 is (not all rows but one)
    rng = random.Random(6)
    store = store_of(tmp_path / "r" / "metrics.jsonl", [grpo_row(rng, s) for s in range(30)])
    for budget in (-1, 0):
        text = summarize([store], max_columns=budget)
        assert not [ln for ln in text.splitlines() if ln.startswith(("col ", "loss", "reward"))], (budget, text)
