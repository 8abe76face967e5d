"""steptable.cli.summary: ``steptable summary`` end to end: the run's own table first (the schema's columns, then
evaluation scores), logged NaNs as present, held and bookkeeping columns, the column budget per trainer, stalls of
clockless runs, labels of runs that share an arm."""

from __future__ import annotations

import math
import os
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest

from steptable.cli.main import main
from steptable.table.formatting import display_width
from tests.cli.helpers import run_summary
from tests.helpers import age, grpo_rows, run_cli, write_rows
from tests.library_logs import write_lightning_rows, write_trainer_state, write_verl_rows
from tests.summary.helpers import held, lattice, summary_table
from tests.trainer_logs import (
    write_clockless_verl,
    write_lightning,
    write_routing,
    write_sb3,
    write_tinker,
    write_tinyzero_console,
    write_trl_state,
    write_verl,
)

Cap = pytest.CaptureFixture[str]


def _noisy(rng: random.Random, x: float) -> float:
    return x * (1 + rng.uniform(-0.05, 0.05))


def write_verl_real(path: Path, steps: int = 40, val_every: int = 10, seed: int = 3) -> None:
    """verl's file logger with verl's key order, every metric noisy as in a real run, validation every few steps."""
    rng = random.Random(seed)

    def val(s: int) -> dict[str, float]:
        return {"val-core/openai/gsm8k/reward/mean@1": _noisy(rng, 0.4 + s / 200),
                "val-aux/openai/gsm8k/score/mean@1": _noisy(rng, 0.4 + s / 200)}

    rows: list[tuple[int, dict[str, Any]]] = [(0, val(0))]
    for s in range(1, steps + 1):
        d: dict[str, Any] = {}
        for key, x in [("actor/entropy", 0.5), ("actor/kl_loss", 0.001 * s), ("actor/pg_loss", -0.01),
                       ("actor/pg_clipfrac", 0.002), ("actor/ppo_kl", 1e-4), ("actor/pg_clipfrac_lower", 1e-5),
                       ("actor/grad_norm", 0.3), ("perf/mfu/actor", 0.3), ("perf/max_memory_allocated_gb", 40),
                       ("perf/max_memory_reserved_gb", 60), ("perf/cpu_memory_used_gb", 80),
                       ("critic/score/mean", 0.5 + s / 300), ("critic/rewards/mean", 0.5 + s / 300),
                       ("critic/advantages/mean", 1e-3), ("critic/advantages/max", 1.7),
                       ("critic/advantages/min", -1.7), ("critic/returns/mean", 1e-3), ("critic/returns/max", 1.7),
                       ("critic/returns/min", -1.7), ("response_length/mean", 300), ("response_length/max", 1000),
                       ("response_length/min", 40), ("response_length/clip_ratio", 0.02),
                       ("prompt_length/mean", 100), ("prompt_length/max", 200), ("prompt_length/min", 50),
                       ("timing_s/gen", 32), ("timing_s/old_log_prob", 5), ("timing_s/ref", 5),
                       ("timing_s/update_actor", 15), ("timing_s/step", 60), ("perf/total_num_tokens", 4e5),
                       ("perf/time_per_step", 60), ("perf/throughput", 1200)]:
            d[key] = _noisy(rng, x)
        d.update({"actor/lr": 1e-6, "actor/kl_coef": 0.001, "training/global_step": s, "training/epoch": s // 20})
        if s % val_every == 0:
            d.update(val(s))
        rows.append((s, d))
    write_verl_rows(path, rows)


def write_trl_noisy(root: Path, steps: int = 40, nan_at: int = 20) -> None:
    """A TRL GRPOTrainer ``trainer_state.json``: noisy train entries (one NaN loss), eval entries every 10 steps."""
    rng = random.Random(5)
    hist: list[dict[str, Any]] = []
    for step in range(5, 5 * steps + 5, 5):
        e: dict[str, Any] = {
            "clip_ratio/high_max": 0.01, "clip_ratio/high_mean": 0.01, "clip_ratio/low_mean": 0.01,
            "clip_ratio/low_min": 0.01, "clip_ratio/region_mean": 0.01, "completions/clipped_ratio": 0.125,
            "completions/max_length": 256.0, "completions/max_terminated_length": 240.0,
            "completions/mean_length": 150.0 + step / 10, "completions/mean_terminated_length": 140.0,
            "completions/min_length": 20.0, "completions/min_terminated_length": 20.0, "entropy": 0.61 - step / 1000,
            "frac_reward_zero_std": 0.25, "grad_norm": 0.8, "kl": 0.0002 * step, "learning_rate": 1e-6,
            "loss": 0.0001 * step, "num_tokens": 12000.0 * step, "reward": 0.3 + step / 1000, "reward_std": 0.4,
            "rewards/accuracy_reward/mean": 0.2 + step / 1000, "rewards/accuracy_reward/std": 0.4,
            "rewards/format_reward/mean": 0.1, "rewards/format_reward/std": 0.3,
        }
        e = {k: _noisy(rng, v) for k, v in e.items()}
        e.update(step=step, epoch=round(step / 400, 4))
        if step == 5 * nan_at:
            e["loss"] = math.nan
        hist.append(e)
        if step % 50 == 0:
            hist.append({"epoch": round(step / 400, 4), "eval_loss": _noisy(rng, 0.02), "eval_runtime": 60.1,
                         "eval_reward": 0.4 + step / 1000, "eval_samples_per_second": 2.1, "step": step})
    write_trainer_state(root / f"checkpoint-{5 * steps}" / "trainer_state.json", hist, 5 * steps, logging_steps=5)


def _names(text: str) -> list[str]:
    """The row names of a one-run summary's table."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("col "))
    end = next(i for i, line in enumerate(lines) if line.startswith("alerts"))
    return [line.split()[0] for line in lines[start + 1 : end]]


def _tail_head(path: Path, capsys: Cap) -> list[str]:
    rc, out, _ = run_cli(["tail", str(path), "-n", "1", "--width", "0"], capsys)
    assert rc == 0
    return out.splitlines()[0].split()


def test_summary_leads_with_the_tables_columns_and_the_validation_score(tmp_path: Path, capsys: Cap) -> None:
    write_verl_real(tmp_path / "exp" / "metrics.jsonl")
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0
    names = _names(out)
    assert len(names) == 20
    for headline in ("val/reward@1", "resp_len", "t_step", "tok/s", "score", "pg_loss", "gnorm"):
        assert headline in names, (headline, names)
    # the lead is the table's own columns in the table's order (a constant lr left out), then the validation score
    head = _tail_head(tmp_path, capsys)
    lead = names[: names.index("val/reward@1") + 1]
    assert lead == [h for h in head if h in lead] and lead[:3] == head[1:4] and "lr" not in names
    assert names.index("pg_clipfrac_lower") > names.index("val/reward@1")


def test_summary_keeps_a_loss_with_one_nan_and_the_eval_columns(tmp_path: Path, capsys: Cap) -> None:
    write_trl_noisy(tmp_path / "grpo")
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0
    names = _names(out)
    assert len(names) == 20
    assert {"loss", "reward", "eval_loss", "eval_rew", "gnorm"} <= set(names), names
    assert names[0] == "loss"  # the schema's columns, then promoted ones, then the rest
    assert names.index("eval_rew") < names.index("accuracy_reward") < names.index("clip/high_mean")
    assert "eval_runtime" not in names  # hidden by the schema


def test_a_logged_nan_is_not_an_absence(tmp_path: Path, capsys: Cap) -> None:
    """No schema: the 20 most present varying keys; a key with one NaN logged is as present as the others."""
    rng = random.Random(1)
    rows = [{"step": s, **{f"m{j:02d}": rng.random() for j in range(22)}} for s in range(30)]
    rows[7]["m00"] = math.nan  # json.dumps writes the bare literal
    write_rows(tmp_path / "g" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0
    assert _names(out) == [f"m{j:02d}" for j in range(20)]


def test_summary_of_an_all_nan_loss_shows_nan(tmp_path: Path, capsys: Cap) -> None:
    rng = random.Random(2)
    write_rows(tmp_path / "r" / "metrics.jsonl",
               [{"step": s, "loss": math.nan, "reward": rng.random(), "x": rng.random()} for s in range(10)])
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    lines = out.splitlines()
    assert rc == 0 and "loss - NaN - - -" in lines, out


def test_summary_columns_and_max_columns_narrow(tmp_path: Path, capsys: Cap) -> None:
    write_verl_real(tmp_path / "exp" / "metrics.jsonl")
    head = _tail_head(tmp_path, capsys)
    _, out, _ = run_cli(["summary", str(tmp_path), "--max-columns", "3"], capsys)
    assert _names(out) == head[1:4]
    _, out, _ = run_cli(["summary", str(tmp_path), "--columns", "val-core*,t_step"], capsys)
    assert _names(out) == ["val/reward@1", "t_step"]
    _, out, _ = run_cli(["summary", str(tmp_path), "--max-columns", "0"], capsys)
    assert "col " not in out


def test_summary_arms_share_the_rows(tmp_path: Path, capsys: Cap) -> None:
    write_verl_real(tmp_path / "a" / "metrics.jsonl", val_every=10)
    write_verl_real(tmp_path / "b" / "metrics.jsonl", val_every=1000, seed=4)  # b: the step-0 validation only
    rc, out, _ = run_cli(["summary", str(tmp_path), "--max-columns", "20"], capsys)  # (not the arms' row budget)
    assert rc == 0
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("col "))
    table = [line.split() for line in lines[start + 1 :] if not re.match(r"([ab] )+alerts", line)]
    assert len(table) == 40
    assert [r[0] for r in table[1::2]] == ["b"] * 20 and [r[1] for r in table[0::2]] == ["a"] * 20
    assert "val/reward@1" in [r[0] for r in table]
    val = next(i for i, r in enumerate(table) if r[0] == "val/reward@1")
    assert table[val + 1][:3] == ["b", table[val + 1][1], table[val + 1][1]]  # one value: first == last


def test_the_summary_of_flat_thresholds_held_between_refreshes_reads_zero(tmp_path: Path, capsys: Cap) -> None:
    # the routing arm's tlo / thi: recomputed every 8 steps, logged every step; 800 flat steps, 10 seeds
    trends = []
    for seed in range(10):
        rng = random.Random(seed)
        tlo, thi = held(800, 8, rng), held(800, 8, rng)
        run = tmp_path / f"s{seed}" / "metrics.jsonl"
        write_rows(run, ({"step": s, "tlo": a, "thi": b + 1} for s, (a, b) in enumerate(zip(tlo, thi, strict=True))))
        rc, out, _ = run_cli(["summary", str(run)], capsys)
        assert rc == 0
        trends += [line.split()[-1] for line in out.splitlines() if line.startswith(("tlo", "thi"))]
    assert len(trends) == 20 and trends.count("=") >= 17, trends


def test_a_verl_run_left_for_hours_is_stalled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """summary said "upd 3h ago, alerts 0" of a verl run whose steps take 72 s: a run with a row clock of the same
    age read "stalled"."""
    path = write_clockless_verl(tmp_path / "v" / "exp.jsonl")
    age(path, 1200)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "W step 200 stalled: file untouched for 20m (" in out and "timing_s/step; or it ended)" in out
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and out.count("stalled: file untouched for 20m (") == 1, out
    age(path, 5 * 60)  # four step times: a step under way
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert "stalled" not in out and "alerts 0" in out, out
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and out == "", out


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
    write_trainer_state(d / f"checkpoint-{steps}" / "trainer_state.json", hist, steps, eval_steps=every)


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
    assert rows["eval_kl"][:2] == [".016", ".016"] and "ev_entropy" in rows, rows


def _tinker_eval(acc: float) -> dict[str, float]:
    # what tinker-cookbook's RL test-set evaluator logs: scores, and the size of the (fixed) test set
    return {"test/env/all/reward/total": 1.0 + acc, "test/env/all/correct": acc, "test/env/all/total_episodes": 64,
            "test/env/all/total_turns": 64, "test/env/all/total_ob_tokens": 11987,
            "test/env/all/turns_per_episode": 1.0, "test/env/all/ob_tokens_per_turn": 187.3, "time/run_evals": 31.5}


def _write_tinker_stalled(d: Path) -> None:
    rng = random.Random(7)
    rows: list[dict[str, Any]] = []
    for step in range(30):
        rows.append({"step": step, "progress/batch": step, "progress/done_frac": round((step + 1) / 30, 4),
                     "optim/lr": 4e-5, "env/all/reward/total": round(0.3 + rng.gauss(0, 0.05), 4),
                     "optim/entropy": round(0.8 + rng.gauss(0, 0.02), 3), "time/total": round(44 + rng.gauss(0, 2), 2),
                     **(_tinker_eval(0.25) if step == 0 else {})})  # the step-0 evaluation shares the training row
        if step == 15:
            rows.append({"step": step, **_tinker_eval(0.25)})  # a later evaluation row, same score
    write_rows(d / "metrics.jsonl", rows)


def test_eval_score_held_at_one_value_is_shown_but_eval_set_size_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an accuracy that did not move between evaluations is the news (training stalled); the test set's episode
    # count, turns per episode and prompt length are the same at every evaluation by construction
    _write_tinker_stalled(tmp_path / "run")
    rc, out, _ = run_cli(["summary", str(tmp_path / "run")], capsys)
    assert rc == 0, out
    rows = summary_table(out)
    assert [c for name, c in rows.items() if name.endswith("correct")] == [[".25", ".25", ".25", ".25", "="]], out
    assert [c for name, c in rows.items() if name.startswith("test_rew")] == [["1.25", "1.25", "1.25", "1.25", "="]]
    assert sorted(name for name in rows if name.startswith("test")) == ["test/correct", "test_rew"], out


def _write_trl_grpo(d: Path, steps: int = 40, every: int = 5) -> None:
    """A TRL GRPO trainer_state.json: at evaluation the clip ratios are 0 by construction (no old policy)."""

    rng = random.Random(4)
    hist: list[dict[str, Any]] = []
    for step in range(1, steps + 1):
        acc = round(0.2 + 0.01 * step + rng.uniform(-0.02, 0.02), 4)
        hist.append({"step": step, "loss": round(rng.uniform(-0.01, 0.01), 5), "reward": round(acc + 0.5, 4),
                     "reward_std": round(0.4 + rng.uniform(-0.05, 0.05), 4), "kl": round(0.0004 * step, 6),
                     "entropy": round(0.7 - 0.002 * step + rng.uniform(0, 0.01), 4), "learning_rate": 1e-6,
                     "grad_norm": round(rng.uniform(0.05, 0.3), 4), "completions/mean_length": round(300 + 8 * step, 2),
                     "completions/mean_terminated_length": round(280 + 8 * step, 2), "num_tokens": 40960.0 * step,
                     "frac_reward_zero_std": round(0.25 + rng.uniform(-0.1, 0.1), 4), "epoch": round(step / steps, 4),
                     "completions/clipped_ratio": round(0.1 - 0.001 * step + rng.uniform(0, 0.01), 4),
                     "rewards/accuracy_reward/mean": acc, **{f"clip_ratio/{k}": 0.0 for k in _CLIPS}})
        if step % every == 0:
            hist.append({"step": step, "epoch": round(step / steps, 4), "eval_loss": round(rng.uniform(-0.01, 0.01), 5),
                         "eval_reward": round(acc + 0.45 + rng.uniform(0, 0.05), 4),
                         "eval_reward_std": round(0.4 + rng.uniform(-0.05, 0.05), 4),
                         "eval_rewards/accuracy_reward/mean": round(acc + rng.uniform(0, 0.05), 4),
                         "eval_completions/mean_length": round(300 + 8 * step, 2),
                         "eval_completions/clipped_ratio": 0.0,
                         "eval_kl": round(0.0004 * step, 6), "eval_entropy": round(0.7 - 0.002 * step, 4),
                         "eval_runtime": round(12.5 + rng.uniform(0, 1), 3), "eval_samples_per_second": 10.24,
                         **{f"eval_clip_ratio/{k}": 0.0 for k in _CLIPS}})
    write_trainer_state(d / f"checkpoint-{steps}" / "trainer_state.json", hist, steps, eval_steps=every)


_CLIPS = ("low_mean", "low_min", "high_mean", "high_max", "region_mean")


def test_eval_bookkeeping_held_at_zero_does_not_push_out_varying_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GRPO's evaluation clip ratios are 0 at every evaluation by construction: not a headline, so the 20 rows go to
    # the evaluation KL and entropy and the training lengths and tokens, which move
    _write_trl_grpo(tmp_path / "grpo")
    rc, out, _ = run_cli(["summary", str(tmp_path / "grpo")], capsys)
    rows = summary_table(out)
    assert rc == 0 and not [k for k in rows if "clip" in k and rows[k][:4] == ["0"] * 4], out
    assert {"eval_kl", "ev_entropy", "num_tokens"} <= set(rows), out


NAN = float("nan")


def test_summary_does_not_list_the_files_own_step_counter_as_a_metric(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A file counting in ``iteration``: its steps are the header's range, not a metric row of their own."""
    write_rows(tmp_path / "run" / "metrics.jsonl", grpo_rows(range(20), step_key="iteration"))
    out = run_summary(tmp_path, capsys)
    heads = [line.split()[0] for line in out.splitlines()[2:]]
    assert "steps 0-19" in out and heads[:3] == ["loss", "reward", "kl"] and heads[4] == "alerts", out


def test_summary_reads_a_nan_loss_in_a_column_that_once_held_text(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A trainer that wrote "skipped" for the loss of one step: the column holds text as well, and a NaN loss 20
    steps later is still an error (not "alerts 0"); a text column asked for by name shows its value."""
    rows = grpo_rows(range(40))
    rows[10]["loss"] = "skipped"
    rows[30]["loss"] = NAN
    for r in rows:
        r["phase"] = "rollout"
    write_rows(tmp_path / "run" / "metrics.jsonl", rows)
    out = run_summary(tmp_path, capsys)
    assert "E step 30 loss non-finite (NaN)" in out, out
    out = run_summary(tmp_path, capsys, "--columns", "reward,phase")
    assert [("rollout" in line) for line in out.splitlines() if line.startswith("phase ")] == [True], out


def test_summary_of_a_clockless_run_reads_stalled_within_the_window_and_idle_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verl's file logger writes no clock: a run whose file was last written 20 minutes ago at 72 s a step (past 10
    step times, within the stall window) stalled; one last written 3 hours ago is idle since then, not an alert."""
    path = tmp_path / "verl" / "exp.jsonl"
    rng = random.Random(3)
    write_verl_rows(path, [(s, {"actor/pg_loss": rng.gauss(0.1, 0.02), "timing_s/step": 72.0 + rng.random()})
                           for s in range(1, 201)])
    t = time.time() - 20 * 60
    os.utime(path, (t, t))
    out = run_summary(tmp_path, capsys)
    assert "stalled" in out and "alerts 1 (1W)" in out, out
    t = time.time() - 3 * 3600
    os.utime(path, (t, t))
    out = run_summary(tmp_path, capsys)
    assert "idle since" in out and "stalled" not in out and "alerts 0" in out, out


def test_summary_and_alerts_of_runs_sharing_an_arm_name_their_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for exp in ("exp1", "exp2"):
        rows = [{"step": s, "loss": float("nan") if exp == "exp1" and s == 5 else 1.0} for s in range(10)]
        write_rows(tmp_path / exp / "seed0" / "metrics.jsonl", rows)
    _, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert "a: exp1/seed0/metrics.jsonl, b: exp2/seed0/metrics.jsonl: steps" in out, out  # one state: one line
    _, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert out.startswith("E [exp1/seed0/metrics.jsonl] step 5 loss non-finite"), out


def _rows_by_tag(out: str) -> dict[str, list[str]]:
    """`summary` text of several runs: arm tag -> the names of the rows it has (every tag from the header lines)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("col "))
    rows: dict[str, list[str]] = {tag: [] for line in lines[:start] for tag in re.findall(r"(?:^|, )([a-z]+): ", line)}
    name = ""
    for line in lines[start + 1 :]:
        parts = line.split()
        if re.match(r"([a-z]+ )+alerts ", line) or line.startswith("more columns:"):  # the table ended
            break
        if not line.startswith(" "):
            name, parts = parts[0], parts[1:]
        rows[parts[0]].append(name)
    return rows


def test_summary_of_verl_and_tinker_keeps_verls_validation_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_verl(tmp_path / "verl_run" / "exp.jsonl", steps=40)
    write_tinker(tmp_path / "tinker_run", steps=25)
    rc, alone, _ = run_cli(["summary", str(tmp_path / "verl_run")], capsys)
    assert rc == 0 and "val/reward@1" in alone  # what verl's run shows summarised alone
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0, err
    rows = _rows_by_tag(out)
    tag = next(line.split(":")[0] for line in out.splitlines() if ": exp:" in line or line.endswith("exp"))
    assert "val/reward@1" in rows[tag]


@pytest.fixture
def many_trainers(tmp_path: Path) -> Path:
    for i in range(2):
        write_verl(tmp_path / f"verl_{i}" / "exp.jsonl", steps=30, seed=i)
        write_tinyzero_console(tmp_path / f"tz_{i}" / "train.log", steps=20, seed=i)
        write_trl_state(tmp_path / f"trl_{i}", steps=15, seed=i)
        write_tinker(tmp_path / f"tinker_{i}", steps=15, seed=i)
        write_sb3(tmp_path / f"sb3_{i}", seed=i)
    write_lightning(tmp_path / "lightning_logs" / "version_0")
    write_routing(tmp_path / "routing", steps=20)
    return tmp_path


def test_summary_over_many_trainers_gives_every_run_rows(
    many_trainers: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run_cli(["summary", str(many_trainers)], capsys)
    assert rc == 0, err
    rows = _rows_by_tag(out)
    assert len(rows) == 14
    assert all(len(names) >= 3 for names in rows.values()), {t: len(n) for t, n in rows.items()}
    assert all(len(names) <= 20 for names in rows.values())


def test_summary_budget_is_per_trainer(many_trainers: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--max-columns 3: each run shows at most 3 rows, and every run some."""
    rc, out, _ = run_cli(["summary", "--max-columns", "3", str(many_trainers)], capsys)
    assert rc == 0
    rows = _rows_by_tag(out)
    assert all(1 <= len(names) <= 3 for names in rows.values()), rows


def test_summary_reads_absent_cells_as_absent_not_as_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows: list[dict[str, object]] = []
    for s in range(60):
        if s % 5 == 4:  # an evaluation row: other keys, no loss
            rows.append({"step": s, "accuracy": 0.5})
        else:
            rows.append({"step": s, "loss": 1.0 + 0.01 * (s % 3), "grad_norm": 1.0 + 0.01 * (s % 2)})
    write_rows(tmp_path / "sparse" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["summary", str(tmp_path / "sparse")], capsys)
    assert rc == 0 and "alerts 0" in out and "non-finite" not in out
    rows[40]["loss"] = math.nan  # a loss that really was non-finite (written as NaN) still alerts
    write_rows(tmp_path / "bad" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["summary", str(tmp_path / "bad")], capsys)
    assert "E step 40 loss non-finite" in out


def test_summary_aligns_wide_key_names_by_cells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for arm in ("a", "b"):
        write_rows(tmp_path / arm / "metrics.jsonl",
                   [{"step": s, "奖励": 0.5 + 0.01 * s, "loss": 1.0} for s in range(5)])  # fmt: skip
    rc, out, _ = run_cli(["summary", str(tmp_path), "--align"], capsys)
    table = [line for line in out.splitlines() if line.startswith(("col", "奖励", "loss", "   "))]
    assert rc == 0 and len(table) >= 3
    # (up to the trend, which is left-aligned on purpose)
    assert len({display_width(line.rstrip().rsplit(" ", 1)[0]) for line in table if not line.startswith("col")}) == 1


def test_summary_age_of_a_run_without_a_clock_is_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "old" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 0.5} for s in range(3)])
    os.utime(path, (time.time() - 3 * 86400, time.time() - 3 * 86400))
    rc, out, _ = run_cli(["summary", str(tmp_path / "old")], capsys)
    assert rc == 0 and "idle since " in out.splitlines()[0]  # 3 days quiet, nothing says it runs: idle, no alert


