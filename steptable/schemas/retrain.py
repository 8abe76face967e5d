"""retrain: ``logs/train/metrics.jsonl`` and ``emergence/steps.jsonl`` (one schema for both, each file laid out
with the declared columns it has: ``part`` keeps them apart). ``emergence/generations.jsonl`` holds several
completions per step: a side file.

Quirks handled here: ``*_entropy_*`` keys mirror ``*_surprisal_*`` (older runs may have only the entropy names), so
each surprisal column reads its entropy twin as an alias and the twins stay out of the layout; emergence counts are
shown as one ``correct/total`` fraction (a derived column).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePath

from steptable.schemas.base import Derived, Rule, Schema, SideFile, ratio_pair
from steptable.table.columns import Col

#: keys only retrain writes (in metrics.jsonl)
MARKERS = frozenset({
    "mean_reward", "correct_rate", "running_correct_rate", "sepa_lambda", "sepa_gate_open", "bp_action",
    "bp_regime", "num_datums", "max_token_hit_rate", "step_time_s", "loss_is_placeholder", "reported_loss",
    "exec_surprisal_mean", "exec_entropy_mean", "backend_reports_sync_loss", "uncertainty_kind",
})

COLS = (
    Col("step", 4, "step", "d", "training step (0-based)"),
    Col("loss", 6, "loss", None, "training loss from the backend; a placeholder value when loss_is_placeholder"),
    Col("mean_reward", 6, "reward", None, "mean reward of the step's completions", "higher"),
    Col("correct_rate", 7, "correct", None, "share of the step's completions judged correct", "higher"),
    Col(
        "correct_of_total", 7, "corr_n", "frac",
        "correct completions out of all completions of the step (emergence summary)", "higher",
    ),
    Col("running_correct_rate", 8, "run_corr", None, "correct rate accumulated over all steps so far", "higher"),
    Col("sepa_lambda", 5, "sepa", None, "current SEPA pooling strength"),
    Col("sepa_gate_open", 4, "gate", None, "T while the SEPA correctness gate is open", align="center"),
    Col(
        "max_token_hit_rate", 6, "maxtok", None,
        "share of completions cut off at max_tokens (truncated answers)", "lower",
    ),
    Col(
        "exec_surprisal_mean", 7, "ex_surp", None, "mean surprisal of execution tokens (GTPO modes)",
        aliases=("exec_entropy_mean",),
    ),
    Col(
        "exec_surprisal_var", 7, "ex_svar", None, "variance of execution-token surprisal",
        aliases=("exec_entropy_var",),
    ),
    Col(
        "plan_surprisal_mean", 7, "pl_surp", None, "mean surprisal of planning tokens",
        aliases=("plan_entropy_mean",),
    ),
    Col(
        "plan_surprisal_var", 7, "pl_svar", None, "variance of planning-token surprisal",
        aliases=("plan_entropy_var",),
    ),
    Col("bp_action", 8, "bp_act", None, "back-pressure decision: hold, throttle or increase", align="left"),
    Col("bp_regime", 9, "bp_regime", None, "back-pressure regime the controller is in", align="left"),
    Col("num_datums", 6, "datums", "d", "datums submitted to the trainer this step"),
    Col("batch_size", 4, "bs", "d", "batch size in use (back-pressure may change it)"),
    Col("group_size", 4, "gs", "d", "completions sampled per prompt"),
    Col("step_time_s", 6, "sec", None, "wall-clock seconds of the step", "lower"),
)

RULES = (
    Rule("condition", "the run's condition label (the method combination it trains with)", hide=True),
    Rule("*_entropy_*", "legacy name mirroring the *_surprisal_* key ({key})", hide=True),
    Rule("reported_loss", "the backend's raw loss, the same number as loss", hide=True),
    Rule("loss_is_placeholder", "T when the backend reports a placeholder loss by design", hide=True),
    Rule("backend_*", "what the training backend supports ({key})", hide=True),
    Rule("uncertainty_kind", "uncertainty variant chosen in the config", hide=True),
    Rule("correct_count", "completions judged correct this step"),
    Rule("total_count", "completions scored this step"),
)

DERIVED = (Derived("correct_of_total", ("correct_count", "total_count"), ratio_pair("correct_count", "total_count")),)

SIDE = (
    SideFile(
        "emergence/generations.jsonl", "generations",
        "sampled completions of each step: prompt, completion, reward, token count, most surprising tokens",
    ),
)


def part(path: PurePath) -> str:
    """The emergence summary and the metrics file are laid out apart (few keys in common: one table of both
    would show each with the other's columns as nan); each one's arms still line up."""
    return "emergence" if path.parent.name == "emergence" else ""


def match(path: Path, keys: Sequence[str]) -> float:
    """How well a file fits retrain (0..1): its emergence files by name, the metrics file by retrain's own keys."""
    ks = set(keys)
    parent = path.parent.name
    if parent == "emergence" and path.name in ("steps.jsonl", "generations.jsonl"):
        return 1.0 if {"correct_count", "total_count"} <= ks or path.name == "generations.jsonl" else 0.8
    hits = len(ks & MARKERS)
    score = min(hits / 4, 1.0) * 0.9
    if hits and path.name == "metrics.jsonl" and parent == "train":
        score += 0.1
    if not hits and {"correct_count", "total_count", "mean_reward"} <= ks:
        score = 0.7
    return score


SCHEMA = Schema(
    "retrain",
    COLS,
    "retrain (maxrl / GTPO / SEPA): logs/train/metrics.jsonl and emergence/steps.jsonl",
    match,
    rules=RULES,
    derived=DERIVED,
    side_files=SIDE,
    part=part,
)
