"""More fixture generators (re-exported by fixtures_gen): HF Trainer / TRL and MaxEnt-GRPO ``trainer_state.json``,
the routing arms (through StepLogger's own JSONL encoder) and a generic JSONL."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from steptable.logger.writer import encode_row

NAN = float("nan")


def _r(x: float, nd: int = 4) -> float:
    return round(x, nd)


def _write_lines(path: Path, lines: Iterable[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _state(log_history: Sequence[Mapping[str, Any]], steps: int, extra: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "best_global_step": None, "best_metric": None, "best_model_checkpoint": None, "epoch": extra.get("epoch"),
        "eval_steps": extra.get("eval_steps"), "global_step": steps, "is_hyper_param_search": False,
        "is_local_process_zero": True, "is_world_process_zero": True, "log_history": list(log_history),
        "logging_steps": 1, "max_steps": steps, "num_input_tokens_seen": 0, "num_train_epochs": 1,
        "save_steps": steps, "stateful_callbacks": {}, "total_flos": 0.0, "train_batch_size": 8, "trial_name": None,
        "trial_params": None,
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
    path = Path(dir) / f"checkpoint-{steps}" / "trainer_state.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_state(hist, steps, {"epoch": 1.0, "eval_steps": eval_every}), indent=2))
    return path


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
    d.mkdir(parents=True, exist_ok=True)
    out["state"].write_text(json.dumps(_state(hist, steps, {"epoch": 1.0}), indent=2))
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