def test_summary_hands_the_alert_scan_only_the_columns_it_watches(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The alert scan is handed the role keys' columns only (every column of a 1M-row run as Python cells would
    take 1.75 GB beside a 0.7 GB store)."""
    import steptable.alerts.history as alerts
    from tests.helpers import run_cli, write_rows

    rows = ({"step": s, "loss": 1 / (s + 1), "rew": s / 50, **{f"m{j}": s * j for j in range(30)}} for s in range(50))
    write_rows(tmp_path / "r" / "metrics.jsonl", rows)
    seen: list[set[str]] = []
    real = alerts.scan

    def spy(steps: Any, columns: Any, *a: Any, **kw: Any) -> Any:
        seen.append(set(columns))
        return real(steps, columns, *a, **kw)

    monkeypatch.setattr(alerts, "scan", spy)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "loss" in out
    assert seen == [{"loss", "rew"}]


def test_runs_without_a_column_get_no_row_of_dashes_in_it(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Runs of different trainers share few keys: each run's row only in the columns it logged (rows of dashes
    would be half the tokens of such a summary); a column asked for by name still shows every run."""
    from tests.helpers import run_cli, write_rows

    write_rows(tmp_path / "a" / "metrics.jsonl", ({"step": s, "loss": 1 / (s + 1), "kl": s / 9} for s in range(30)))
    write_rows(tmp_path / "b" / "metrics.jsonl", ({"step": s, "loss": 2 / (s + 1)} for s in range(30)))
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    lines = out.splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("col ")) + 1 :]
    assert rc == 0 and "- - - - -" not in out
    assert [line.split()[0] for line in table[:3]] == ["loss", "b", "kl"]
    assert table[3].startswith("a alerts")  # kl: a's row only
    rc, out, _ = run_cli(["summary", str(tmp_path), "--columns", "kl"], capsys)
    assert rc == 0 and "b - - - - -" in out


