"""What an alert is and what it watches: the role table, the thresholds, the Alert record and how a cell is read as a
number. Pure, stdlib only; steptable.alerts.engine is the public face (it re-exports these names)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from steptable.table.formatting import sanitize

Level = Literal["W", "E"]

# Role -> candidate keys (exact, case-sensitive). Entropy is the policy's mean token entropy only: not
# train/weight_entropy (an entropy of weights, not of the policy), not exec_surprisal_mean (surprisal of sampled
# tokens, another quantity), not entropy_coeff (a setting). actor/entropy_loss is the entropy itself, under the name
# of the loss term it feeds (TinyZero and the verl of its time; later verl logs it as actor/entropy): last, so a run
# that logs both is watched on actor/entropy.
# TRL's PPO/RLOO trainers log objective/* and loss/policy_avg; objective/kl is summed over a response's tokens (see
# SUMMED_KL), objective/entropy too, and it is not watched: it follows the response length (OnlineDPO logs no other
# entropy; PPO's per-token policy/entropy_avg is). Current verl logs the in-reward KL as actor/reward_kl_penalty
# (critic/kl in the verl of TinyZero's time). Lightning's docs and templates log the loss as train_loss.
DEFAULT_ROLES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "loss": ("loss", "train/loss", "train_loss", "actor/pg_loss", "loss/policy_avg"),
    "grad_norm": ("gn", "grad_norm", "actor/grad_norm", "train/grad_norm", "optim/grad_norm"),
    "reward": ("rew", "reward", "mean_reward", "env/all/reward/total", "critic/score/mean", "train/reward",
               "critic/rewards/mean", "objective/scores"),
    "entropy": ("entropy", "actor/entropy", "optim/entropy", "train/entropy", "actor/entropy_loss",
                "policy/entropy_avg"),
    "kl": ("kl", "critic/kl", "actor/ppo_kl", "train/kl", "optim/kl_sample_train_v1", "kl_sample_train_v1",
           "actor/kl_loss", "actor/reward_kl_penalty", "objective/kl"),
    "saturation": ("response_length/clip_ratio", "completions/clipped_ratio", "train/completions/clipped_ratio",
                   "train/completions/clipped_frac", "max_token_hit_rate", "actor/pg_clipfrac"),
    "hack": ("hack_s",),
    "auroc": ("auroc",),
})
MULTI_ROLES = frozenset({"kl", "saturation"})
#: KL columns summed over a response's tokens (TRL's PPO): their size follows the response length (10 is a healthy
#: level there), so only a jump over the column's own median counts, not the absolute KL levels
SUMMED_KL = frozenset({"objective/kl"})


@dataclass(frozen=True)
class AlertConfig:
    """Thresholds of every detector. Windows count rows where the column is present."""

    roles: Mapping[str, Sequence[str]] = field(default_factory=dict)  # merged over DEFAULT_ROLES; () disables
    rearm: int = 10  # clear rows before a detector can fire again ...
    clear_frac: float = 0.8  # ... a row clear only this far inside its threshold (a ratio hovering at .9 is one W)
    window: int = 50  # recent rows for median / MAD
    min_history: int = 20  # rows in the window before spike / collapse / jump tests run
    nan_missing: bool = False  # float NaN cells are absent (stored columns that pad with NaN); "nan" strings count
    spike_z: float = 10.0  # robust z of loss / grad-norm over the window median
    spike_min_rel: float = 0.5  # ... and more than this far above the median, relative to |median| (loss) ...
    grad_spike_min_rel: float = 3.0  # ... (grad norm: single-step x3 spikes are routine, a x10 one is not)
    spike_tail: float = 4.0  # ... and z this many times the largest the column came back from (KL jumps too)
    grad_rise: float = 4.0  # grad norm: W when its level is this many times the lowest 50-row median seen ...
    grad_rise_pre: float = 2.0  # ... and this many times the level before that low (the end of a dip is no rise)
    hold: int = 10  # reward / entropy: the low median of the last `hold` rows is the current level
    drop_sigma: float = 4.0  # reward / entropy drop below the window median, in robust sigma of the window ...
    reward_rel_drop: float = 0.3  # ... and for reward relative to |window median|
    peak_sigma: float = 8.0  # reward: or this many sigma (of the window then) below the peak level, and by rel_drop
    reward_floor_tol: float = 0.1  # E within this share of the gap to the floor (0, or the lowest value seen before
    # the reference if < 0), the reference clearly above it (by reward_rel_drop)
    entropy_early: int = 20  # first rows whose median is the early level
    entropy_frac_early: float = 0.1  # W below this share of the early level
    entropy_frac_recent: float = 0.5  # W below this share of the window median
    entropy_rise: float = 3.0  # W when its level is this many times the lowest 50-row median seen ...
    entropy_rise_early: float = 1.5  # ... and this many times the early level (a recovery from a collapse is no rise)
    kl_warn: float = 1.0  # absolute KL levels (W, E)
    kl_error: float = 10.0
    kl_jump: float = 10.0  # factor over the window median (W, E), with a robust z above spike_z
    kl_jump_error: float = 100.0
    kl_jump_min: float = 0.01  # a jump counts only above this absolute KL
    flat_rows: int = 50  # loss / grad norm / reward exactly the same for this many rows: no learning signal
    sat_level: float = 0.9  # saturation: ratio above this ...
    sat_rows: int = 5  # ... for this many consecutive rows
    stall_factor: float = 10.0  # no row for this many median row intervals ...
    stall_min_s: float = 60.0  # ... and at least this many seconds
    stall_min_rows: int = 5  # row intervals seen before the stall test runs
    # quiet past the stall threshold with nothing saying it still runs: stalled only this long (or 2x the threshold),
    # then idle (a finished run from a trainer that marks no end is not an alert)
    stall_window_s: float = 1800.0
    idle_unknown_s: float = 600.0  # a run with no usual interval known (few rows) is idle after this long
    hack_window: int = 20  # observations of each of hack_s / auroc; halves are compared
    hack_rise: float = 0.1  # pooled hack rate up by this much (absolute) ...
    auroc_drop: float = 0.05  # ... while the mean AUROC falls by this much

    def role_keys(self) -> dict[str, tuple[str, ...]]:
        """The role table in force: DEFAULT_ROLES with this config's roles replacing theirs."""
        out = {r: tuple(k) for r, k in DEFAULT_ROLES.items()}
        out.update({r: tuple(k) for r, k in self.roles.items()})
        return out

    def watched(self) -> frozenset[str]:
        """Every key a role watches: the only columns a scan reads (hand it those, not every column)."""
        return frozenset(k for keys in self.role_keys().values() for k in keys)


