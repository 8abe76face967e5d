"""What current trainers write, as their code writes it: TRL's PPO trainer (objective/*, loss/*_avg, val/* in
trainer_state.json), current verl's in-reward KL (actor/reward_kl_penalty), and an HF output directory holding a
GRPO run and a PPO run."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli

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
    path.mkdir(parents=True, exist_ok=True)
    state = {"global_step": entries[-1]["step"], "log_history": entries, "max_steps": 300}
    (path / "trainer_state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")  # bare NaN, as HF
    return path / "trainer_state.json"


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
    """Every watched key of a PPO run was unknown (alerts 0, exit 0 when its metrics turned NaN)."""
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
    """Both are HF Trainer state files (schema trl): laid out together, the PPO run was a row of nan under GRPO's
    columns, its own metrics pushed past the width."""
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
    """Current verl logs the in-reward KL as actor/reward_kl_penalty (critic/kl before): shown as kl, watched."""
    rng = random.Random(3)
    lines = []
    for step in range(1, 121):
        kl = 0.01 + rng.gauss(0, 0.001) if step != 100 else 1.6
        data = {"actor/pg_loss": rng.gauss(0, 0.01), "actor/entropy": 0.8, "actor/grad_norm": 0.3,
                "actor/ppo_kl": 1e-4, "actor/reward_kl_penalty": kl, "actor/reward_kl_penalty_coeff": 0.001,
                "critic/score/mean": 0.5, "response_length/mean": 400.0, "timing_s/step": 70.0,
                "training/global_step": step}
        lines.append(json.dumps({"step": step, "data": data}))
    path = tmp_path / "verl" / "qwen-ppo.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n")
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