def test_a_resumed_run_is_not_called_stalled_at_its_resume_point(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows replayed in step order: the crashed run's step 199, then the resumed run's 200, whose clock is after the
    crashed run's steps 200-260 and the restart. That gap is no 30-minute stall of the run."""
    import time

    from tests.helpers import run_cli, write_rows

    def loss(s: int) -> float:
        return 1 + 0.01 * (s % 3)

    t0 = time.time() - 10 * 460 - 600 - 5  # the last row 5 s ago
    crashed = [{"step": s, "ts": t0 + 10 * s, "loss": loss(s)} for s in range(261)]
    restart = t0 + 10 * 260 + 600
    resumed = [{"step": s, "ts": restart + 10 * (s - 200), "loss": loss(s)} for s in range(200, 400)]
    write_rows(tmp_path / "r" / "metrics.jsonl", [*crashed, *resumed])
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "resumed 200" in out and "stalled" not in out, out
    # a real pause inside a run is still said, at the row after it
    paused = [{"step": s, "ts": t0 + 10 * s + 3600 * (s >= 300), "loss": loss(s)} for s in range(360)]
    write_rows(tmp_path / "p" / "metrics.jsonl", paused)
    rc, out, _ = run_cli(["summary", str(tmp_path / "p")], capsys)
    assert rc == 0 and "step 299 stalled: no row for 60" in out, out  # (said at the last row before the gap)


def test_summary_of_a_flat_grpo_reward_reads_zero(tmp_path: Path, capsys: Cap) -> None:
    """3000 steps of no learning at all (a flat GRPO reward) read a tr% of 0, not +-10, in nearly every seed."""
    trends = []
    for seed in range(10):
        run = tmp_path / f"s{seed}" / "metrics.jsonl"
        write_rows(run, ({"step": s, "reward": x} for s, x in enumerate(lattice(seed, 0.3, n=3000))))
        rc, out, _ = run_cli(["summary", str(run)], capsys)
        assert rc == 0
        trends.append(next(line for line in out.splitlines() if line.startswith("reward")).split()[-1])
    assert trends.count("=") >= 8, trends  # (about 5% of flat series read a trend)


def test_summary_uses_the_tables_short_headers(
    every_trainer_log: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["summary", str(every_trainer_log["verl"])])
    out = capsys.readouterr().out
    assert rc == 0
    names = {line.split()[0] for line in out.splitlines()[2:] if line.strip()}
    assert "pg_loss" in names and not any("/" in n and n.startswith("actor") for n in names)


def test_summary_of_the_demo_run_in_text_and_md(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(["summary", str(demo_dir)], capsys)
    assert rc == 0 and "routeA" in out and "vanilla" in out
    rc, out, _ = run_cli(["summary", str(demo_dir), "--format", "md"], capsys)
    assert rc == 0 and "|" in out


def test_summary_align_pads_columns(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, plain, _ = run_cli(["summary", str(demo_dir / "routeA")], capsys)
    _, aligned, _ = run_cli(["summary", str(demo_dir / "routeA"), "--align"], capsys)
    assert "  " not in plain.splitlines()[2] and "  " in aligned.splitlines()[2]


def test_summary_leaves_out_a_step_key_of_another_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"iteration": 10 * i, "loss": 1.0 / (i + 1), "reward": 0.1 * i} for i in range(100)]
    write_rows(tmp_path / "it" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    names = [line.split()[0] for line in out.splitlines()[1:] if line and line[0] != " "]
    assert rc == 0 and "loss" in names and not {"iteration", "step"} & set(names), out


def test_summary_leaves_out_an_undeclared_epoch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Lightning's CSVLogger writes the epoch in every row: a counter of the steps the header gives, not a key
    column an agent pays for."""
    write_lightning(tmp_path / "lightning_logs" / "version_0")
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    names = [line.split()[0] for line in out.splitlines()[1:] if line and line[0] != " "]
    assert rc == 0 and {"val_loss", "train_loss"} <= set(names) and "epoch" not in names, out


def test_summary_alerts_on_the_loss_lightning_logs_as_train_loss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``self.log("train_loss", loss)`` (Lightning's docs and templates) is the run's loss: its NaN is an error."""
    rng = random.Random(0)
    write_lightning_rows(tmp_path / "lightning_logs" / "version_0",
                         [(s, {"train_loss": 2 - s / 40 + rng.gauss(0, 0.1) if s < 30 else math.nan, "epoch": s // 10})
                          for s in range(40)])
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "E step 30 train_loss non-finite (NaN)" in out, out


def test_summary_leaves_out_keys_a_schema_keeps_out_of_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verl's training/global_step and tinker's progress/batch are the step again: rows an agent pays for."""
    verl = {"critic/score/mean": 0.5, "actor/pg_loss": 0.1, "actor/entropy": 0.6, "critic/rewards/mean": 0.5}
    write_verl_rows(tmp_path / "v" / "exp.jsonl",
                    [(s, {**verl, "actor/pg_loss": 0.1 * s, "training/global_step": s}) for s in range(30)])
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "pg_loss" in out and "global_step" not in out, out


def test_summary_of_hf_runs_in_trackio_leaves_out_their_step_counter(
    hf_tracked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """transformers' trackio callback logs train/global_step in every row beside trackio's own step: the step
    again, which the header gives."""
    rc, out, _ = run_cli(["summary", str(hf_tracked / "trackio")], capsys)
    names = [line.split()[0] for line in out.splitlines()[1:] if line and line[0] != " "]
    assert rc == 0 and "loss" in names and not any("global_step" in n for n in names), out


def test_summary_rate_of_a_trackio_run_is_its_logging_pace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """trackio stamps a flush's rows with one time (every 0.5 s): the rate is the pace the run logged at, as its own
    clock measured it, within 2x (one step a flush would read about 20x slow)."""
    pytest.importorskip("trackio")
    from tests.ingest.writers import run_writer

    root = tmp_path / "trackio"
    run_writer(f"""
        import time, trackio
        trackio.init(project="pace", name="run")
        t0 = time.time()
        for i in range(150):
            trackio.log({{"loss": 1.0 / (i + 1)}})
            time.sleep(0.02)
        per = (time.time() - t0) / 150
        trackio.finish()
        open({str(tmp_path / "pace.txt")!r}, "w").write(repr(per))
    """, {"TRACKIO_DIR": str(root)})
    code, out, err = run_cli(["summary", str(root)], capsys)
    assert code == 0, err
    got = re.search(r"(\d+) step/min", out.splitlines()[0])
    assert got is not None, out
    want = 60 / float((tmp_path / "pace.txt").read_text())
    assert want / 2 < int(got.group(1)) < want * 2, (out, want)
