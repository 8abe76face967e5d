"""One JSONL file written by StepLoggers of several arms (given one ``run_dir``): each arm's rows as a run of its own;
and the rows a second process wrote into an arm's rows (``writer_pid``), apart from the first's.

A row names its arm (``"arm": "routeA"``); an arm is split off the file's first arm only when its StepLogger's
description (``steptable.<arm>.json``) is beside the file, so a file whose rows merely carry an ``arm`` field
(a bandit's pulled arm, say) stays one run. Pure, apart from a stat per arm name now and then.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from steptable.ingest.parse import MISSING
from steptable.ingest.parsed import Parsed, cols_to_rows
from steptable.table import runinfo

#: arm names a file's rows may name (a file whose rows name more is not a StepLogger's: no more are split off)
MAX_ARMS = 4096
#: seconds before an arm without a description is looked for again (a StepLogger writes its own before its first
#: row; an older version writes it a moment after)
RECHECK_S = 2.0


class ArmSplit:
    """Decides, per file, which rows go to the file's own store and which to the store of another arm."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # the first arm a row names: its rows stay in the file's store, also after the file is truncated or
        # replaced (so an arm's rows stay under its name whichever arm logs first after a restart)
        self.first: str | None = None
        self.split: set[str] = set()  # arms with their own description beside the file
        self.looked: dict[str, float] = {}  # arms without one: when they were last looked for

    def groups(self, parsed: Parsed) -> list[tuple[str | None, Parsed]]:
        """``parsed`` in parts: (None: the file's own store, or the arm whose store takes them), in file order of
        their first rows. One part, ``(None, parsed)``, when nothing is split off (the usual case, at no cost)."""
        arms = arm_values(parsed)
        if arms is None:
            return [(None, parsed)]
        # Only a string names an arm: a list, dict, number, bool or null under ``arm`` is a cell of the row, which
        # stays in the file's store (and cannot be hashed: one list would make the whole file unreadable).
        arms = [a if type(a) is str else None for a in arms]
        if self.first is None:
            self.first = next((a for a in arms if a is not None), None)
        names = {a for a in arms if a is not None and a != self.first}
        own = {a for a in names if self._own(a)}  # (each name once a chunk: a row is not a stat)
        if not own:
            return [(None, parsed)]
        return split_rows(parsed, [a if a in own else None for a in arms])

    def _own(self, arm: str) -> bool:
        if arm in self.split:
            return True
        now = time.monotonic()
        last = self.looked.get(arm)
        if last is not None and now - last < RECHECK_S:
            return False
        if last is None and len(self.looked) >= MAX_ARMS:
            return False
        self.looked[arm] = now
        if os.path.exists(self.path.parent / runinfo.file_name(arm)):
            self.split.add(arm)
            del self.looked[arm]
            return True
        return False


def split_rows(parsed: Parsed, where: list[Any]) -> list[tuple[Any, Parsed]]:
    """``parsed`` in parts by ``where`` (a key per row; None: the file's own store), in file order of their first
    rows; the chunk's bad lines and meta go with the None part (one made for them where no row stays)."""
    rows = parsed.rows if parsed.rows is not None else cols_to_rows(parsed.cols or {}, len(parsed.steps))
    order: dict[Any, list[int]] = {}
    for i, w in enumerate(where):
        order.setdefault(w, []).append(i)
    out = []
    for w, idx in order.items():
        part = Parsed(steps=[parsed.steps[i] for i in idx], rows=[rows[i] for i in idx], step_key=parsed.step_key)
        if w is None:
            part.bad, part.meta = parsed.bad, parsed.meta
        out.append((w, part))
    if None not in order and (parsed.bad or parsed.meta):  # the chunk's bad lines still belong to the file
        out.insert(0, (None, Parsed(steps=[], bad=parsed.bad, meta=parsed.meta, step_key=parsed.step_key)))
    return out


def writer_groups(parsed: Parsed) -> list[tuple[int | None, Parsed]]:
    """``parsed`` in parts by the ``writer_pid`` its rows carry (a StepLogger that found its arm's writer lock held
    by another live process marks its rows with its pid): None for rows without one. One part, ``(None, parsed)``,
    when no row carries one (the usual case, at no cost)."""
    if parsed.cols is not None:
        col = parsed.cols.get(runinfo.WRITER_KEY)
        pids = None if col is None else [None if v is MISSING else v for v in col]
    elif parsed.rows is not None and any(runinfo.WRITER_KEY in r for r in parsed.rows):
        pids = [r.get(runinfo.WRITER_KEY) for r in parsed.rows]
    else:
        pids = None
    if pids is None:
        return [(None, parsed)]
    where = [p if type(p) is int and p > 0 else None for p in pids]
    return [(None, parsed)] if not any(where) else split_rows(parsed, where)


def arm_values(parsed: Parsed) -> list[Any] | None:
    """The ``arm`` each parsed row names (None where it names none); None when no row does."""
    if parsed.cols is not None:
        col = parsed.cols.get("arm")
        return None if col is None else [None if v is MISSING else v for v in col]
    if parsed.rows is not None and any("arm" in r for r in parsed.rows):
        return [r.get("arm") for r in parsed.rows]
    return None
