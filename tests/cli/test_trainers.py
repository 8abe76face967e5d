"""Each trainer's runs end to end: TRL's PPO, SFT and GRPO runs, verl's KL penalty, tinker's evaluation rows and
totals, retrain's emergence summary: the columns shown, what they are said to be, and what is alerted."""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import load
from steptable.schemafiles.resolve import by_schema
from steptable.schemas import SCHEMAS
from steptable.schemas.headers import short_headers
from tests.helpers import run_cli, write_rows
from tests.library_logs import write_trainer_state, write_verl_rows
from tests.trainer_logs import tinker_evaluation_row, tinker_iteration_row, write_retrain, write_tinker, write_verl

NAN = float("nan")


def _ppo_entry(step: int, rng: random.Random, kl: float) -> dict[str, Any]:
    """One log_history entry of trl's PPOTrainer: its metrics dict, then Trainer.log's epoch and step."""
    score = 0.5 + 0.4 * step / 300 + rng.gauss(0, 0.05)
    return {
        "eps": 12, "objective/kl": kl, "objective/entropy": 120 + rng.gauss(0, 3),
        "objective/non_score_reward": -0.05 * kl, "objective/rlhf_reward": score - 0.05 * kl, "objective/scores": score,
        "policy/approxkl_avg": abs(rng.gauss(0.002, 5e-4)), "policy/clipfrac_avg": abs(rng.gauss(0.03, 0.005)),
        "loss/policy_avg": rng.gauss(-0.01, 0.005), "loss/value_avg": abs(rng.gauss(0.1, 0.02)),
        "val/clipfrac_avg": 0.1, "policy/entropy_avg": 1.8 + rng.gauss(0, 0.02), "val/ratio": 1.0 + rng.gauss(0, 0.002),
        "val/ratio_var": 1e-4, "val/num_eos_tokens": 60, "lr": 3e-6 * (1 - step / 300), "episode": 64 * step,
        "epoch": round(step / 312.5, 4), "step": step,
    }


def _write_state(path: Path, entries: list[dict[str, Any]]) -> Path:
    return write_trainer_state(path / "trainer_state.json", entries, entries[-1]["step"])


def _ppo_run(path: Path, diverge: bool, seed: int = 0) -> Path:
    rng = random.Random(seed)
    entries = []
    for step in range(1, 301):
        kl = 2 + 20 * step / 300 + rng.gauss(0, 0.3)  # a healthy PPO run: summed KL grows to ~20
        entry = _ppo_entry(step, rng, kl)
        if diverge and step >= 290:
            for k in ("objective/kl", "objective/entropy", "objective/scores", "objective/rlhf_reward"):
                entry[k] = NAN
            entry["loss/policy_avg"] = NAN
        entries.append(entry)
    return _write_state(path, entries)


def _blocks(out: str) -> dict[str, list[str]]:
    """``tail -n 1`` text output by run: its header line and its row, under the run's title line."""
    lines = out.splitlines()
    return {line.split()[1]: lines[i + 1 : i + 3] for i, line in enumerate(lines) if line.startswith("──")}


def test_trl_ppo_nan_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PPO run's keys are watched: its metrics turning NaN is an error (not alerts 0 and exit 0)."""
    _ppo_run(tmp_path / "ppo" / "checkpoint-300", diverge=True)
    rc, out, _ = run_cli(["summary", str(tmp_path / "ppo")], capsys)
    assert "E step 290 loss/policy_avg non-finite" in out and "objective/kl" in out.split("alerts")[1]
    rc, out, _ = run_cli(["tail", str(tmp_path / "ppo"), "--alerts-only"], capsys)
    assert rc == 1 and "step 290" in out


