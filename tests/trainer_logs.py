"""Generators of training-log fixtures in each trainer's real on-disk format, quirks included.

Every writer is deterministic (seeded) and writes into a directory the caller owns (``tmp_path``). Values are
rounded so rendered output is stable across platforms. Where the trainer's own library is a test dependency (the
``[test]`` extra; verl: CI's ``pip install --no-deps verl``) the file is written by that library's writer, never
imitated: Stable-Baselines3, Lightning, transformers' TrainerState, verl's file logger. The others (retrain,
TinyZero, tinker-cookbook, MaxEnt's tables) are not installable here and are written as their code writes them.
Shared by the schema, ingest, command and app tests::

    from tests.trainer_logs import write_verl
    path = write_verl(tmp_path / "proj" / "exp.jsonl", steps=6)

Quirks reproduced (see /work/shared/formats.md):
- retrain: orjson-compact lines (non-finite -> null), one json.dumps fallback line with a bare NaN, bool and string
  columns, surprisal keys only from step 2 with ``*_entropy_*`` mirrors, resume duplicates of the last steps;
  emergence/steps.jsonl counts; emergence/generations.jsonl with several completions per step.
- verl: written by verl's own file logger: the ``{"step":N,"data":{...}}`` envelope (orjson: compact, NaN as null),
  step 0 with validation keys only.
- TinyZero: console ``step:N - key:value`` lines behind Ray's ``(main_task pid=N)`` prefix, among unrelated lines
  and a traceback; NaN printed as ``nan``.
- tinker: json.dumps with spaces and bare NaN; step-0 evaluation inside the training row, later evaluations as
  separate sparse rows repeating a step; config.json, checkpoints.jsonl, rollout summaries, timing spans.
- TRL: checkpoint-N/trainer_state.json (TrainerState.save_to_json: every key sorted, indent=2) whose log_history
  mixes train, eval and the final summary entry; bare NaN and null.
- MaxEnt-GRPO: trainer_state.json with train/ and eval/ keys, non-finite values dropped; rich_completions tables.
- routing: one metrics.jsonl per arm written the way StepLogger's RunWriter writes it, fractions as [n, d].
- generic: an ``iteration`` step key, sparse evaluation keys, a string phase, nested dicts, list values, a key with
  a space, and the three spellings of NaN.
- Stable-Baselines3's ``progress.csv`` (rewritten from the top when ``train/*`` appears, columns in set order) and
  ``monitor.csv``; Lightning's CSVLogger ``metrics.csv`` (sorted header, rewritten when the val keys appear).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from steptable.logger.rowjson import encode_row
from tests.library_logs import write_lightning_rows, write_sb3_rows, write_trainer_state, write_verl_rows

__all__ = [
    "routing_row", "write_all", "write_generic", "write_lightning", "write_maxent_state", "write_retrain",
    "write_routing", "write_sb3", "write_sb3_monitor", "write_tinker", "write_tinyzero_console", "write_trl_state",
    "write_verl",
]

NAN = float("nan")


def _r(x: float, nd: int = 4) -> float:
    return round(x, nd)


def _compact(row: Mapping[str, Any]) -> str:
    """orjson-style: no spaces, non-finite floats as null."""

    def fix(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    return json.dumps(fix(dict(row)), separators=(",", ":"))


def _write_lines(path: Path, lines: Iterable[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------- retrain


def _retrain_row(step: int, rng: random.Random, run: int) -> dict[str, Any]:
    correct = _r(min(0.1 + 0.08 * step + rng.uniform(-0.03, 0.03), 1.0), 3)
    row: dict[str, Any] = {
        "step": step,
        "condition": "maxrl+gtpo_sepa",
        "loss": _r(rng.uniform(-0.05, 0.05)),
        "reported_loss": None,
        "loss_is_placeholder": False,
        "backend_reports_sync_loss": True,
        "backend_preserves_token_advantages": False,
        "mean_reward": _r(correct * 0.9 + 0.05, 3),
        "correct_rate": correct,
        "running_correct_rate": _r(0.1 + 0.04 * step, 3),
        "sepa_lambda": _r(min(step / 10, 1.0), 2),
        "sepa_gate_open": step >= 3,
        "num_datums": 64 - (step % 3),
        "max_token_hit_rate": _r(0.2 - 0.015 * step, 3),
        "step_time_s": _r(30 + rng.uniform(-4, 4) + run, 2),
        "batch_size": 8 if step < 4 else 6,
        "group_size": 8,
        "bp_action": ["hold", "throttle", "increase"][step % 3],
        "bp_regime": "warmup" if step < 2 else "steady",
        "uncertainty_kind": "surprisal",
        "config_sha256": "9f2c1e" + "0" * 58,
        "rl/adv_std": _r(0.5 + rng.uniform(-0.1, 0.1), 3),
        "policy/kl": _r(0.001 * step, 5),
    }
    row["reported_loss"] = row["loss"]
    if step >= 2:  # surprisal keys appear only when the mode computes them
        for part in ("exec", "plan"):
            m, v = _r(rng.uniform(0.5, 2.5), 3), _r(rng.uniform(0.1, 0.9), 3)
            row[f"{part}_surprisal_mean"], row[f"{part}_surprisal_var"] = m, v
            row[f"{part}_entropy_mean"], row[f"{part}_entropy_var"] = m, v
    if step == 4:
        row["loss"] = NAN  # a non-finite loss: null in the orjson lines
    return row


def write_retrain(
    dir: Path, steps: int = 8, resume_at: int | None = None, legacy_entropy: bool = False, seed: int = 0
) -> dict[str, Path]:
    """``dir/logs/train/{metrics.jsonl, emergence/steps.jsonl, emergence/generations.jsonl}``.

    resume_at       the restarted run re-logs steps resume_at.. (default: steps - 2; pass steps for no resume)
    legacy_entropy  write only the ``*_entropy_*`` names (as runs without the surprisal names do)
    """
    rng = random.Random(seed)
    log_dir = Path(dir) / "logs" / "train"
    resume = steps - 2 if resume_at is None else resume_at
    metrics: list[str] = []
    summary: list[str] = []
    gens: list[str] = []
    for run, span in enumerate((range(steps), range(resume, steps))):
        for step in span:
            row = _retrain_row(step, rng, run)
            if legacy_entropy:
                row = {k: v for k, v in row.items() if "_surprisal_" not in k}
            if step == 5 and run == 0:  # the json.dumps fallback path writes the bare literal
                row["sepa_lambda"] = NAN
                metrics.append(json.dumps(row))
            else:
                metrics.append(_compact(row))
            total = 16
            summary.append(_compact({
                "step": step, "mean_reward": row["mean_reward"], "correct_count": round(row["correct_rate"] * total),
                "total_count": total, "condition": row["condition"],
            }))
            for j in range(3):
                gens.append(_compact({
                    "step": step, "prompt": f"Q{step}.{j}: what is {step} + {j}?"[:200],
                    "completion": f"<think>add</think> {step + j}"[:500], "reward": float(j != 2),
                    "num_tokens": 12 + j,
                    "top_surprisal_tokens": [{"pos": 3, "surprisal": 4.25, "token": "add"}],
                }))
    return {
        "log_dir": log_dir,
        "metrics": _write_lines(log_dir / "metrics.jsonl", metrics),
        "steps": _write_lines(log_dir / "emergence" / "steps.jsonl", summary),
        "generations": _write_lines(log_dir / "emergence" / "generations.jsonl", gens),
    }


# ------------------------------------------------------------------------------------------------------- verl


def _val(step: int) -> dict[str, float]:
    return {
        "val-core/openai/gsm8k/reward/mean@1": _r(0.3 + 0.05 * step, 3),
        "val-aux/openai/gsm8k/reward/std@1": _r(0.4 - 0.01 * step, 3),
        "val-aux/num_turns/mean": 1.0,
    }


def write_verl(path: Path, steps: int = 6, val_every: int = 3, seed: int = 1) -> Path:
    """``path`` written by verl's own file logger (``verl_tracking``): step 0 validation only, then one line per step
    (a NaN grad norm at step 2, written null by its orjson)."""
    rng = random.Random(seed)
    rows: list[tuple[int, dict[str, Any]]] = [(0, _val(0))]
    for step in range(1, steps + 1):
        score = _r(0.2 + 0.06 * step + rng.uniform(-0.02, 0.02), 3)
        data: dict[str, Any] = {
            "actor/pg_loss": _r(rng.uniform(-0.02, 0.02), 5),
            "actor/entropy": _r(1.2 - 0.05 * step, 3),
            "actor/kl_loss": _r(0.001 * step, 5),
            "actor/ppo_kl": _r(rng.uniform(0, 1e-3), 6),
            "actor/pg_clipfrac": _r(rng.uniform(0, 0.01), 5),
            "actor/grad_norm": _r(rng.uniform(0.1, 0.5), 3),
            "actor/lr": 1e-6,
            "critic/score/mean": score,
            "critic/score/max": 1.0,
            "critic/score/min": 0.0,
            "critic/rewards/mean": score,
            "critic/rewards/max": 1.0,
            "critic/rewards/min": 0.0,
            "critic/advantages/mean": 0.0,
            "critic/advantages/max": _r(1.5 + rng.uniform(0, 0.3), 3),
            "critic/advantages/min": _r(-1.5 - rng.uniform(0, 0.3), 3),
            "critic/returns/mean": score,
            "response_length/mean": _r(350 + 10 * step, 1),
            "response_length/max": 1024.0,
            "response_length/min": 40.0,
            "response_length/clip_ratio": _r(0.05 - 0.005 * step, 4),
            "prompt_length/mean": 120.5,
            "prompt_length/clip_ratio": 0.0,
            "timing_s/gen": _r(40 + rng.uniform(-3, 3), 2),
            "timing_s/old_log_prob": _r(6 + rng.uniform(-1, 1), 2),
            "timing_s/ref": _r(5 + rng.uniform(-1, 1), 2),
            "timing_s/adv": 0.12,
            "timing_s/update_actor": _r(20 + rng.uniform(-2, 2), 2),
            "timing_s/step": _r(72 + rng.uniform(-4, 4), 2),
            "timing_per_token_ms/gen": _r(0.05 + rng.uniform(0, 0.01), 4),
            "timing_per_token_ms/update_actor": _r(0.02 + rng.uniform(0, 0.01), 4),
            "perf/mfu/actor": _r(0.31 + rng.uniform(-0.02, 0.02), 3),
            "perf/throughput": _r(1800 + rng.uniform(-50, 50), 1),
            "perf/max_memory_allocated_gb": 61.2,
            "training/global_step": step,
            "training/epoch": 0,
        }
        if step == 2:
            data["actor/grad_norm"] = NAN
        if step % val_every == 0:
            data.update(_val(step))
        rows.append((step, data))
    return write_verl_rows(Path(path), rows)


# ---------------------------------------------------------------------------------------------------- TinyZero


def _console(step: int, metrics: Mapping[str, float]) -> str:
    parts = [f"step:{step}"] + [f"{k}:{'nan' if v != v else f'{v:.3f}'}" for k, v in metrics.items()]
    return " - ".join(parts)


def write_tinyzero_console(path: Path, steps: int = 5, val_every: int = 2, seed: int = 2) -> Path:
    """A tee'd TinyZero console log: Ray-prefixed ``step:N - k:v`` lines among other output."""
    rng = random.Random(seed)
    pre = "(main_task pid=48213) "
    lines = [
        "2025-02-01 10:00:00,001\tINFO worker.py:1821 -- Started a local Ray instance.",
        f"{pre}Initial validation metrics: {{'val/test_score/countdown': 0.012}}",
        pre + _console(0, {"val/test_score/countdown": 0.012}),
        "(WorkerDict pid=48377) [rank0]: flash attention is not available, using eager",
    ]
    for step in range(1, steps + 1):
        m: dict[str, float] = {
            "critic/kl": _r(0.0005 * step, 5),
            "critic/kl_coeff": 0.001,
            "actor/entropy_loss": _r(0.9 - 0.04 * step, 3),
            "actor/pg_loss": _r(rng.uniform(-0.03, 0.03), 4),
            "actor/pg_clipfrac": _r(rng.uniform(0, 0.01), 4),
            "actor/ppo_kl": _r(rng.uniform(0, 0.001), 5),
            "actor/grad_norm": _r(rng.uniform(0.1, 0.4), 3),
            "actor/lr": 1e-6,
            "critic/score/mean": _r(0.05 * step, 3),
            "critic/rewards/mean": _r(0.05 * step - 0.001, 3),
            "critic/advantages/mean": 0.0,
            "response_length/mean": _r(180 + 9 * step, 1),
            "response_length/clip_ratio": 0.0,
            "mfu/actor": _r(0.22 + rng.uniform(-0.02, 0.02), 3),
            "timing_s/gen": _r(25 + rng.uniform(-2, 2), 2),
            "timing_s/step": _r(55 + rng.uniform(-3, 3), 2),
        }
        if step == 3:
            m["actor/grad_norm"] = NAN
        if step % val_every == 0:
            m["val/test_score/countdown"] = _r(0.012 + 0.03 * step, 3)
        lines.append(pre + _console(step, m))
        if step == 2:
            lines += [
                "Traceback (most recent call last):",
                '  File "reward.py", line 41, in compute_score',
                "ZeroDivisionError: division by zero",
                f"{pre}epoch 0, step {step}",
            ]
    return _write_lines(Path(path), lines)


