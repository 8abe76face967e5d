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


def constant_seeds(lifts: Mapping[str, float], steps: int = 20, key: str = "m") -> list[MemRun]:
    """Arms of three seeds (``ARM_seed0`` ..), seed s of an arm logging ``key`` = its lift + s at every step: the
    seeds' window means exact, so a difference's t statistic and p-value are known in advance (the lifts 2.5 and
    2.6 against 0: Welch's p .0376 and .0334, each interval off 0, neither within Holm's .025 of two)."""
    return [MemRun(f"{arm}_seed{s}", range(steps), {key: [lift + s] * steps})
            for arm, lift in lifts.items() for s in (0, 1, 2)]
