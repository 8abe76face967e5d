"""Runs for the summary tests: a run as a summary reads it, from plain columns, a reward that is the mean of
binary outcomes (a lattice of values), a series held for several steps; and a summary's rows read back."""

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


def held(n: int, hold: int, rng: random.Random, draw: str = "normal", rise_at: int | None = None,
          rise: float = 0.0) -> list[float]:
    """n steps of a value drawn every ``hold`` steps (N(1, 0.1), or a mean of 32 coin flips at 0.3), plus ``rise``
    from step ``rise_at`` on."""
    xs: list[float] = []
    x = 0.0
    for i in range(n):
        if i % hold == 0:
            x = rng.gauss(1.0, 0.1) if draw == "normal" else sum(rng.random() < 0.3 for _ in range(32)) / 32
            if rise_at is not None and i >= rise_at:
                x += rise
        xs.append(x)
    return xs


def summary_table(text: str) -> dict[str, list[str]]:
    """Row name -> its cells, of a single run's text summary."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("col "))
    rows = [ln.split(" ") for ln in lines[start + 1 :] if ln and not ln.startswith("alerts")]
    return {r[0]: r[1:] for r in rows}