# ------------------------------------------------------------------------------------------------------ tinker


def _tinker_test(step: int) -> dict[str, Any]:
    return {
        "test/env/all/reward/total": _r(0.2 + 0.05 * step, 3),
        "test/env/all/format_parse": 1.0,
        "test/env/all/correct": _r(0.2 + 0.05 * step, 3),
        "time/run_evals": _r(30 + step, 2),
    }


def write_tinker(dir: Path, steps: int = 6, eval_every: int = 3, seed: int = 3) -> dict[str, Path]:
    """A tinker-cookbook RL log_path: metrics.jsonl plus config, checkpoints, rollout summaries, timing spans."""
    rng = random.Random(seed)
    d = Path(dir)
    lines = []
    for step in range(steps):
        row: dict[str, Any] = {
            "step": step,
            "progress/batch": step,
            "progress/done_frac": _r((step + 1) / steps, 4),
            "optim/lr": 4e-5,
            "env/all/reward/total": _r(0.15 + 0.06 * step + rng.uniform(-0.02, 0.02), 4),
            "env/all/format_parse": _r(0.9 + 0.01 * step, 3),
            "env/all/correct": _r(0.15 + 0.06 * step, 3),
            "env/all/ac_tokens_per_turn": _r(240 + 5 * step, 1),
            "env/all/ob_tokens_per_turn": 88.0,
            "env/all/turns_per_episode": 1.0,
            "env/all/total_episodes": 128,
            "env/all/by_group/frac_mixed": _r(0.5 + rng.uniform(-0.1, 0.1), 3),
            "env/all/by_group/frac_all_good": _r(0.05 * step, 3),
            "env/all/by_group/frac_all_bad": _r(0.45 - 0.05 * step, 3),
            "optim/kl_sample_train_v1": _r(rng.uniform(-1e-3, 1e-3), 6),
            "optim/kl_sample_train_v2": _r(rng.uniform(0, 1e-4), 7),
            "optim/entropy": _r(0.8 - 0.02 * step, 3),
            "time/do_group_rollout:mean": _r(20 + rng.uniform(-2, 2), 2),
            "time/do_group_rollout:max": _r(31 + rng.uniform(-2, 2), 2),
            "time/do_group_rollout:count": 16,
            "time/train_step": _r(9 + rng.uniform(-1, 1), 2),
            "time/total": _r(44 + rng.uniform(-3, 3), 2),
        }
        if step == 0:
            row.update(_tinker_test(0))  # the step-0 evaluation shares the training row
        if step == 4:
            row["env/all/format_parse"] = NAN
        lines.append(json.dumps(row))
        if step and step % eval_every == 0:
            lines.append(json.dumps({"step": step, **_tinker_test(step)}))  # a later, sparse evaluation row
    out = {"log_path": d, "metrics": _write_lines(d / "metrics.jsonl", lines)}
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps({
        "model_name": "Qwen/Qwen3-4B", "learning_rate": 4e-5, "groups_per_batch": 16, "group_size": 8,
        "log_path": str(d), "eval_every": eval_every,
    }, indent=2))
    out["config"] = d / "config.json"
    out["checkpoints"] = _write_lines(d / "checkpoints.jsonl", [
        json.dumps({"name": f"{s:06d}", "batch": s, "state_path": f"tinker://run-1/weights/{s:06d}"})
        for s in range(0, steps, 3)
    ])
    out["rollouts"] = _write_lines(d / "train_iteration_000002_rollout_summaries.jsonl", [
        json.dumps({
            "schema_version": 1, "split": "train", "iteration": 2, "group_idx": g, "traj_idx": t, "tags": ["math"],
            "sampling_client_step": 2, "total_reward": float(t % 2), "final_reward": float(t % 2),
            "trajectory_metrics": {"correct": float(t % 2)}, "final_ob_len": 300,
            "steps": [{"step_idx": 0, "ob_len": 88, "ac_len": 212, "reward": float(t % 2), "episode_done": True,
                       "metrics": {}, "logs": {}}],
        })
        for g in range(2) for t in range(2)
    ])
    out["timing"] = _write_lines(d / "timing_spans.jsonl", [
        json.dumps({"step": s, "name": "train_step", "start": 100.0 * s, "end": 100.0 * s + 9.5}) for s in range(steps)
    ])
    return out


