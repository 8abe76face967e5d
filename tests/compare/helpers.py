"""Helpers of the comparison tests: runs in memory (for simulations) and arms written as files. (Not a conftest.py:
the top-level tests import ``conftest`` by name, and a second one here would shadow it.)"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class MemRun:
    """A run in memory with what steptable.compare reads of a RunStore (columns of floats, NaN = absent)."""

    def __init__(self, arm: str, steps: Sequence[int], cols: Mapping[str, Sequence[float]], run: str = "",
                 walls: Sequence[float] = (), resumes: Sequence[int] = ()) -> None:
        self.arm = arm
        self.run = run or f"{arm}/metrics.jsonl"
        self.steps = array("q", steps)
        self.wall_times = array("d", walls)
        self.resumes = list(resumes)
        self._cols = {k: array("d", v) for k, v in cols.items()}
        self.keys = list(self._cols)

    def __len__(self) -> int:
        return len(self.steps)

    def is_numeric(self, key: str) -> bool:
        return key in self._cols

    def column(self, key: str) -> Sequence[float]:
        if key == "step" and key not in self._cols:
            return array("d", self.steps)
        return self._cols[key][:] if key in self._cols else array("d", [math.nan]) * len(self.steps)

    def column_between(self, key: str, start: int = 0, stop: int | None = None) -> Sequence[float]:
        return self.column(key)[start:stop]

    def steps_between(self, start: int = 0, stop: int | None = None) -> Sequence[int]:
        return self.steps[start:stop]

    def wall_times_between(self, start: int = 0, stop: int | None = None) -> Sequence[float]:
        return self.wall_times[start:stop]


def write_arms(base: Path, runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> Path:
    """Each run's rows to ``base/<name>/metrics.jsonl`` (``None`` values written as JSON null); returns ``base``."""
    for name, rows in runs.items():
        path = base / name / "metrics.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return base
