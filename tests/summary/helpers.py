"""Runs for the summary tests: a run as a summary reads it, from plain columns, and a reward that is the mean
of binary outcomes (a lattice of values)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


def lattice(seed: int, p: list[float] | float, m: int = 32, n: int = 1000) -> list[float]:
    """A reward that is the mean of ``m`` binary outcomes of probability ``p`` (one per step, or the same)."""
    g = random.Random(seed)
    ps = p if isinstance(p, list) else [p] * n
    return [sum(g.random() < q for _ in range(m)) / m for q in ps]


@dataclass
class FakeRun:
    """A run as a summary reads it (steptable.summary.keycols.RunLike), from plain columns."""

    run: str
    arm: str
    cols: dict[str, list[Any]]
    steps: list[int]
    resumes: list[int] = field(default_factory=list)
    bad_count: int = 0
    last_update: float | None = None
    wall_times: list[float] = field(default_factory=list)

    @property
    def keys(self) -> list[str]:
        return list(self.cols)

    def column(self, key: str) -> Sequence[Any]:
        return self.cols.get(key, [math.nan] * len(self.steps))

    def __len__(self) -> int:
        return len(self.steps)