# --------------------------------------------------------------------------------------------------------- all


def write_all(dir: Path) -> dict[str, Path]:
    """Every fixture under ``dir``, one subdirectory each; returns fixture name -> its metrics file."""
    d = Path(dir)
    retrain = write_retrain(d / "retrain")
    routing = write_routing(d / "routing")
    return {
        "routing": routing["routeA"],
        "retrain": retrain["metrics"],
        "retrain_emergence": retrain["steps"],
        "verl": write_verl(d / "verl" / "my_project" / "grpo_qwen.jsonl"),
        "tinyzero": write_tinyzero_console(d / "tinyzero" / "train.log"),
        "tinker": write_tinker(d / "tinker")["metrics"],
        "trl": write_trl_state(d / "trl"),
        "maxent": write_maxent_state(d / "maxent")["state"],
        "generic": write_generic(d / "generic" / "run.jsonl"),
    }


def write_trl_state(dir: Path, steps: int = 6, eval_every: int = 3, seed: int = 4) -> Path:
    """``dir/checkpoint-<steps>/trainer_state.json`` of a TRL GRPOTrainer run (train, eval and summary entries)."""
    rng = random.Random(seed)
    hist: list[dict[str, Any]] = []
    for step in range(1, steps + 1):
        acc = _r(0.2 + 0.07 * step + rng.uniform(-0.02, 0.02), 4)
        entry: dict[str, Any] = {
            "clip_ratio/high_max": 0.0, "clip_ratio/high_mean": 0.0, "clip_ratio/low_mean": 0.0,
            "clip_ratio/low_min": 0.0, "clip_ratio/region_mean": _r(rng.uniform(0, 0.002), 5),
            "completions/clipped_ratio": _r(0.1 - 0.01 * step, 4), "completions/max_length": 512.0,
            "completions/max_terminated_length": 498.0, "completions/mean_length": _r(300 + 8 * step, 2),
            "completions/mean_terminated_length": _r(280 + 8 * step, 2), "completions/min_length": 35.0,
            "completions/min_terminated_length": 35.0, "entropy": _r(0.7 - 0.02 * step, 4),
            "epoch": _r(step / steps, 4), "frac_reward_zero_std": _r(0.25 + rng.uniform(-0.1, 0.1), 4),
            "grad_norm": _r(rng.uniform(0.05, 0.3), 4), "kl": _r(0.0004 * step, 6),
            "learning_rate": _r(1e-6 * (1 - step / (steps + 1)), 10), "loss": _r(rng.uniform(-0.01, 0.01), 5),
            "num_tokens": 40960.0 * step, "reward": _r(acc + 0.5, 4),
            "reward_std": _r(0.4 + rng.uniform(-0.05, 0.05), 4),
            "rewards/accuracy_reward/mean": acc, "rewards/accuracy_reward/std": 0.45,
            "rewards/format_reward/mean": 0.5, "rewards/format_reward/std": 0.0, "step": step,
        }
        if step == 2:
            entry["kl"] = None  # TRL writes null when no finite value was averaged
        if step == 4:
            entry["grad_norm"] = NAN  # json.dumps writes the bare literal
        hist.append(entry)
        if step % eval_every == 0:
            hist.append({
                "epoch": _r(step / steps, 4), "eval_loss": _r(0.01 * step, 4), "eval_reward": _r(acc + 0.45, 4),
                "eval_runtime": 12.5, "eval_samples_per_second": 10.24, "eval_steps_per_second": 1.28, "step": step,
            })
    hist.append({
        "epoch": 1.0, "step": steps, "total_flos": 0.0, "train_loss": 0.0012, "train_runtime": 812.4,
        "train_samples_per_second": 0.59, "train_steps_per_second": 0.007,
    })
    return write_trainer_state(Path(dir) / f"checkpoint-{steps}" / "trainer_state.json", hist, steps,
                               eval_steps=eval_every)


