"""TinyZero (an older verl fork): console lines ``step:N - key:value - ...`` tee'd to a log file.

Ingest parses the lines (Ray's ``(main_task pid=N)`` prefix and unrelated lines stripped); this schema names the
metrics of that era: ``actor/entropy_loss`` (which is the entropy itself), ``critic/kl``, ``mfu/actor`` and
``val/test_score/<data source>`` on validation steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from steptable.schemas import verl as v
from steptable.schemas.base import Rule, Schema
from steptable.table.columns import Col


def match(path: Path, keys: Sequence[str]) -> float:
    """How well a file fits TinyZero (0..1): see steptable.schemas.verl.family_scores."""
    return v.family_scores(path, keys)[1]


COLS = (
    v.STEP,
    v.SCORE,
    v.REWARD,
    v.PG_LOSS,
    Col(
        "actor/entropy_loss", 7, "entropy", None,
        "mean token entropy of the policy (logged under the name entropy_loss; not a loss to minimise)",
    ),
    v.KL,
    Col("critic/kl_coeff", 7, "kl_coef", ".1e", "coefficient of the in-reward KL penalty (adaptive or fixed)"),
    v.PPO_KL,
    v.CLIPFRAC,
    v.GRAD_NORM,
    v.LR,
    v.VF_LOSS,
    v.VF_EV,
    v.RESP_LEN,
    v.RESP_CLIP,
    Col("mfu/actor", 5, "mfu", None, "model FLOPs utilisation of the actor update", "higher"),
    v.T_STEP,
    v.T_GEN,
)

RULES = (
    Rule("val/test_score/*", "validation score on one data source ({key})", "higher", promote=True),
    *v.SHARED_RULES,
)

SCHEMA = Schema(
    "tinyzero",
    COLS,
    "TinyZero / early verl: console log lines (step:N - key:value - ...)",
    match,
    rules=RULES,
)
