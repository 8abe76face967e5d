"""What each trainer writes, read by the Follower: verl's envelope, step key variants, tinker's bare NaN and
evaluation rows, torchtune's one metric a line, SB3's progress.json, retrain's layout."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import Follower, load
from tests.ingest.helpers import only, write_jsonl


def test_verl_envelope_and_truncation_on_launch(tmp_path: Path) -> None:
    path = tmp_path / "verl_proj" / "grpo_qwen.jsonl"
    rows = [{"step": 0, "data": {"val-core/gsm8k/acc/mean@1": 0.2}}]
    rows += [{"step": s, "data": {"actor/pg_loss": 0.1 * s, "critic/score/mean": 0.5, "timing_s/gen": 3.0},
              "elapsed_seconds": 10.0 * s} for s in range(1, 4)]
    write_jsonl(path, rows)
    f = Follower([tmp_path])
    f.scan()
    store = f.stores["verl_proj/grpo_qwen.jsonl"]
    assert store.arm == "grpo_qwen" and list(store.steps) == [0, 1, 2, 3]
    assert store.keys == ["step", "val-core/gsm8k/acc/mean@1", "actor/pg_loss", "critic/score/mean", "timing_s/gen",
                          "elapsed_seconds"]
    assert store.value(0, "actor/pg_loss") is None and store.value(2, "actor/pg_loss") == 0.2
    write_jsonl(path, [{"step": 2, "data": {"actor/pg_loss": 9.0}}])  # resumed launch: file truncated
    f.scan()
    assert list(store.steps) == [2] and store.value(0, "actor/pg_loss") == 9.0 and store.generation == 1


@pytest.mark.parametrize("key", ["iteration", "iter", "global_step", "training/global_step", "progress/batch",
                                 "_step", "time/total_timesteps"])
def test_step_key_variants(tmp_path: Path, key: str) -> None:
    rows: list[dict[str, Any]] = []
    for i in range(5):
        row: dict[str, Any] = {"loss": i * 1.0}
        if key == "training/global_step":
            row["training"] = {"global_step": i * 10}
        else:
            row[key] = i * 10
        rows.append(row)
    write_jsonl(tmp_path / "r" / "metrics.jsonl", rows)
    store = only(load(tmp_path))
    assert list(store.steps) == [0, 10, 20, 30, 40] and store.step_key == key


def test_step_wins_over_progress_batch(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "r" / "metrics.jsonl", [{"progress/batch": 7 - i, "step": i, "x": 1} for i in range(3)])
    assert list(only(load(tmp_path)).steps) == [0, 1, 2]


def test_tinker_bare_nan_eval_rows_config_and_side_files(tmp_path: Path) -> None:
    log = tmp_path / "tinker_run"
    rows: list[dict[str, Any]] = []
    for s in range(4):
        rows.append({"step": s, "progress/batch": s, "env/all/reward/total": 0.1 * s, "optim/kl_sample_train_v1":
                     float("nan"), "time/sample:mean": 1.5})
        if s % 2 == 0:
            rows.append({"step": s, "test/env/all/reward/total": 0.3, "time/run_evals": 4.0})
    write_jsonl(log / "metrics.jsonl", rows)
    (log / "config.json").write_text(json.dumps({"learning_rate": 4e-5, "model_name": "Qwen"}))
    write_jsonl(log / "checkpoints.jsonl", [{"name": "000002", "batch": 2, "state_path": "tinker://x"}])
    write_jsonl(log / "timing_spans.jsonl", [{"name": "sample", "start": 1.0, "end": 2.0}])
    write_jsonl(log / "iteration_000002" / "train_iteration_000002_rollout_summaries.jsonl",
                [{"iteration": 2, "total_reward": 1.0, "group_idx": 0, "traj_idx": 0}])
    (log / "code.diff").write_text("")
    f = Follower([tmp_path])
    f.scan()
    store = only(f.stores)
    assert store.run == "tinker_run/metrics.jsonl" and store.arm == "tinker_run"
    assert list(store.steps) == [0, 1, 2, 3] and store.resumes == []
    assert store.value(0, "test/env/all/reward/total") == 0.3 and store.value(1, "test/env/all/reward/total") is None
    assert math.isnan(store.value(3, "optim/kl_sample_train_v1")) and store.is_numeric("optim/kl_sample_train_v1")
    assert store.meta["config"]["model_name"] == "Qwen"
    assert sorted(store.side_files) == ["checkpoints", "config", "rollout_summaries", "timing_spans"]
    assert store.side_files["rollout_summaries"][0].parent.name == "iteration_000002"


def test_torchtune_single_metric_lines_merge(tmp_path: Path) -> None:
    rows = []
    for s in range(3):
        rows += [{"step": s, "loss": 1.0 + s}, {"step": s, "lr": 2e-5}, {"step": s, "tokens_per_second": float("nan")}]
    write_jsonl(tmp_path / "tt" / "log_1712345678.jsonl", rows)
    store = only(load(tmp_path))
    assert store.arm == "tt" and list(store.steps) == [0, 1, 2] and store.keys == ["step", "loss", "lr",
                                                                                    "tokens_per_second"]
    assert store.row(2)["loss"] == 3.0 and store.row(2)["lr"] == 2e-5


def test_sb3_progress_json(tmp_path: Path) -> None:
    rows = [{"time/total_timesteps": 2048 * (i + 1), "rollout/ep_rew_mean": "nan" if i == 0 else 1.0 * i,
             "time/fps": 900} for i in range(3)]
    write_jsonl(tmp_path / "ppo_cartpole" / "progress.json", rows)
    store = only(load(tmp_path))
    assert list(store.steps) == [2048, 4096, 6144] and math.isnan(store.value(0, "rollout/ep_rew_mean"))
    assert store.is_numeric("rollout/ep_rew_mean")


def test_retrain_layout_arm_resume_and_side_files(tmp_path: Path) -> None:
    run = tmp_path / "exp1"
    rows = [{"step": s, "rl/loss": 0.1 * s, "condition": "treat", "bp_action": "hold", "gt_s": [s, 8]}
            for s in range(8)]
    rows += [{"step": s, "rl/loss": 1.0 + s, "condition": "treat", "bp_action": "throttle", "gt_s": [s, 8]}
             for s in range(5, 10)]  # resumed from the checkpoint at step 5: appended again
    write_jsonl(run / "logs" / "train" / "metrics.jsonl", rows)
    write_jsonl(run / "emergence" / "generations.jsonl", [{"step": 0, "prompt": "p", "completion": "c", "reward": 1}])
    write_jsonl(run / "emergence" / "steps.jsonl", [{"step": 0, "surprisal": 1.0}])
    f = Follower([tmp_path])
    f.scan()
    train = f.stores["exp1/logs/train/metrics.jsonl"]
    assert train.arm == "exp1" and train.resumes == [5] and list(train.steps) == list(range(10))
    assert train.value(6, "bp_action") == "throttle" and train.value(2, "gt_s") == (2, 8)
    assert train.side_files["generations"] == [run / "emergence" / "generations.jsonl"]
    assert sorted(f.stores) == ["exp1/emergence/steps.jsonl", "exp1/logs/train/metrics.jsonl"]