def write_maxent_state(dir: Path, steps: int = 6, eval_every: int = 3, seed: int = 5) -> dict[str, Path]:
    """A MaxEnt-GRPO output dir: trainer_state.json (train/ and eval/ keys) and rich_completions tables."""
    rng = random.Random(seed)
    d = Path(dir)
    hist: list[dict[str, Any]] = []
    for step in range(1, steps + 1):
        entry: dict[str, Any] = {
            "train/loss": _r(rng.uniform(-0.01, 0.02), 5), "train/loss/policy": _r(rng.uniform(-0.01, 0.01), 5),
            "train/loss/kl": _r(0.0002 * step, 6), "train/reward": _r(0.3 + 0.05 * step, 4),
            "train/reward_std": _r(0.35 + rng.uniform(-0.05, 0.05), 4), "train/kl": _r(0.002 * step, 5),
            "train/tau": _r(0.5 - 0.02 * step, 4), "train/beta": 0.04,
            "train/weight_entropy": _r(1.9 + rng.uniform(-0.1, 0.1), 4),
            "train/completions/mean_length_sampled": _r(410 + 6 * step, 2),
            "train/completions/clipped_frac": _r(0.08 - 0.005 * step, 4),
            "train/grad_norm": _r(rng.uniform(0.1, 0.6), 4), "train/learning_rate": 3e-6,
            "train/epoch": _r(step / steps, 4), "train/global_step": float(step),
            "train/rewards/accuracy/mean": _r(0.3 + 0.05 * step, 4), "train/clip_ratio": 0.0, "step": step,
        }
        if step == 3:
            del entry["train/grad_norm"]  # non-finite values are dropped before logging
        hist.append(entry)
        if step % eval_every == 0:
            hist.append({"eval/reward": _r(0.28 + 0.05 * step, 4), "eval/loss": 0.011, "step": step})
    out = {"dir": d, "state": d / "trainer_state.json"}
    write_trainer_state(out["state"], hist, steps)
    rc = d / "rich_completions" / "completions_step_000002.json"
    rc.parent.mkdir(parents=True, exist_ok=True)
    rc.write_text(json.dumps({"columns": ["step", "prompt", "completion", "reward"],
                              "data": [[2, "2+2?", "4", 1.0], [2, "3+5?", "9", 0.0]]}))
    out["completions"] = rc
    return out