@dataclass(frozen=True)
class Alert:
    """One alert: where an episode of a detector starts (or a run-level event), as one line of text."""

    level: Level  # "W" warning, "E" error
    step: int
    column: str  # the key; "" for run-level alerts (stall, ended)
    kind: str  # nonfinite, spike, grad_rise, reward_collapse, entropy_collapse, entropy_rise, kl_blowup, saturation,
    # flat, stall, hack_auroc, ended (a crash or an interruption: steptable.alerts.engine.end_alert)
    message: str
    #: the step of the resume that replaced the row this alert is of (its cell now holds the new row's value)
    replaced: int | None = None

    def line(self) -> str:
        """One ASCII line: ``E step 812 loss non-finite (nan) after 811 finite steps``."""
        return f"{self.level} {self.message_line()}"

    def message_line(self) -> str:
        """The line without the level letter (for loggers that show the level themselves)."""
        col = f" {self.column}" if self.column else ""
        return sanitize(f"step {self.step}{col} {self.message}")


def cell_float(v: Any) -> float | None:
    """Numeric view of one cell; None when absent or not numeric. NaN / inf are returned as such."""
    if v is None or isinstance(v, float):
        return v
    if isinstance(v, (str, tuple, list)):
        fr = cell_frac(v)
        if fr is not None:
            return fr[0] / fr[1]
        if not isinstance(v, str):
            return None
    try:  # ints, bools, numeric strings, numpy / torch scalars
        return float(v)
    except OverflowError:  # an int beyond float range
        return (math.inf if v > 0 else -math.inf) if isinstance(v, int) else None
    except Exception:
        return None


def cell_frac(v: Any) -> tuple[float, float] | None:
    """``(n, d)`` of a fraction cell (tuple, list or "n/d" string) with finite n and d > 0, else None."""
    if isinstance(v, str):
        v = v.split("/")
    if not isinstance(v, (tuple, list)) or len(v) != 2:
        return None
    try:
        n, d = float(v[0]), float(v[1])
    except Exception:
        return None
    return (n, d) if math.isfinite(n) and math.isfinite(d) and d > 0 else None
