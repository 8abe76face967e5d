"""Which key of a row is its step. Pure; shared by the readers (ingest) and the layouts (schemas).

Trainers spell the same step key differently: SB3's CSV writes ``time/total_timesteps`` and its text logger
``total timesteps``; Ray Tune writes ``training_iteration``; others ``Global-Step`` or ``globalStep``. A key is matched
after :func:`norm_step_key` (case folded; spaces, dashes, dots and underscores the same separator), so every spelling
of a candidate is found, while the row keeps its own name for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Final

#: candidate step keys, in priority order (the first one a row carries wins for the whole file)
STEP_KEYS: Final = (
    "step", "iteration", "iter", "global_step", "training/global_step", "train/global_step", "trainer/global_step",
    "progress/batch", "_step",
    "time/total_timesteps", "total_timesteps", "training_iteration",
)

#: the trainer's own step as trainers log it into every row of a tracker that counts rows itself (W&B's ``_step``,
#: trackio's ``step``: one per ``log`` call, so a train and an eval log of one step are two): transformers' and TRL's
#: W&B and trackio callbacks write ``train/global_step``, Lightning's WandbLogger ``trainer/global_step``
TRACKER_STEP_KEYS: Final = ("train/global_step", "trainer/global_step")

_SEPARATORS = re.compile(r"[\s\-.]+|_+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=4096)
def norm_step_key(key: str) -> str:
    """``key`` as step keys are compared: camelCase split, case folded, every run of spaces, dashes, dots or
    underscores one ``_`` (a leading one kept: W&B's ``_step`` is not ``step``)."""
    lead = "_" if key.startswith("_") else ""
    return lead + _SEPARATORS.sub("_", _CAMEL.sub("_", key).casefold()).strip("_")


_RANK: Final = {norm_step_key(k): i for i, k in enumerate(STEP_KEYS)}


def is_step_key(key: str) -> bool:
    """Is ``key`` some spelling of a candidate step key?"""
    return norm_step_key(key) in _RANK


def step_key_among(keys: Iterable[str], ok: Callable[[str], bool] | None = None) -> str | None:
    """The key of ``keys`` (as spelled there) that is the highest-priority candidate step key and passes ``ok`` (a
    check of its value, say), else None."""
    best: tuple[int, str] | None = None
    for k in keys:
        rank = _RANK.get(norm_step_key(k))
        if rank is not None and (best is None or rank < best[0]) and (ok is None or ok(k)):
            best = (rank, k)
            if rank == 0:
                break
    return None if best is None else best[1]