# ----------------------------------------------------------------------------------------------------- routing


def routing_row(step: int, arm: str, rng: random.Random) -> dict[str, Any]:
    routed = arm != "vanilla"
    diag = (lambda x: x) if routed else (lambda x: NAN)
    row: dict[str, Any] = {
        "step": step, "ref_eq": _r(step * 0.25, 2), "rew": _r(rng.uniform(-1, 1), 3),
        "rew_s": _r(rng.uniform(-1, 1), 3), "gt_s": [rng.randint(0, 32), 32], "gt_t": [rng.randint(20, 32), 32],
        "hack_s": [step % 5, 32], "hack_t": [3, 32],
        "hack_deployed": 0.125 if step % 3 == 0 else NAN, "solve_deployed": 0.5 if step % 3 == 0 else NAN,
        "hk_c": step % 3, "hk_m": step % 2, "lp_s": -0.93, "lp_t": -0.61, "loss": _r(rng.uniform(-0.05, 0.05), 4),
        "gn": _r(rng.uniform(0.5, 20), 2), "lr": 1e-5, "auroc": diag(_r(0.5 + step / 40, 3)),
        "cos": diag(_r(rng.uniform(-0.1, 0.1), 3)), "qmass": diag(0.3), "keep": diag(0.5), "resid": diag(0.25),
        "rout": diag(0.25), "tlo": diag(-0.7), "thi": diag(1.1), "stale": step,
        "hack_abl": [1, 8] if routed else None, "solve_abl": [5, 8] if routed else None,
        "gen": _r(8 + rng.uniform(0, 1), 2), "fb": 2.5, "t_rew": 0.4,
    }
    row["sec"] = _r(row["gen"] + row["fb"] + row["t_rew"], 2)
    return row


