"""Stable-Baselines3: what its logger records (``progress.csv``, ``progress.json``, TensorBoard events, or
steptable.integrations.sb3's rows), for every algorithm it ships (PPO, A2C, DQN, SAC, TD3, DDPG) and EvalCallback.

The step is ``time/total_timesteps`` (environment steps so far). The counters SB3 records beside it
(``time/iterations``, ``time/episodes``, ``train/n_updates``) are functions of the step: hidden. The rollout's
episode statistics (``rollout/*``) are means over the last 100 finished episodes, so they move slowly and hold
still while no episode ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from steptable.schemas.base import Rule, Schema
from steptable.schemas.parts import EVALUATION
from steptable.table.columns import Col

#: keys only SB3 records (not ``train/loss`` or ``train/learning_rate``: HF's W&B and trackio rows have those too)
MARKERS = frozenset({
    "time/total_timesteps", "time/iterations", "time/episodes", "time/fps", "time/time_elapsed",
    "rollout/ep_rew_mean", "rollout/ep_len_mean", "rollout/exploration_rate", "rollout/success_rate",
    "train/n_updates", "train/approx_kl", "train/clip_fraction", "train/clip_range", "train/policy_gradient_loss",
    "train/explained_variance", "train/value_loss", "train/entropy_loss", "train/ent_coef", "train/ent_coef_loss",
    "train/actor_loss", "train/critic_loss", "eval/mean_reward", "eval/mean_ep_length",
})


def match(path: Path, keys: Sequence[str]) -> float:
    """How well a file fits SB3 (0..1): three of its own keys are enough (a first dump without a Monitor-wrapped
    environment records only ``time/*``: four)."""
    return min(0.2 * len(set(keys) & MARKERS), 1.0)


COLS = (
    Col("step", 7, "step", "d", "environment steps so far (time/total_timesteps)"),
    Col("rollout/ep_rew_mean", 7, "ep_rew", None, "mean return of the last 100 finished episodes", "higher"),
    Col(
        "eval/mean_reward", 8, "eval_rew", None,
        "mean return of the evaluation episodes (EvalCallback; evaluation steps only)", "higher",
    ),
    Col("rollout/ep_len_mean", 6, "ep_len", None, "mean length of the last 100 finished episodes"),
    Col(
        "rollout/success_rate", 7, "success", None,
        "share of the last 100 finished episodes that reached their goal", "higher",
    ),
    Col("train/loss", 6, "loss", None, "training loss of the update (PPO: its last minibatch's)"),
    Col(
        "train/policy_gradient_loss", 7, "pg_loss", None,
        "clipped surrogate policy loss, mean over the update (PPO; no good direction: it follows the advantages)",
    ),
    Col("train/policy_loss", 7, "pi_loss", None, "policy-gradient loss of the update (A2C; no good direction)"),
    Col("train/value_loss", 7, "vf_loss", None, "value-function loss of the update"),
    Col(
        "train/entropy_loss", 8, "ent_loss", None,
        "minus the policy's mean entropy (towards 0: the policy explores less)",
    ),
    Col("train/approx_kl", 6, "kl", None, "approximate KL between the policy before and after the update (PPO)"),
    Col("train/clip_fraction", 5, "clip", None, "share of samples whose probability ratio was clipped (PPO)"),
    Col(
        "train/explained_variance", 6, "ev", None,
        "share of the returns' variance the value function explains (1 best; 0 or below: none)", "higher",
    ),
    Col("train/std", 5, "std", None, "standard deviation of the policy's Gaussian actions (continuous actions)"),
    Col("train/actor_loss", 8, "act_loss", None, "actor loss of the update (SAC, TD3, DDPG)"),
    Col("train/critic_loss", 9, "crit_loss", None, "critic (Q-function) loss of the update (SAC, TD3, DDPG)"),
    Col("train/ent_coef", 8, "ent_coef", None, "entropy coefficient (SAC; learned unless fixed)"),
    Col("rollout/exploration_rate", 5, "eps", None, "share of random actions (DQN's epsilon, scheduled)"),
    Col("train/learning_rate", 6, "lr", None, "learning rate of the update (scheduled or fixed)"),
    Col("time/fps", 5, "fps", None, "environment steps a second since learn() started", "higher"),
)

RULES = (
    Rule("time/total_timesteps", "environment steps so far (the same number as step)", hide=True),
    Rule("time/iterations", "rollouts collected so far (on-policy: a counter of the step)", hide=True),
    Rule("time/episodes", "episodes finished so far (off-policy: a counter)", hide=True),
    Rule("train/n_updates", "gradient updates so far (a counter)", hide=True),
    Rule("time/time_elapsed", "seconds since learn() started"),
    Rule("train/clip_range", "PPO's clipping range of the probability ratio (a setting; scheduled if given one)"),
    Rule("train/clip_range_vf", "PPO's clipping range of the value function (a setting)"),
    Rule("train/ent_coef_loss", "loss of SAC's entropy-coefficient tuning"),
    Rule("eval/success_rate", "share of the evaluation episodes that reached their goal", "higher", promote=True),
    Rule("eval/*", EVALUATION, promote=True),
    Rule("rollout/*", "statistic of the last 100 finished episodes ({key})"),
    Rule("train/*", "statistic of the update ({key})"),
    Rule("time/*", "timing ({key})"),
)

SCHEMA = Schema(
    "sb3",
    COLS,
    "Stable-Baselines3: its logger's progress.csv / progress.json / TensorBoard scalars (PPO, A2C, DQN, SAC, TD3)",
    match,
    rules=RULES,
)
