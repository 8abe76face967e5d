"""verl: the file logger's JSONL (``{"step": N, "data": {...}}``, unwrapped by ingest to verl's own key names).

Step 0 may carry only validation keys (``val-core/...``, ``val-aux/...``): the validation columns are promoted so
they sit next to the training ones. The pieces shared with TinyZero (an older verl fork) live here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from steptable.schemas.base import Rule, Schema
from steptable.table.columns import Col

#: key prefixes of the verl family (verl and TinyZero)
FAMILY_PREFIXES = (
    "actor/", "critic/", "response_length/", "prompt_length/", "timing_s/", "timing_per_token_ms/", "perf/",
    "val-core/", "val-aux/", "mfu/", "training/",
)
#: present in current verl, absent from TinyZero
VERL_MARKERS = ("perf/", "val-core/", "val-aux/", "actor/entropy", "training/global_step", "actor/pg_clipfrac_lower")
#: present in TinyZero (and verl of its time), absent from current verl
TINYZERO_MARKERS = ("mfu/actor", "actor/entropy_loss", "val/test_score/", "critic/kl_coeff")


def _has(keys: Sequence[str], marker: str) -> bool:
    if marker.endswith("/"):
        return any(k.startswith(marker) for k in keys)
    return marker in keys


def family_scores(path: Path, keys: Sequence[str]) -> tuple[float, float]:
    """(verl, tinyzero) scores: both need verl-family keys; the markers and the file kind pick one of the two."""
    prefixes = sum(1 for p in FAMILY_PREFIXES if _has(keys, p))
    validation_only = _has(keys, "val-core/") or _has(keys, "val/test_score/")
    if prefixes < 2 and not validation_only:
        return 0.0, 0.0
    verl = sum(1 for m in VERL_MARKERS if _has(keys, m)) + (1 if path.suffix in (".jsonl", ".json") else 0)
    tz = sum(1 for m in TINYZERO_MARKERS if _has(keys, m)) + (1 if path.suffix not in (".jsonl", ".json") else 0)
    sure = 0.9 if prefixes >= 2 else 0.7
    return (sure, 0.3) if verl >= tz else (0.3, sure)


def match(path: Path, keys: Sequence[str]) -> float:
    """How well a file fits verl (0..1): see :func:`family_scores`."""
    return family_scores(path, keys)[0]


# ---------------------------------------------------------------------------------------- shared with TinyZero

STEP = Col("step", 5, "step", "d", "trainer step (global step of the PPO/GRPO loop)")
SCORE = Col("critic/score/mean", 6, "score", None, "mean task score of a response, before any KL shaping", "higher")
REWARD = Col(
    "critic/rewards/mean", 6, "reward", None,
    "mean sequence reward after KL shaping (equal to score without an in-reward KL penalty)", "higher",
)
PG_LOSS = Col(
    "actor/pg_loss", 7, "pg_loss", None,
    "policy-gradient (clipped surrogate) loss; its level follows the advantages, so no good direction",
)
PPO_KL = Col("actor/ppo_kl", 6, "ppo_kl", None, "approximate KL between the updated policy and the rollout policy")
CLIPFRAC = Col("actor/pg_clipfrac", 8, "clipfrac", None, "share of tokens whose probability ratio was clipped")
GRAD_NORM = Col("actor/grad_norm", 6, "gnorm", None, "actor gradient norm before clipping")
LR = Col("actor/lr", 6, "lr", None, "actor learning rate at this step")
KL = Col(
    "critic/kl", 6, "kl", None, "KL between the policy and the reference, as used by the in-reward penalty",
    aliases=("actor/reward_kl_penalty",),  # its name in current verl (critic/kl in the verl of TinyZero's time)
)
VF_LOSS = Col("critic/vf_loss", 7, "vf_loss", None, "critic (value function) regression loss", "lower")
VF_EV = Col(
    "critic/vf_explained_var", 6, "vf_ev", None, "share of return variance the critic explains (1 = perfect)", "higher"
)
RESP_LEN = Col("response_length/mean", 8, "resp_len", None, "mean response length in tokens")
RESP_CLIP = Col(
    "response_length/clip_ratio", 8, "len_clip", None, "share of responses cut at the maximum response length",
    "lower",
)
T_STEP = Col("timing_s/step", 6, "t_step", None, "wall-clock seconds of the whole step", "lower")
T_GEN = Col("timing_s/gen", 6, "t_gen", None, "seconds spent generating rollouts", "lower")

SHARED_RULES = (
    Rule("critic/score/*", "task score per response, batch statistic ({key})"),
    Rule("critic/rewards/*", "shaped sequence reward, batch statistic ({key})"),
    Rule("critic/advantages/*", "token-level advantage, batch statistic ({key})"),
    Rule("critic/returns/*", "token-level return, batch statistic ({key})"),
    Rule("critic/values/*", "critic value prediction, batch statistic ({key})"),
    Rule("response_length/*", "response length in tokens, batch statistic ({key})"),
    Rule("prompt_length/clip_ratio", "share of prompts cut at the maximum prompt length", "lower"),
    Rule("prompt_length/*", "prompt length in tokens, batch statistic ({key})"),
    Rule("timing_s/*", "seconds spent in this phase of the step ({key})", "lower"),
    Rule("timing_per_token_ms/*", "milliseconds per token in this phase of the step ({key})", "lower"),
    Rule("training/global_step", "the trainer's step counter (same as step)", hide=True),
    Rule("training/epoch", "epoch of the training data"),
    Rule("elapsed_seconds", "wall-clock seconds since the trainer started"),
)

# --------------------------------------------------------------------------------------------------- verl

COLS = (
    STEP,
    SCORE,
    REWARD,
    PG_LOSS,
    Col("actor/entropy", 7, "entropy", None, "mean token entropy of the policy on its responses"),
    Col("actor/kl_loss", 7, "kl_loss", None, "KL to the reference policy used as a loss term (use_kl_loss)"),
    PPO_KL,
    CLIPFRAC,
    GRAD_NORM,
    LR,
    KL,
    VF_LOSS,
    VF_EV,
    RESP_LEN,
    RESP_CLIP,
    T_STEP,
    T_GEN,
    Col("perf/throughput", 6, "tok/s", None, "tokens processed per second per GPU", "higher"),
    Col("perf/mfu/actor", 5, "mfu", None, "model FLOPs utilisation of the actor update", "higher"),
    Col("perf/max_memory_allocated_gb", 6, "mem_gb", None, "peak GPU memory allocated (GB)"),
)

RULES = (
    Rule(
        "val-core/*/mean@*", "validation score averaged over the samples of each prompt ({key})", "higher",
        promote=True,
    ),
    Rule("val-core/*", "core validation metric ({key})", promote=True),
    Rule("val-aux/*", "auxiliary validation metric ({key})"),
    Rule("perf/mfu/*", "model FLOPs utilisation of one stage ({key})", "higher"),
    Rule("perf/time_per_step", "wall-clock seconds of the step", "lower"),
    Rule("perf/*", "throughput and memory counter ({key})"),
    *SHARED_RULES,
)

SCHEMA = Schema(
    "verl",
    COLS,
    "verl PPO/GRPO trainer: the file logger's JSONL (trainer.logger=[console,file])",
    match,
    rules=RULES,
)