def write_routing(dir: Path, arms: Sequence[str] = ("vanilla", "routeA", "absorb"), steps: int = 5,
                  seed: int = 6) -> dict[str, Path]:
    """``dir/<arm>/metrics.jsonl`` for each arm, as StepLogger's RunWriter writes them."""
    rng = random.Random(seed)
    out: dict[str, Path] = {}
    for arm in arms:
        lines = []
        for step in range(steps):
            record = {"step": step, "arm": arm, "ts": 1700000000.0 + step, **routing_row(step, arm, rng)}
            lines.append(encode_row(record).decode().rstrip("\n"))
        out[arm] = _write_lines(Path(dir) / arm / "metrics.jsonl", lines)
    return out


# ----------------------------------------------------------------------------------------------------- generic


def write_generic(path: Path, steps: int = 10, step_key: str = "iteration", eval_every: int = 5,
                  seed: int = 7) -> Path:
    """A JSONL no schema claims, with the shapes seen in real public runs."""
    rng = random.Random(seed)
    lines = []
    for i in range(steps):
        row: dict[str, Any] = {
            step_key: i * 10,
            "loss": _r(2.0 * math.exp(-i / 5) + rng.uniform(0, 0.05), 4),
            "lr": 3e-4,
            "phase": "warmup" if i < 3 else "main",
            "tokens_per_sec": _r(15000 + rng.uniform(-500, 500), 1),
            "grad/norm": _r(rng.uniform(0.5, 2.0), 3),
            "opt": {"beta1": 0.9, "momentum_norm": _r(rng.uniform(0, 1), 3)},
            "wall time": _r(12.5 * i, 1),
            "hist": [[0, 1], [2, 3]],
            "seed": 7,
        }
        if i % eval_every == 0:
            row["accuracy"] = _r(0.1 + 0.08 * i, 3)
            row["eval"] = {"prm_mean": _r(0.5 + 0.02 * i, 3)}
        text = json.dumps(row)
        if i == 3:
            text = text.replace('"loss": ' + json.dumps(row["loss"]), '"loss": NaN')
        if i == 4:
            text = text.replace('"loss": ' + json.dumps(row["loss"]), '"loss": "nan"')
        if i == 6:
            text = text.replace('"loss": ' + json.dumps(row["loss"]), '"loss": null')
        lines.append(text)
    return _write_lines(Path(path), lines)

