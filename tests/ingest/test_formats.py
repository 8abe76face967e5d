"""What each trainer writes (see /work/shared/formats.md): verl, TinyZero, HF/TRL, tinker, torchtune, SB3, retrain."""

from __future__ import annotations

import json
import math
import os
import time
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


TINYZERO_LOG = """\
2025-01-01 12:00:00,000 INFO worker.py:1 -- Started a local Ray instance.
(main_task pid=4242) Training from scratch
\x1b[36m(main_task pid=4242)\x1b[0m step:0 - critic/kl:0.000 - actor/entropy_loss:0.693 - mfu/actor:0.12 - \
val/test_score/countdown:0.05
(main_task pid=4242) step:1 - critic/kl:0.001 - actor/entropy_loss:nan - mfu/actor:0.13
Traceback (most recent call last):
  File "/x/ray_trainer.py", line 910, in fit
    metrics.update({'step:': global_step})
ValueError: step:abc - not a metric
(WorkerDict pid=99) global_step:7 - loss:1.0
(main_task pid=4242) step:2 - critic/kl:0.002 - actor/entropy_loss:0.690 - mfu/actor:0.14
"""


def test_tinyzero_console_lines_amid_noise(tmp_path: Path) -> None:
    path = tmp_path / "countdown" / "train.log"
    path.parent.mkdir()
    path.write_text(TINYZERO_LOG)
    (tmp_path / "countdown" / "notes.txt").write_text("nothing to see\nstep: here\n")
    f = Follower([tmp_path])
    f.scan()
    store = only(f.stores)
    assert store.run == "countdown/train.log" and store.arm == "countdown" and store.kind == "console"
    assert list(store.steps) == [0, 1, 2]
    assert store.value(0, "val/test_score/countdown") == 0.05 and math.isnan(store.value(1, "actor/entropy_loss"))
    assert store.column("critic/kl").tolist() == [0.0, 0.001, 0.002] and "loss" not in store.keys
    with open(path, "a") as fh:
        fh.write("(main_task pid=4242) step:3 - critic/kl:0.003 - actor/entropy_loss:0.68 - mfu/actor:0.15\n")
    assert f.scan() == {"countdown/train.log"} and len(store) == 4


def test_console_log_becomes_a_run_when_metrics_appear(tmp_path: Path) -> None:
    path = tmp_path / "job" / "slurm-1.out"
    path.parent.mkdir()
    path.write_text("loading model...\n")
    f = Follower([tmp_path])
    assert f.scan() == set() and f.stores == {}
    with open(path, "a") as fh:
        fh.write("step:0 - actor/pg_loss:0.5\n")
    assert f.scan() == {"job/slurm-1.out"}


def trainer_state(path: Path, steps: int, nan: bool = True) -> None:
    history: list[dict[str, Any]] = []
    for s in range(1, steps + 1):
        history.append({"loss": 1.0 / s, "grad_norm": float("nan") if nan and s == 2 else 0.5,
                        "learning_rate": 1e-5, "epoch": s / 10, "step": s})
        if s % 2 == 0:
            history.append({"eval_loss": 0.9, "eval_runtime": 1.0, "epoch": s / 10, "step": s})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"global_step": steps, "log_history": history}, indent=2))


def test_trainer_state_newest_checkpoint_reread_whole(tmp_path: Path) -> None:
    run = tmp_path / "outputs" / "qwen-grpo"
    trainer_state(run / "checkpoint-2" / "trainer_state.json", 2)
    later = time.time() + 5
    trainer_state(run / "checkpoint-4" / "trainer_state.json", 4)
    os.utime(run / "checkpoint-4" / "trainer_state.json", (later, later))
    f = Follower([tmp_path / "outputs"])
    f.scan()
    store = f.stores["qwen-grpo/trainer_state.json"]
    assert store.kind == "trainer_state" and store.arm == "qwen-grpo"
    assert list(store.steps) == [1, 2, 3, 4] and store.path.parent.name == "checkpoint-4"
    assert store.row(1)["eval_loss"] == 0.9 and math.isnan(store.row(1)["grad_norm"])  # bare NaN, merged eval
    trainer_state(run / "checkpoint-6" / "trainer_state.json", 6)
    os.utime(run / "checkpoint-6" / "trainer_state.json", (later + 5, later + 5))
    gen = store.generation
    assert f.scan() == {"qwen-grpo/trainer_state.json"}
    assert list(store.steps) == list(range(1, 7)) and store.bad == []
    # the new checkpoint's history extends the last one: only its new entries are added (tail -f reprinted the whole
    # history, and --alerts-only repeated every alert, at each checkpoint)
    assert store.generation == gen and store.row(1)["eval_loss"] == 0.9 and math.isnan(store.row(1)["grad_norm"])
    trainer_state(run / "checkpoint-8" / "trainer_state.json", 3)  # another history: a restart from scratch
    os.utime(run / "checkpoint-8" / "trainer_state.json", (later + 10, later + 10))
    f.scan()
    assert list(store.steps) == [1, 2, 3] and store.generation == gen + 1


def test_a_half_written_newest_trainer_state_shows_the_older_one_while_following(tmp_path: Path) -> None:
    run = tmp_path / "run"
    trainer_state(run / "checkpoint-3" / "trainer_state.json", 3)
    newest = run / "checkpoint-5" / "trainer_state.json"
    trainer_state(newest, 5)
    newest.write_text(newest.read_text()[:300])  # the Trainer died while saving
    later = time.time() + 5
    os.utime(newest, (later, later))
    f = Follower([tmp_path])
    for _ in range(3):  # a follower polls: the same bytes failing twice are reported, then the older state shown
        f.scan()
    store = f.stores["run/trainer_state.json"]
    assert list(store.steps) == [1, 2, 3] and any("showing the older" in e for e in f.errors)


def test_trainer_state_half_written_is_retried(tmp_path: Path) -> None:
    path = tmp_path / "run" / "checkpoint-1" / "trainer_state.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"log_history": [{"loss": 1.0, "st')
    f = Follower([tmp_path])
    f.scan()
    store = f.stores["run/trainer_state.json"]
    assert len(store) == 0 and f.errors == []
    f.scan()  # still broken, unchanged: now it is reported, once
    f.scan()
    assert len(f.errors) == 1 and f.errors[0].startswith(f"{path}: invalid JSON")
    trainer_state(path, 3)
    f.scan()
    assert list(store.steps) == [1, 2, 3]


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


def test_arm_field_in_rows_wins(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "logs" / "metrics.jsonl", [{"step": 0, "arm": "routeA", "rew": 0.1}])
    assert only(load(tmp_path / "logs")).arm == "routeA"
