"""One JSONL file written by StepLoggers of several arms (given one ``run_dir``): each arm's rows as a run of its own.

A row names its arm (``"arm": "routeA"``); an arm is split off the file's first arm only when its StepLogger's
description (``steptable.<arm>.json``) is beside the file, so a file whose rows merely carry an ``arm`` field
(a bandit's pulled arm, say) stays one run. Pure, apart from that one stat per new arm name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from steptable import runinfo
from steptable.ingest.parse import MISSING
from steptable.ingest.store import Parsed
from steptable.ingest.table import cols_to_rows

#: arm names looked at per file (a file whose rows name thousands of arms is not a StepLogger's)
MAX_ARMS = 64


class ArmSplit:
    """Decides, per file, which rows go to the file's own store and which to the store of another arm."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.first: str | None = None  # the first arm a row names: its rows stay in the file's store
        self.split: set[str] = set()  # arms with their own description beside the file
        self.looked: set[str] = set()  # arm names asked about (at most MAX_ARMS)

    def groups(self, parsed: Parsed) -> list[tuple[str | None, Parsed]]:
        """``parsed`` in parts: (None: the file's own store, or the arm whose store takes them), in file order of
        their first rows. One part, ``(None, parsed)``, when nothing is split off (the usual case, at no cost)."""
        arms = _arms(parsed)
        if arms is None:
            return [(None, parsed)]
        if self.first is None:
            self.first = next((a for a in arms if type(a) is str), None)
        where = [a if type(a) is str and a != self.first and self._own(a) else None for a in arms]
        if not any(w is not None for w in where):
            return [(None, parsed)]
        rows = parsed.rows if parsed.rows is not None else cols_to_rows(parsed.cols or {}, len(parsed.steps))
        order: dict[str | None, list[int]] = {}
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

    def _own(self, arm: str) -> bool:
        if arm in self.split:
            return True
        if arm not in self.looked:
            if len(self.looked) >= MAX_ARMS:
                return False
            self.looked.add(arm)
        if os.path.exists(self.path.parent / runinfo.file_name(arm)):
            self.split.add(arm)
            return True
        return False  # (asked again with the next chunk: a description may come a moment after the first row)

    def reset(self) -> None:
        self.first = None


def _arms(parsed: Parsed) -> list[Any] | None:
    if parsed.cols is not None:
        col = parsed.cols.get("arm")
        return None if col is None else [None if v is MISSING else v for v in col]
    if parsed.rows is not None and any("arm" in r for r in parsed.rows):
        return [r.get("arm") for r in parsed.rows]
    return None