def write_sb3(dir: Path, seed: int = 0, iters: int = 12) -> Path:
    """``dir/progress.csv`` of a PPO run (``write_sb3_rows``): ``train/*`` only from the second iteration, as PPO's
    ``train()`` records them after the first dump, which makes SB3 rewrite the file from the top."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for it in range(1, iters + 1):
        row: dict[str, Any] = {"rollout/ep_len_mean": float(200 + it),
                               "rollout/ep_rew_mean": round(-100 + 3 * it + rng.random(), 3), "time/fps": 1500,
                               "time/iterations": it, "time/total_timesteps": 2048 * it}
        if it > 1:  # what the previous iteration's train() recorded
            for key, x in (("approx_kl", 0.02), ("clip_fraction", 0.2), ("entropy_loss", -1.4), ("loss", 50),
                           ("value_loss", 100)):
                row[f"train/{key}"] = round(rng.random() * x, 4)
        rows.append(row)
    return write_sb3_rows(dir, rows)


def write_lightning(dir: Path, seed: int = 10, epochs: int = 4) -> Path:
    """``dir/metrics.csv`` of a Lightning run (``write_lightning_rows``): the values float32 tensors as ``self.log``
    makes them, ``epoch`` added by the Trainer. Train rows, then a val row per epoch: its first one brings ``val_acc``
    and ``val_loss``, which rewrites the file from the top."""
    import torch

    rng = random.Random(seed)
    rows: list[tuple[int, dict[str, Any]]] = []
    for ep in range(epochs):
        for s in range(10 * ep + 4, 10 * ep + 10, 5):
            rows.append((s, {"train_loss": torch.tensor(round(2 - 0.03 * s + rng.random() / 10, 4)), "epoch": ep}))
        rows.append((10 * ep + 9, {"val_loss": torch.tensor(round(1.8 - 0.1 * ep, 4)),
                                   "val_acc": torch.tensor(round(0.5 + 0.08 * ep, 4)), "epoch": ep}))
    return write_lightning_rows(dir, rows)


def tinker_iteration_row(s: int) -> dict[str, Any]:
    """A training row of tinker-cookbook's do_async_training (``training_client/step`` is ``i_batch``, the step)."""
    return {"step": s, "training_client/step": s, "progress/done_frac": (s + 1) / 10, "optim/lr": 4e-5,
            "env/all/reward/total": 0.1 * s, "optim/entropy": 0.6, "time/train_step": 14.0, "time/total": 30.0 + s}


