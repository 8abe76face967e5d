"""Review 10: schemas against what trainers' current code writes.

A: promoted evaluation columns came in file order, so constant bookkeeping keys (tinker's test/.../total_episodes,
TRL's eval_clip_ratio/*, always 0) took the width from the evaluation scores.
B: legend wording for verl's perf/mfu/* and perf/time_per_step, tinker's env/*/total_* (sums and counts, not
averages), and the header of TRL's eval_clip_ratio/high_max (``eval/high_max`` dropped what it is a statistic of).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from steptable.schemas import SCHEMAS
from steptable.schemas.headers import short_headers
from tests.helpers import run_cli
from tests.trainer_logs import write_tinker, write_verl

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
    path.mkdir(parents=True)
    state = {"global_step": 200, "log_history": history, "max_steps": 200}
    (path / "trainer_state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
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

    _rewrite(path, edit)
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