def test_trl_ppo_summed_kl_growing_to_20_is_no_blow_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """objective/kl is summed over a response's tokens: 20 is healthy there, so the per-token KL levels (1, 10) do
    not apply; a jump over its own median still does."""
    _ppo_run(tmp_path / "ppo", diverge=False)
    rc, out, _ = run_cli(["tail", str(tmp_path / "ppo"), "--alerts-only"], capsys)
    assert rc == 0 and out == ""
    rng = random.Random(1)
    entries = [_ppo_entry(s, rng, 5 + rng.gauss(0, 0.2)) for s in range(1, 101)]
    entries[80]["objective/kl"] = 400.0  # x80 its median in one step
    _write_state(tmp_path / "jump", entries)
    rc, out, _ = run_cli(["tail", str(tmp_path / "jump"), "--alerts-only"], capsys)
    assert rc == 0 and "W [jump] step 81 objective/kl blow-up 400 (x" in out


def test_trl_ppo_columns_say_what_they_are(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _ppo_run(tmp_path / "ppo", diverge=False)
    rc, out, _ = run_cli(["legend", str(tmp_path / "ppo")], capsys)
    assert rc == 0
    lines = {line.split()[0]: line for line in out.splitlines()[1:] if line.strip()}
    assert "reward-model score" in next(v for k, v in lines.items() if "scores" in k)
    assert "not a validation metric" in next(v for k, v in lines.items() if "ratio_var" in k)
    assert all("(as logged)" not in v for k, v in lines.items() if "objective" in v or "val/" in v)


def _grpo_entries() -> list[dict[str, Any]]:
    rng = random.Random(2)
    return [{"loss": round(rng.gauss(0, 0.002), 4), "grad_norm": 0.1, "learning_rate": 1e-6, "reward": 1.0 + s / 100,
             "reward_std": 0.3, "frac_reward_zero_std": 0.2, "kl": 0.001, "entropy": 0.5,
             "completions/mean_length": 300.0, "completions/clipped_ratio": 0.02, "clip_ratio/region_mean": 0.0,
             "epoch": s / 100, "step": s} for s in range(10, 310, 10)]


def test_grpo_and_ppo_runs_in_one_directory_each_get_their_own_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both are HF Trainer state files (schema trl): each gets its own layout (together, the PPO run would be a
    row of nan under GRPO's columns, its own metrics pushed past the width)."""
    _write_state(tmp_path / "out" / "qwen-grpo", _grpo_entries())
    _ppo_run(tmp_path / "out" / "pythia-ppo", diverge=False)
    rc, out, _ = run_cli(["tail", str(tmp_path / "out"), "-n", "1", "--width", "0"], capsys)
    assert rc == 0
    blocks = _blocks(out)
    head, row = blocks["pythia-ppo"][0].split(), blocks["pythia-ppo"][1].split()
    assert "zero_sd" not in head and "scores" in head and len(head) == len(row)
    assert row.count("nan") == 0
    assert "zero_sd" in blocks["qwen-grpo"][0] and "scores" not in blocks["qwen-grpo"][0]


def test_current_verl_reward_kl_penalty_is_the_kl_column_and_watched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verl logs the in-reward KL as actor/reward_kl_penalty (critic/kl in older versions): shown as kl, watched."""
    rng = random.Random(3)
    rows = []
    for step in range(1, 121):
        kl = 0.01 + rng.gauss(0, 0.001) if step != 100 else 1.6
        rows.append((step, {"actor/pg_loss": rng.gauss(0, 0.01), "actor/entropy": 0.8, "actor/grad_norm": 0.3,
                            "actor/ppo_kl": 1e-4, "actor/reward_kl_penalty": kl, "actor/reward_kl_penalty_coeff": 0.001,
                            "critic/score/mean": 0.5, "response_length/mean": 400.0, "timing_s/step": 70.0,
                            "training/global_step": step}))
    path = write_verl_rows(tmp_path / "verl" / "qwen-ppo.jsonl", rows)
    rc, out, _ = run_cli(["tail", str(path), "-n", "1", "--columns", "step,kl"], capsys)
    assert rc == 0 and out.splitlines()[-2].split() == ["step", "kl"] and not math.isnan(float(out.split()[-1]))
    rc, out, _ = run_cli(["tail", str(path), "--alerts-only"], capsys)
    assert rc == 1 and "step 100 actor/reward_kl_penalty blow-up 1.6 (x" in out


def test_summed_entropy_following_the_response_length_is_no_alert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OnlineDPO logs only objective/entropy, summed over a response's tokens: responses growing from 100 to 400
    tokens at a flat per-token entropy made it an entropy rise (W)."""
    rng = random.Random(5)
    entries = []
    for step in range(1, 401):
        length = 100 + 300 * step / 400
        entries.append({
            "objective/entropy": 0.55 * length * (1 + rng.gauss(0, 0.03)), "objective/kl": 2.0 + rng.gauss(0, 0.1),
            "objective/scores": 0.5 + rng.gauss(0, 0.05), "loss/policy_avg": rng.gauss(0, 0.01),
            "val/contain_eos_token": 0.9, "lr": 5e-7, "episode": 8 * step, "epoch": step / 400, "step": step,
        })
    _write_state(tmp_path / "online_dpo", entries)
    rc, out, _ = run_cli(["tail", str(tmp_path / "online_dpo"), "--alerts-only"], capsys)
    assert rc == 0 and out == ""


def test_a_val_metric_of_an_hf_run_is_not_called_a_ppo_statistic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entries = [{**e, "val/loss": 0.4, "val/accuracy": 0.8} if e["step"] % 100 == 0 else e for e in _grpo_entries()]
    _write_state(tmp_path / "valstate", entries)
    rc, out, _ = run_cli(["legend", str(tmp_path / "valstate")], capsys)
    assert rc == 0 and "val/loss" in out and "not a validation metric" not in out


def test_an_sft_run_beside_grpo_and_dpo_runs_gets_its_own_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SFT logs almost only what every HF Trainer logs (loss, grad_norm, learning_rate, num_tokens, entropy): it
    joined whichever trainer's group came first, a dozen of nan columns in its table."""
    sft = [{"loss": 1.5 - s / 100, "grad_norm": 1.0, "learning_rate": 2e-5, "epoch": s / 100, "num_tokens": 5000 * s,
            "mean_token_accuracy": 0.5 + s / 1000, "entropy": 1.2, "step": s} for s in range(10, 110, 10)]
    dpo = [{"loss": 0.69 - s / 1000, "grad_norm": 5.0, "learning_rate": 5e-7, "epoch": s / 100, "num_tokens": 9000 * s,
            "rewards/chosen": s / 1000, "rewards/rejected": -s / 1000, "rewards/accuracies": 0.6,
            "rewards/margins": s / 500, "logps/chosen": -300, "logps/rejected": -310, "step": s}
           for s in range(10, 110, 10)]
    for name, entries in (("a-dpo", dpo), ("b-grpo", _grpo_entries()), ("c-sft", sft)):
        _write_state(tmp_path / "out" / name, entries)
    rc, out, _ = run_cli(["tail", str(tmp_path / "out"), "-n", "1", "--width", "0"], capsys)
    blocks = _blocks(out)
    assert rc == 0 and set(blocks) == {"a-dpo", "b-grpo", "c-sft"}
    for name, (head, row) in blocks.items():
        assert "nan" not in row.split(), (name, head, row)


def test_a_users_schema_over_trl_keeps_the_trainers_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A steptable.toml that extends trl still covers several trainers: a PPO run beside GRPO runs keeps its own
    layout under the user's schema too."""
    _write_state(tmp_path / "out" / "qwen-grpo", _grpo_entries())
    _ppo_run(tmp_path / "out" / "pythia-ppo", diverge=False)
    (tmp_path / "out" / "steptable.toml").write_text('[schema]\nname = "lab"\nextends = "trl"\n')
    rc, out, _ = run_cli(["tail", str(tmp_path / "out"), "-n", "1", "--width", "0"], capsys)
    blocks = _blocks(out)
    assert rc == 0 and set(blocks) == {"qwen-grpo", "pythia-ppo"}
    assert "nan" not in blocks["pythia-ppo"][1].split() and "scores" in blocks["pythia-ppo"][0]


def _tinker_async(path: Path) -> None:
    rows = [tinker_iteration_row(s) for s in range(7)]
    # lands after iterations 4 and 5: the evaluation takes longer than an iteration
    rows.insert(6, tinker_evaluation_row(4))
    write_rows(path, [*rows, *(tinker_iteration_row(s) for s in range(7, 10))])


def test_tinker_s_late_evaluation_row_keeps_the_iteration_s_time(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _tinker_async(tmp_path / "rl" / "metrics.jsonl")
    rc, out, _ = run_cli(["tail", str(tmp_path), "-n", "0", "--format", "csv", "--columns", "step,sec,test_rew"],
                         capsys)
    assert rc == 0, out
    rows = {r["step"]: r for r in csv.DictReader(io.StringIO(out))}
    assert list(rows) == [str(s) for s in range(10)]
    sec = [float(rows[s]["time/total"]) for s in ("3", "4", "5")]
    assert sec == [33.0, 34.0, 35.0] and float(rows["4"]["test/env/all/reward/total"]) == 0.75  # (not 75.3)


def test_tinker_s_training_client_step_is_kept_out_of_the_table(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """do_async_training logs ``"training_client/step": i_batch`` with ``step=i_batch``: the step again."""
    _tinker_async(tmp_path / "rl" / "metrics.jsonl")
    rc, out, _ = run_cli(["tail", str(tmp_path), "-n", "2", "--width", "0"], capsys)
    assert rc == 0 and out.split()[0] == "step" and "sec" in out and "training_cli" not in out, out
    rc, out, _ = run_cli(["tail", str(tmp_path), "-n", "1", "--columns", "step,training_client/step"], capsys)
    assert rc == 0 and out.splitlines()[1].split() == ["9", "9"], out


def blocks(out: str) -> dict[str, list[str]]:
    """Title line -> the header's words, for each block of a one-shot tail."""
    out_blocks: dict[str, list[str]] = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("──") and i + 1 < len(lines):
            out_blocks[line] = lines[i + 1].split()
    return out_blocks


def test_the_emergence_summary_is_not_shown_with_the_metrics_files_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for arm in ("grpo_none", "maxrl"):
        write_retrain(tmp_path / arm, steps=6, seed=len(arm))
    rc, out, err = run_cli(["tail", "-n", "1", str(tmp_path)], capsys)
    assert rc == 0, err
    got = blocks(out)
    summaries = [h for t, h in got.items() if "emer" in t]  # (a title is cut to the table's width)
    metrics = [h for t, h in got.items() if "emer" not in t]
    assert len(summaries) == 2 and len(metrics) == 2, out
    # the summary's own columns only (one table of both would show it with loss, correct, sepa... all nan)
    assert summaries[0] == summaries[1] == ["step", "reward", "corr_n"], out
    assert metrics[0] == metrics[1] and "loss" in metrics[0] and "corr_n" not in metrics[0], out
    groups = by_schema(list(load([tmp_path]).values()))
    assert [(s.name, len(g)) for s, g in groups] == [("retrain", 2), ("retrain", 2)]


#: the constant bookkeeping keys tinker-cookbook's metric_util logs ahead of the scores in an evaluation row
TINKER_CONSTANT = {
    "test/env/all/ob_tokens_per_turn": 140.2, "test/env/all/turns_per_episode": 1.0,
    "test/env/all/total_episodes": 512, "test/env/all/total_turns": 512,
}


def _rewrite(path: Path, edit: Any) -> None:
    """Each JSON line of ``path`` through ``edit`` (a function of the parsed line returning the line to write)."""
    lines = [json.dumps(edit(json.loads(line))) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("\n".join(lines) + "\n")


def _legend_keys(out: str) -> list[str]:
    """The keys of the legend's rule-described columns, in layout order (each line ends with ``(key)``)."""
    keys = []
    for line in out.split("kept out of")[0].splitlines():
        m = re.search(r"\(([^()\s]+)\)(?: \((?:higher|lower) is better\))?$", line)
        if m:
            keys.append(m.group(1))
    return keys


def _legend_lines(out: str) -> dict[str, str]:
    """Legend line by the key it names."""
    return {m.group(1): line for line in out.splitlines() if (m := re.search(r"\(([^()\s]+)\)", line))}


def _tinker_with_bookkeeping(tmp_path: Path) -> Path:
    d = tmp_path / "tinker"
    write_tinker(d, steps=12, eval_every=3)

    def edit(row: dict[str, Any]) -> dict[str, Any]:
        if "test/env/all/correct" not in row:
            return row
        return {"step": row["step"], **TINKER_CONSTANT, **{k: v for k, v in row.items() if k != "step"}}

    _rewrite(d / "metrics.jsonl", edit)
    return d


def test_tinker_constant_evaluation_keys_come_last_among_the_promoted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _tinker_with_bookkeeping(tmp_path)
    rc, out, _ = run_cli(["legend", str(d)], capsys)
    assert rc == 0
    keys = _legend_keys(out)
    promoted = [k for k in keys if k.startswith("test/")]
    assert promoted.index("test/env/all/correct") < min(promoted.index(k) for k in TINKER_CONSTANT)
    constant = [*TINKER_CONSTANT, "test/env/all/format_parse"]  # (the fixture's format_parse is always 1 too)
    assert promoted[-len(constant):] == constant  # equal scores keep file order
    assert keys.index(promoted[-1]) < keys.index("time/run_evals")  # promoted still ahead of the ranked keys


def test_tinker_tail_shows_the_evaluation_score_before_bookkeeping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At a width with room for one evaluation column beside the declared ones, it is the score."""
    d = _tinker_with_bookkeeping(tmp_path)
    rc, out, _ = run_cli(["tail", str(d), "-n", "1", "--width", "0"], capsys)
    header = out.splitlines()[0]
    declared = header[: header.index(" test/")]
    rc, out, _ = run_cli(["tail", str(d), "-n", "1", "--width", str(len(declared) + 1 + 18)], capsys)
    assert rc == 0
    names = out.splitlines()[0].split()
    assert [n for n in names if n.startswith("test/")] == ["test/correct"]


def _trl_state(path: Path) -> Path:
    """GRPOTrainer's trainer_state.json: train entries every 10 steps, eval entries (eval_ + the train keys, in
    sorted order as HF writes them) every 50."""
    history: list[dict[str, Any]] = []
    for step in range(10, 210, 10):
        t = step / 200
        history.append({
            "clip_ratio/high_max": 0.0, "clip_ratio/region_mean": 0.0, "completions/mean_length": 200 + 100 * t,
            "epoch": t, "grad_norm": 0.1 + 0.01 * (step % 3), "kl": 0.001 * t, "learning_rate": 1e-6 * (1 - t),
            "loss": 0.001 * (step % 5), "reward": 0.5 + t, "reward_std": 0.3, "frac_reward_zero_std": 0.1 + 0.1 * t,
            "rewards/accuracy_reward/mean": 0.2 + 0.5 * t, "step": step,
        })
        if step % 50 == 0:
            history.append({
                "epoch": t, "eval_clip_ratio/high_max": 0.0, "eval_clip_ratio/high_mean": 0.0,
                "eval_clip_ratio/low_mean": 0.0, "eval_clip_ratio/low_min": 0.0, "eval_clip_ratio/region_mean": 0.0,
                "eval_loss": 0.001 * step, "eval_reward": 0.4 + t,
                "eval_rewards/accuracy_reward/mean": 0.1 + 0.6 * t, "eval_runtime": 180.0, "step": step,
            })
    write_trainer_state(path / "trainer_state.json", history, 200)
    return path


def test_trl_eval_reward_function_comes_before_constant_clip_ratios(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _trl_state(tmp_path / "grpo")
    rc, out, _ = run_cli(["legend", str(d)], capsys)
    assert rc == 0
    keys = _legend_keys(out)
    clip = [keys.index(k) for k in keys if k.startswith("eval_clip_ratio/")]
    assert len(clip) == 5 and keys.index("eval_rewards/accuracy_reward/mean") < min(clip)


def test_verl_perf_rules_say_what_mfu_and_time_per_step_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_verl(tmp_path / "verl.jsonl")

    def edit(line: dict[str, Any]) -> dict[str, Any]:
        if "actor/pg_loss" in line["data"]:
            s = line["step"]
            line["data"].update({"perf/mfu/actor_infer": 0.2 + 0.01 * s, "perf/time_per_step": 70.0 + s,
                                 "perf/total_num_tokens": 1000 * s})
        return line

    rows = [edit(json.loads(line)) for line in path.read_text().splitlines()]
    write_verl_rows(path, [(r["step"], r["data"]) for r in rows])  # again through verl's file logger
    rc, out, _ = run_cli(["legend", str(path)], capsys)
    assert rc == 0
    lines = _legend_lines(out)
    assert "FLOPs utilisation" in lines["perf/mfu/actor_infer"] and "higher is better" in lines["perf/mfu/actor_infer"]
    time_line = next(line for line in out.splitlines() if "time_per_step" in line)
    assert "seconds" in time_line and "lower is better" in time_line and "throughput" not in time_line
    assert "throughput and memory counter" in lines["perf/total_num_tokens"]  # the rest keeps the general rule
    assert SCHEMAS["verl"].rule("perf/mfu/actor").desc.startswith("model FLOPs")  # type: ignore[union-attr]


def test_tinker_totals_are_not_described_as_averages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "tinker"
    write_tinker(d)

    def edit(row: dict[str, Any]) -> dict[str, Any]:
        if "env/all/total_episodes" in row:
            row.update({"env/all/total_ac_tokens": 30000 + row["step"], "env/gsm8k/total_turns": 64,
                        "env/gsm8k/reward/total": 0.3})
        return row

    _rewrite(d / "metrics.jsonl", edit)
    rc, out, _ = run_cli(["legend", str(d)], capsys)
    assert rc == 0
    lines = _legend_lines(out)
    for key in ("env/all/total_episodes", "env/all/total_ac_tokens", "env/gsm8k/total_turns"):
        assert "averaged" not in lines[key] and "sum" in lines[key], lines[key]
    assert "averaged over all trajectories" in lines["env/all/ob_tokens_per_turn"]
    assert "one logging tag" in lines["env/gsm8k/reward/total"]


def test_trl_eval_clip_ratio_header_says_clip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = ["clip_ratio/high_max", "clip_ratio/low_min", "eval_clip_ratio/high_max", "eval_clip_ratio/low_min",
            "eval_completions/mean_length", "eval_loss"]
    reserved = tuple(c.header for c in SCHEMAS["trl"].cols)
    hs = short_headers(keys, reserved=reserved)
    assert hs["eval_clip_ratio/high_max"] == "eval/clip/high_max"
    assert hs["eval_clip_ratio/low_min"] == "eval/clip/low_min"
    assert hs["clip_ratio/high_max"] == "clip/high_max"
    assert hs["eval_completions/mean_length"] == "eval/mean_length"  # other namespaces still fold into the lead
    assert len(set(hs.values())) == len(hs) and not set(hs.values()) & set(reserved)
    assert short_headers(["eval/clip_ratio/high_max"]) == {"eval/clip_ratio/high_max": "eval/clip/high_max"}
    d = _trl_state(tmp_path / "grpo")
    rc, out, _ = run_cli(["tail", str(d), "-n", "1", "--width", "0"], capsys)
    names = out.splitlines()[0].split()
    assert rc == 0 and "eval/clip/high_max" in names and "eval/high_max" not in names