def tinker_evaluation_row(s: int) -> dict[str, Any]:
    """Its evaluation loop's row: logged at ``sampling_client_step`` when the evaluation ends, with a timing window
    of its own (``time/total`` is the evaluation's)."""
    return {"step": s, "test/env/all/reward/total": 0.75, "test/env/all/correct": 0.7,
            "time/run_evaluations_parallel": 75.0, "time/total": 75.3}


def write_sb3_monitor(path: Path, episodes: int, head: str = "") -> None:
    """``path`` (a name ending in ``monitor.csv``) written by Stable-Baselines3's ``monitor.ResultsWriter``, as its
    ``Monitor`` writes it: a ``#{json}`` comment line, the header ``r,l,t``, one row per episode (the csv module's
    ``\\r\\n`` line ends after the ``\\n`` of the comment line). ``head``, for the hostile-input tests, is text
    prepended afterwards to the real file (a BOM, blank lines, a comment): no SB3 writes it."""
    from stable_baselines3.common.monitor import ResultsWriter

    writer = ResultsWriter(str(path), header={"t_start": 1700000000.123, "env_id": "CartPole-v1"})
    for i in range(episodes):
        writer.write_row({"r": round(10.0 + i, 6), "l": 10 + i, "t": round(0.5 * i, 6)})
    writer.close()
    if head:
        path.write_bytes(head.encode() + path.read_bytes())


def write_clockless_verl(path: Path, n: int = 200, step_s: float = 72.0) -> Path:
    """verl's file logger rows without a clock (``timing_s/step`` says a step takes ``step_s``)."""
    rng = random.Random(0)
    return write_verl_rows(path, [(s, {"actor/pg_loss": rng.gauss(0, 0.1),
                                       "critic/score/mean": 0.5 + rng.gauss(0, 0.05),
                                       "timing_s/step": step_s + rng.gauss(0, 2)}) for s in range(1, n + 1)])
