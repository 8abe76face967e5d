"""Samples of one step in groups: the completions of one prompt (GRPO's group) together, with the group's rewards.

A group whose rewards are all equal gives no learning signal (every advantage is zero): the viewer marks it. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from steptable.app.sidefiles import Sample


@dataclass(frozen=True)
class Group:
    """One prompt's samples: its place among the step's groups (1-based) and their rewards in order."""

    number: int
    rewards: tuple[float | None, ...]

    @property
    def flat(self) -> bool:
        """Two or more samples whose rewards are known and all equal (a NaN or a missing reward says nothing)."""
        rs = self.rewards
        if len(rs) < 2 or any(r is None or math.isnan(r) for r in rs):
            return False
        return all(r == rs[0] for r in rs)


def grouped(samples: Sequence[Sample]) -> list[Sample]:
    """``samples`` with each group's together, groups in the order they first appear (a sample in no group keeps
    its place among them)."""
    order: dict[str, list[Sample]] = {}
    for i, s in enumerate(samples):
        order.setdefault(s.group or f"\0{i}", []).append(s)
    return [s for members in order.values() for s in members]


def groups_of(samples: Sequence[Sample]) -> dict[str, Group]:
    """Group name -> :class:`Group`, numbered in order of first appearance."""
    rewards: dict[str, list[float | None]] = {}
    for s in samples:
        if s.group:
            rewards.setdefault(s.group, []).append(s.reward)
    return {g: Group(i + 1, tuple(rs)) for i, (g, rs) in enumerate(rewards.items())}


def rewards_text(group: Group, limit: int = 16) -> str:
    """``+1 +0 +1 +1`` (the first ``limit``, then how many more), and the mark of a group with no learning signal."""
    shown = " ".join("nan" if r is None else f"{r:+.3g}" for r in group.rewards[:limit])
    if len(group.rewards) > limit:
        shown += f" … {len(group.rewards) - limit} more"
    return shown + (" · all equal: no learning signal" if group.flat else "")
