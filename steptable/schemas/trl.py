"""HF Trainer / TRL (GRPOTrainer, DPOTrainer, SFTTrainer) and MaxEnt-GRPO: the rows of ``trainer_state.json``
``log_history`` (the reader, steptable.ingest.readers.hf, tells its train, eval and summary entries apart) or of
their tracker callbacks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from steptable.schemas.base import Rule, Schema, SideFile
from steptable.schemas.parts import EVALUATION
from steptable.table.columns import Col

# ------------------------------------------------------------------------------------------------ detection

TRL_MARKERS = frozenset({
    "loss", "grad_norm", "learning_rate", "epoch", "reward", "reward_std", "kl", "entropy", "frac_reward_zero_std",
    "completions/mean_length", "completions/clipped_ratio", "clip_ratio/region_mean", "num_tokens", "eval_loss",
    "rewards/accuracies", "rewards/margins", "mean_token_accuracy",
})
MAXENT_COMMON = frozenset({
    "train/loss", "train/reward", "train/reward_std", "train/kl", "train/grad_norm", "train/learning_rate",
})
MAXENT_SPECIFIC = frozenset({
    "train/tau", "train/beta", "train/weight_entropy", "train/q_entropy_mean", "train/loss/policy", "train/loss/kl",
    "train/maxent_objective", "train/completions/mean_length_sampled", "train/grpo_objective",
})


def maxent_match(path: Path, keys: Sequence[str]) -> float:
    """How well a file fits MaxEnt-GRPO (0..1): the train/ keys only it logs."""
    ks = set(keys)
    specific = len(ks & MAXENT_SPECIFIC)
    if not specific:
        return 0.0
    state = 0.1 if path.name == "trainer_state.json" else 0.0
    return min(0.5 + 0.1 * specific + 0.1 * len(ks & MAXENT_COMMON) + state, 1.0)


def tracked(key: str) -> str:
    """``key`` (or a pattern of keys) as transformers' tracker callbacks (W&B, trackio, TensorBoard...) log it:
    ``eval_x`` as ``eval/x``, ``test_x`` as ``test/x``, any other as ``train/<key>`` (their ``rewrite_logs``)."""
    for prefix in ("eval_", "test_"):
        if key.startswith(prefix):
            return f"{prefix[:-1]}/{key[len(prefix):]}"
    return f"train/{key}"


#: TRL's markers as the state file and the trackers spell them
_MARKERS = TRL_MARKERS | {tracked(k) for k in TRL_MARKERS}


def trl_match(path: Path, keys: Sequence[str]) -> float:
    """How well a file fits HF/TRL (0..1): a trainer_state.json and TRL's keys, as the state file or a tracker
    spells them; little where MaxEnt-GRPO fits."""
    state = path.name == "trainer_state.json"
    if maxent_match(path, keys) >= 0.5:
        return 0.3 if state else 0.0
    hits = len(set(keys) & _MARKERS)
    return min((0.6 if state else 0.0) + 0.1 * hits, 1.0)


# ---------------------------------------------------------------------------------------------------- TRL

# DPO's and KTO's (and SFT's token accuracy): the implicit reward of a response is beta times its log-probability
# ratio to the reference model's
_DPO_COLS = (
    Col(
        "rewards/accuracies", 7, "rew_acc", None,
        "share of preference pairs whose chosen response gets the higher implicit reward (DPO)", "higher",
    ),
    Col(
        "rewards/margins", 6, "margin", None, "implicit reward of the chosen minus the rejected response (DPO, KTO)",
        "higher",
    ),
    Col("rewards/chosen", 6, "rew_ch", None, "implicit reward of the chosen responses (DPO, KTO)"),
    Col("rewards/rejected", 7, "rew_rej", None, "implicit reward of the rejected responses (DPO, KTO)"),
    Col("logps/chosen", 6, "lp_ch", None, "log-probability of the chosen responses under the policy (DPO, KTO)"),
    Col("logps/rejected", 6, "lp_rej", None, "log-probability of the rejected responses under the policy (DPO, KTO)"),
    Col("logits/chosen", 6, "lg_ch", None, "mean logit of the chosen responses' tokens under the policy (DPO, KTO)"),
    Col(
        "logits/rejected", 6, "lg_rej", None,
        "mean logit of the rejected responses' tokens under the policy (DPO, KTO)",
    ),
    Col(
        "mean_token_accuracy", 7, "tok_acc", None,
        "share of response tokens that are the policy's most likely next token (SFT, DPO)", "higher",
    ),
)
_STATE_COLS = (
    Col(
        "loss", 7, "loss", None,
        "training loss averaged over the logging window (for GRPO it follows the advantages: no good direction)",
    ),
    Col("reward", 6, "reward", None, "mean reward of the sampled completions (all reward functions summed)", "higher"),
    Col("reward_std", 7, "rew_std", None, "standard deviation of rewards within a prompt's group, averaged"),
    Col(
        "frac_reward_zero_std", 7, "zero_sd", None,
        "share of prompts whose completions all got the same reward (no learning signal from them)",
    ),
    Col("kl", 6, "kl", None, "KL between the policy and the reference model"),
    Col("entropy", 7, "entropy", None, "mean token entropy of the policy on its completions"),
    Col("completions/mean_length", 6, "len", None, "mean completion length in tokens"),
    Col(
        "completions/clipped_ratio", 8, "len_clip", None,
        "share of completions cut at the maximum completion length", "lower",
    ),
    Col("clip_ratio/region_mean", 6, "clip", None, "share of tokens whose probability ratio was clipped"),
    *_DPO_COLS,
    Col("grad_norm", 6, "gnorm", None, "gradient norm before clipping"),
    Col("learning_rate", 6, "lr", None, "learning rate from the scheduler"),
    Col("epoch", 5, "epoch", None, "fractional epoch over the training data"),
    Col("eval_loss", 9, "eval_loss", None, "loss on the evaluation set (evaluation steps only)"),
    Col("eval_reward", 8, "eval_rew", None, "mean reward on the evaluation prompts (evaluation steps only)", "higher"),
    # (``ev_``: a built-in header is at most 10 cells)
    *(Col(f"eval_{c.key}", max(c.width, len(c.header)) + 3, f"ev_{c.header}", None,
          f"{c.header} on the evaluation set (evaluation steps only)", c.better) for c in _DPO_COLS),
    Col("eval_entropy", 10, "ev_entropy", None, "mean token entropy on the evaluation set (evaluation steps only)"),
)
#: the state file's columns, each reading the key a tracker logs where the state file's is absent
TRL_COLS = (
    Col("step", 5, "step", "d", "optimizer step (global_step) of the logging window"),
    *(c.with_(aliases=(*c.aliases, tracked(c.key))) for c in _STATE_COLS),
)

#: keys every HF Trainer logs, whichever trainer (SFT, DPO, PPO, GRPO...): they tell no trainer from another
HF_COMMON = frozenset({
    "loss", "grad_norm", "learning_rate", "epoch", "num_tokens", "entropy", "eval_loss", "eval_runtime",
    "eval_samples_per_second", "eval_steps_per_second", "eval_entropy", "eval_num_tokens",
})

TRL_RULES = (
    # PPO / RLOO (trl's PPOTrainer): objective/kl and objective/entropy are sums over a response's tokens
    Rule("objective/scores", "mean reward-model score of the sampled responses (PPO)", "higher", promote=True),
    Rule("objective/rlhf_reward", "score plus the KL penalty: the reward PPO maximises", "higher", promote=True),
    Rule("objective/kl", "KL to the reference model, summed over a response's tokens (PPO)", promote=True),
    Rule("objective/entropy", "policy entropy summed over a response's tokens (PPO)", promote=True),
    Rule("objective/non_score_reward", "the KL penalty part of the reward, per response (PPO)"),
    Rule("loss/policy_avg", "policy loss averaged over the update's minibatches (no good direction)", promote=True),
    Rule("loss/value_avg", "value-head loss averaged over the update's minibatches", "lower"),
    Rule("policy/approxkl_avg", "approximate KL between the updated policy and the rollout policy"),
    Rule("policy/clipfrac_avg", "share of tokens whose probability ratio was clipped"),
    Rule("policy/entropy_avg", "mean token entropy of the policy during the update"),
    Rule("val/num_eos_tokens", "responses that ended with an end-of-sequence token"),
    Rule("val/contain_eos_token", "share of responses that contain an end-of-sequence token"),
    Rule("val/clipfrac_avg", "share of value predictions clipped in the PPO update (not a validation metric)"),
    Rule("val/ratio", "mean probability ratio new/old policy in the PPO update (not a validation metric)"),
    Rule("val/ratio_var", "variance of that probability ratio (not a validation metric)"),
    Rule("episode", "episodes (prompts) sampled so far"),
    Rule("eps", "episodes per second"),
    Rule("rewards/*/mean", "mean reward of one reward function ({key})", "higher", promote=True),
    Rule("rewards/*", "reward function statistic ({key})"),
    Rule("completions/*terminated_length", "length in tokens of the completions that ended (EOS) within the limit"
         " ({key})"),
    Rule("completions/*", "completion length statistic in tokens ({key})"),
    Rule("clip_ratio/low_mean", "share of tokens clipped at the ratio's lower bound (negative advantages)"),
    Rule("clip_ratio/high_mean", "share of tokens clipped at the ratio's upper bound (positive advantages)"),
    # the least and the most over processes: on one process the same numbers as the means
    Rule("clip_ratio/low_min", "clip_ratio/low_mean of the process with the least", hide=True),
    Rule("clip_ratio/high_max", "clip_ratio/high_mean of the process with the most", hide=True),
    Rule("clip_ratio/*", "share of tokens clipped by the probability-ratio bounds ({key})"),
    Rule("eval_runtime", "seconds the evaluation took", hide=True),
    # (SFT: the training's count logged again with each evaluation, not a measure of it)
    Rule("eval_num_tokens", "tokens processed so far, as num_tokens", hide=True),
    Rule("eval_*_per_second", "evaluation throughput ({key})", hide=True),
    Rule("eval_*", EVALUATION, promote=True),
    Rule("num_tokens", "tokens processed so far"),
    Rule("step_time", "seconds the optimizer step took: generation, scoring and update", "lower"),
    # GRPO with vLLM generating: how far the sampler's token log-probabilities are from the trainer's
    Rule("sampling/sampling_logp_difference/*", "trainer minus sampler (vLLM) token log-probability ({key})"),
    Rule("sampling/importance_sampling_ratio/*", "trainer/sampler probability ratio that reweights tokens ({key})"),
    Rule("tools/call_frequency", "tool calls per completion"),
    Rule("tools/failure_frequency", "share of tool calls that failed", "lower"),
    # RewardTrainer: a reward model scored on preference pairs
    Rule("accuracy", "share of pairs whose chosen response the reward model scores higher (RewardTrainer)", "higher",
         promote=True),
    Rule("margin", "score of the chosen minus the rejected response, averaged (RewardTrainer)", "higher",
         promote=True),
    Rule("mean_reward", "mean reward-model score of the batch's responses (RewardTrainer)"),
    Rule("min_reward", "lowest reward-model score of the batch's responses (RewardTrainer)"),
    Rule("max_reward", "highest reward-model score of the batch's responses (RewardTrainer)"),
    Rule("train_*", "end-of-training summary value ({key})", hide=True),
    Rule("total_flos", "floating-point operations of the whole run", hide=True),
)

#: TRL's timings of its own functions, logged to the trackers as they are (``profiling/Time taken:
#: GRPOTrainer._generate``): out of the default table, where a dozen of them led the trainer's metrics
_PROFILING = Rule("profiling/*", "seconds one call of a TRL function took ({key})", hide=True)
#: the trainer's step a tracker row holds (trackio's own step counts log calls: the row's step is read from it)
_GLOBAL_STEP = Rule("train/global_step", "the trainer's step counter (the same number as step)", hide=True)

TRL = Schema(
    "trl",
    TRL_COLS,
    "Hugging Face Trainer / TRL trainers: trainer_state.json log_history (train and eval entries), or the same rows "
    "as its tracker callbacks log them (train/ and eval/ keys: W&B, trackio, TensorBoard)",
    trl_match,
    rules=(*TRL_RULES, *(replace(r, pattern=tracked(r.pattern)) for r in TRL_RULES), _PROFILING, _GLOBAL_STEP),
    several=HF_COMMON,  # SFT, DPO, PPO and GRPO state files log different keys: one layout each
)

# ------------------------------------------------------------------------------------------------- MaxEnt

MAXENT_COLS = (
    Col("step", 5, "step", "d", "optimizer step"),
    Col("train/loss", 7, "loss", None, "total training loss (policy + KL terms)"),
    Col("train/loss/policy", 8, "pol_loss", None, "policy part of the loss (no good direction: follows advantages)"),
    Col("train/loss/kl", 7, "kl_loss", None, "KL part of the loss"),
    Col("train/reward", 6, "reward", None, "mean reward of the sampled completions", "higher"),
    Col("train/reward_std", 7, "rew_std", None, "standard deviation of the rewards"),
    Col("train/kl", 6, "kl", None, "KL between the policy and the reference model"),
    Col("train/tau", 6, "tau", None, "temperature of the maximum-entropy weighting over completions"),
    Col("train/beta", 6, "beta", None, "KL coefficient (beta) of the objective"),
    Col("train/weight_entropy", 6, "w_ent", None, "entropy of the weights given to a prompt's completions"),
    Col("train/completions/mean_length_sampled", 6, "len", None, "mean length of the sampled completions (tokens)"),
    Col(
        "train/completions/clipped_frac", 8, "len_clip", None,
        "share of completions cut at the maximum completion length", "lower",
    ),
    Col("train/grad_norm", 6, "gnorm", None, "gradient norm before clipping"),
    Col("train/learning_rate", 6, "lr", None, "learning rate from the scheduler"),
)

MAXENT_RULES = (
    Rule("train/global_step", "the trainer's step counter (same as step)", hide=True),
    Rule("train/epoch", "fractional epoch over the training data"),
    Rule("eval/reward_std", "spread of the evaluation rewards; evaluation steps only", promote=True),
    Rule("eval/reward*", "evaluation reward ({key}); evaluation steps only", "higher", promote=True),
    Rule("eval/*", EVALUATION, promote=True),
    Rule("train/rewards/*/mean", "mean reward of one reward function ({key})", "higher"),
    Rule("train/rewards/*", "reward function statistic ({key})"),
    Rule("train/loss/total", "the whole loss (the same number as train/loss)", hide=True),
    Rule("train/loss/*", "loss component ({key})"),
    Rule("train/clip_ratio*", "share of tokens clipped by the ratio bounds ({key})"),
    Rule("train/completions/*", "completion statistic ({key})"),
    Rule("train/kl_per_token_bucket*", "KL by token-position bucket ({key})", hide=True),
    Rule("train/weighting/*", "weighting configuration value ({key})", hide=True),
)

MAXENT = Schema(
    "maxent-grpo",
    MAXENT_COLS,
    "MaxEnt-GRPO (TRL-based): trainer_state.json log_history with train/ and eval/ prefixed keys",
    maxent_match,
    rules=MAXENT_RULES,
    side_files=(
        SideFile(
            "rich_completions/*_step_*.json", "generations",
            "sampled completions of a step as a {columns, data} table", None, r"_step_(\d+)\.json$",
        ),
    ),
)
