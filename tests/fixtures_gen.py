"""Generators of training-log fixtures in each trainer's real on-disk format, quirks included.

Every writer is deterministic (seeded) and writes into a directory the caller owns (``tmp_path``). Values are
rounded so rendered output is stable across platforms. Shared by the schema, ingest and app tests::

    from fixtures_gen import write_verl
    path = write_verl(tmp_path / "proj" / "exp.jsonl", steps=6)

Quirks reproduced (see /work/shared/formats.md):
- retrain: orjson-compact lines (non-finite -> null), one json.dumps fallback line with a bare NaN, bool and string
  columns, surprisal keys only from step 2 with ``*_entropy_*`` mirrors, resume duplicates of the last steps;
  emergence/steps.jsonl counts; emergence/generations.jsonl with several completions per step.
- verl: ``{"step": N, "data": {...}}`` envelope, step 0 with validation keys only, an extra top-level key, bare NaN.
- TinyZero: console ``step:N - key:value`` lines behind Ray's ``(main_task pid=N)`` prefix, among unrelated lines
  and a traceback; NaN printed as ``nan``.
- tinker: json.dumps with spaces and bare NaN; step-0 evaluation inside the training row, later evaluations as
  separate sparse rows repeating a step; config.json, checkpoints.jsonl, rollout summaries, timing spans.
- TRL: checkpoint-N/trainer_state.json (indent=2) whose log_history mixes train, eval and the final summary entry;
  bare NaN and null.
- MaxEnt-GRPO: trainer_state.json with train/ and eval/ keys, non-finite values dropped; rich_completions tables.
- routing: one metrics.jsonl per arm written the way StepLogger's RunWriter writes it, fractions as [n, d].
- generic: an ``iteration`` step key, sparse evaluation keys, a string phase, nested dicts, list values, a key with
  a space, and the three spellings of NaN.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fixtures_gen_more import routing_row, write_generic, write_maxent_state, write_routing, write_trl_state

__all__ = [
    "routing_row", "write_all", "write_generic", "write_maxent_state", "write_retrain", "write_routing",
    "write_tinker", "write_tinyzero_console", "write_trl_state", "write_verl",
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
    legacy_entropy  write only the ``*_entropy_*`` names (runs from before the surprisal names)
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
    """verl's file logger output: step 0 validation only, then one enveloped line per step."""
    rng = random.Random(seed)
    lines = [json.dumps({"step": 0, "data": _val(0)})]
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
            data["actor/grad_norm"] = NAN  # json.dumps writes a bare NaN
        if step % val_every == 0:
            data.update(_val(step))
        line: dict[str, Any] = {"step": step, "data": data}
        if step % 2:
            line["elapsed_seconds"] = _r(75.0 * step, 1)
        lines.append(json.dumps(line))
    return _write_lines(Path(path), lines)


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
