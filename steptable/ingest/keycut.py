"""Which new keys a table keeps when a batch brings more than it has room for (``MAX_KEYS``). Pure.

A batch's key order is no rank: wandb-core writes a history record's items in Go map order (random per run), and a
JSONL row's order is whatever dict the trainer built (per-layer statistics may come before the loss). So the room
left goes to the keys of :func:`rank` first: step and clock keys, then names without a numbered part (``loss``
before ``grad_norm/layer0042``: a per-layer or per-sample family is what overflows), shallow before deep, short
before long, then by name. The same keys then give the same columns, whatever their order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from steptable.ingest.parsed import WALL_KEYS
from steptable.table.stepkeys import is_step_key

_NUMBERED = re.compile(r"\d")


def rank(key: str) -> tuple[bool, bool, int, int, str]:
    """The sort key of ``key`` among keys competing for the room left (lower is kept first)."""
    return (not (is_step_key(key) or key in WALL_KEYS), _NUMBERED.search(key) is not None, key.count("/"), len(key),
            key)


def kept(new: Iterable[str], room: int) -> set[str]:
    """The ``room`` keys of ``new`` (keys the table does not hold yet) it keeps: the first by :func:`rank`."""
    return set(sorted(new, key=rank)[: max(room, 0)])


def left_out(new: Iterable[str], room: int) -> list[str]:
    """The keys of ``new`` past the ``room`` left (not :func:`kept`), by :func:`rank`: none where all fit."""
    ranked = sorted(new, key=rank)
    return ranked[max(room, 0):]
