"""tinker-cookbook RL: ``<log_path>/metrics.jsonl`` plus side files.

Evaluation rows (``test/...``) are logged as separate lines that repeat a step (sparse by design); ingest merges a
repeated step's keys into that step, so evaluation columns are nan except on evaluation steps. ``step`` equals
``progress/batch``, which is therefore hidden. ``config.json`` is run metadata; ``checkpoints.jsonl`` marks steps
(its records carry ``batch``); rollout summaries and logtree exports belong to the iteration in their file name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from steptable.schemas.base import Rule, Schema, SideFile
from steptable.schemas.parts import EVALUATION
from steptable.table.columns import Col

MARKERS = frozenset({
    "progress/done_frac", "progress/batch", "env/all/reward/total", "optim/lr", "optim/kl_sample_train_v1",
    "optim/entropy", "env/all/ac_tokens_per_turn", "env/all/by_group/frac_mixed", "time/total",
    "test/env/all/reward/total",
})


def match(path: Path, keys: Sequence[str]) -> float:
    """How well a file fits tinker-cookbook (0..1): by its progress/, env/ and optim/ keys."""
    ks = set(keys)
    hits = len(ks & MARKERS)
    if hits == 0:
        return 0.0
    envs = any(k.startswith(("env/", "test/env/")) for k in ks)
    return min(0.3 * hits + (0.2 if envs else 0.0), 1.0)


COLS = (
    Col("step", 5, "step", "d", "training iteration (the same number as progress/batch)"),
    Col("progress/done_frac", 4, "done", ".0%", "share of the planned iterations done"),
    Col("env/all/reward/total", 6, "reward", None, "mean total reward of a trajectory, all environments", "higher"),
    Col(
        "test/env/all/reward/total", 8, "test_rew", None,
        "mean total reward on the evaluation set (evaluation steps only)", "higher",
    ),
    Col(
        "env/all/by_group/frac_mixed", 5, "mixed", None,
        "share of groups whose rewards differ (the groups that carry a learning signal)",
    ),
    Col("env/all/by_group/frac_all_good", 8, "all_good", None, "share of groups where every trajectory succeeded"),
    Col("env/all/by_group/frac_all_bad", 7, "all_bad", None, "share of groups where every trajectory failed"),
    # (the cookbook's own docs spell some keys without their namespace: those are aliases of the same columns)
    Col("env/all/ac_tokens_per_turn", 6, "ac_tok", None, "mean tokens the policy generated per turn",
        aliases=("ac_tokens_per_turn",)),
    Col("optim/entropy", 7, "entropy", None, "entropy of the sampling policy, estimated from sampled tokens",
        aliases=("entropy",)),
    Col(
        "optim/kl_sample_train_v1", 6, "kl_s_t", None,
        "KL estimate between the sampler's and the trainer's log-probs (first order, signed; near 0 is good)",
        aliases=("kl_sample_train_v1",),
    ),
    Col(
        "optim/kl_sample_train_v2", 7, "kl_s_t2", None,
        "the same mismatch, second-order estimate (half the mean squared log-prob difference)", "lower",
        aliases=("kl_sample_train_v2",),
    ),
    Col("optim/lr", 6, "lr", None, "learning rate at this iteration"),
    Col("time/total", 6, "sec", None, "wall-clock seconds of the iteration", "lower"),
)

RULES = (
    Rule("progress/batch", "iteration index (same as step)", hide=True),
    Rule("training_client/step", "iteration index of the asynchronous loop (same as step)", hide=True),
    Rule("test/*", EVALUATION, promote=True),
    # metric_util sums these over the iteration's trajectories (total_episodes, total_ac_tokens...): not averages
    Rule("env/*/total_*", "count or sum over the iteration's trajectories, not an average ({key})"),
    Rule("env/all/*", "environment metric averaged over all trajectories ({key})"),
    Rule("env/*", "environment metric for the trajectories with one logging tag ({key})"),
    Rule("optim/*", "optimisation metric ({key})"),
    Rule("time/*:count", "times the span ran in the iteration ({key})"),
    Rule("time/*", "seconds spent in a timed span of the iteration ({key})"),
    Rule("async/*", "off-policy staleness of asynchronous sampling ({key})"),
    Rule("sampling_client/*", "sampler version used for the iteration's rollouts ({key})"),
    Rule("kl_*", "KL estimate ({key})"),
)

SIDE = (
    SideFile("config.json", "config", "serialized training config (hyperparameters, model, dataset)", None),
    SideFile("checkpoints.jsonl", "checkpoints", "saved checkpoints with their loop state", "batch"),
    SideFile("timing_spans.jsonl", "timing_spans", "timed spans of each iteration", "step"),
    SideFile(
        "*_rollout_summaries.jsonl", "rollout_summaries", "one record per trajectory: rewards, metrics, per-turn data",
        "iteration", r"iteration_(\d+)",
    ),
    SideFile(
        "*_logtree.json", "logtree", "full rollout transcripts (prompts, responses, grading)", None,
        r"iteration_(\d+)",
    ),
)

SCHEMA = Schema(
    "tinker",
    COLS,
    "tinker-cookbook RL loop: metrics.jsonl (train and test rows), checkpoints, rollout summaries",
    match,
    rules=RULES,
    side_files=SIDE,
)
