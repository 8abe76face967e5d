"""Which new keys a table keeps when a batch brings more than it has room for (``MAX_KEYS``). Pure.

A batch's key order is no rank: wandb-core writes a history record's items in Go map order (random per run), and a
JSONL row's order is whatever dict the trainer built (per-layer statistics may come before the loss). So the room
left goes, row by row, to the keys of :func:`rank` first: step and clock keys, then names without a numbered part
(``loss`` before ``grad_norm/layer0042``: a per-layer or per-sample family is what overflows), shallow before deep,
short before long, then by name. The same rows then give the same columns, whatever their keys' order and however
the file was cut into batches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from steptable.ingest.parse import MISSING
from steptable.ingest.parsed import WALL_KEYS
from steptable.table.stepkeys import is_step_key

_NUMBERED = re.compile(r"\d")


def rank(key: str) -> tuple[bool, bool, int, int, str]:
    """The sort key of ``key`` among keys competing for the room left (lower is kept first)."""
    return (not (is_step_key(key) or key in WALL_KEYS), _NUMBERED.search(key) is not None, key.count("/"), len(key),
            key)


def past_room(new: Mapping[str, int], room: int) -> list[str]:
    """The keys of ``new`` (key -> the row of its batch it is first in) past the ``room`` left, as rows are taken
    one by one: by that row, then by :func:`rank`; none where all fit. (Row by row, not by rank over the batch: the
    keys kept must not depend on where a file was cut into batches.)"""
    ranked = sorted(new, key=lambda k: (new[k], rank(k)))
    return ranked[max(room, 0):]


def first_present(vals: Sequence[Any]) -> int:
    """The index of the first cell of a batch's column that holds a value (not MISSING)."""
    return next((i for i, v in enumerate(vals) if v is not MISSING), len(vals))
