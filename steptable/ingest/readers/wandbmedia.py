"""Which step each ``wandb.Table`` of a W&B run belongs to, from the history records that log them. Pure.

W&B writes a logged table to ``files/media/table/<key>_<n>_<hash>.table.json`` (a key with slashes makes folders:
``media/table/val/generations_<n>_...``), where ``n`` is the run's step counter as the SDK held it when ``log`` was
called: the step before the record's where the caller passes ``step=`` (verl logs its validation generations at
``step=N`` and names them ``N-1``), W&B's count of ``log`` calls where it does not (TRL's completions at train step
6 can be named 8). The record that logs the table says where its file is (``<key>/path``) and carries the row's
step: the trainer's own (``train/global_step``, which W&B's ``step_sync`` puts in every record of an HF run) where
it has it, else W&B's ``_step``: the step the run's rows are read at.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from steptable.table.stepkeys import TRACKER_STEP_KEYS

_STEP_KEYS = (*(k.encode() for k in TRACKER_STEP_KEYS), b"_step")
_TABLE_SUFFIX = b'.table.json"'


class TableSteps:
    """Table file (relative to the run's ``files/``) -> the step of the record that logged it, as records come."""

    def __init__(self) -> None:
        self.steps: dict[str, int] = {}
        self.changed = False  # a table was noted since the last :meth:`take`

    def note(self, items: Sequence[tuple[bytes, bytes]]) -> None:
        """A history record holding a media value: (key, value as JSON text) items."""
        paths = [v for k, v in items if k.endswith(b"/path") and v.endswith(_TABLE_SUFFIX)]
        if not paths:
            return
        got = dict(items)
        step = next((s for k in _STEP_KEYS if (s := _whole(got.get(k))) is not None), None)
        if step is None:
            return
        for raw in paths:
            try:
                path = json.loads(raw)
            except ValueError:
                continue
            if isinstance(path, str):
                self.steps[path] = step
                self.changed = True

    def take(self) -> dict[str, int] | None:
        """Every table noted so far (a new dict) when one was noted since the last call, else None."""
        if not self.changed:
            return None
        self.changed = False
        return dict(self.steps)


def _whole(raw: bytes | None) -> int | None:
    """A JSON number that is a whole step (``6``, ``6.0``), else None."""
    if raw is None:
        return None
    try:
        x = json.loads(raw)
    except ValueError:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x or x in (float("inf"), float("-inf")):
        return None
    return int(x) if float(x).is_integer() else None
