"""Which runs are seeds of one arm. Pure.

A run's name is its arm (``RunStore.arm``); an arm that is only a seed (``seed3`` in ``routeA/seed3/metrics.jsonl``)
is named with the directory above it (``routeA/seed3``). Runs whose names differ only by a seed part form one group
(the arm compared): by default a trailing ``seed<N>`` / ``s<N>`` after ``_``, ``-``, ``.`` or ``/`` (``routeA_seed1``,
``routeA-s2``, ``routeA/seed3``, ``routeA_seed=4``). A custom pattern (``--group REGEX``, a ``[compare] group`` in
steptable.toml) is searched in the name: its ``arm`` group, when it has one, is the group's name; else the name
with the match taken out (one separator kept where it was cut out of the middle); its ``seed`` group, when it has
one, is the seed part, else what was taken out. A name it does not match is a group of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

SEED_PATTERN = re.compile(r"(?:^|[_\-./])(?:seed|s)[_\-=]?(?P<seed>\d+)$", re.IGNORECASE)
_SEPARATORS = "_-./ "


class Named(Protocol):
    @property
    def run(self) -> str: ...
    @property
    def arm(self) -> str: ...


@dataclass(frozen=True)
class Member:
    """One run in a group: its name, the group (arm) it belongs to and its seed part ('' when alone)."""

    name: str
    group: str
    seed: str
    run: Any


def run_name(run: Named) -> str:
    """The arm, or ``parent/arm`` when the arm is only a seed part and the run's path has a directory above it."""
    arm = str(run.arm or "") or str(run.run)
    m = SEED_PATTERN.search(arm)
    if m is None or m.start() > 0:
        return arm
    parts = str(run.run).replace("#", "/").split("/")
    idx = max((i for i, p in enumerate(parts) if p == arm), default=-1)
    return f"{parts[idx - 1]}/{arm}" if idx > 0 else arm


def split_name(name: str, pattern: re.Pattern[str] | None = None) -> tuple[str, str]:
    """(group, seed part) of a run's name; (name, '') when the pattern does not match or leaves nothing."""
    pat = pattern or SEED_PATTERN
    m = pat.search(name)
    if m is None:
        return name, ""
    a, b = (m.span("arm") if "arm" in pat.groupindex and m.group("arm") else (-1, -1))
    if a >= 0:
        group, rest = m.group("arm"), name[:a] + name[b:]
    else:
        left, right = name[: m.start()], name[m.end() :]
        if left.endswith(tuple(_SEPARATORS)) and right.startswith(tuple(_SEPARATORS)):
            right = right[1:]
        group, rest = left + right, m.group(0)
    group = group.strip(_SEPARATORS)
    if not group:
        return name, ""
    seed = m.group("seed") if "seed" in pat.groupindex and m.group("seed") else rest.strip(_SEPARATORS)
    return group, seed


def group_runs(runs: Sequence[Named], pattern: re.Pattern[str] | None = None) -> dict[str, list[Member]]:
    """Group -> its members, groups in the order of their first run, members in the order given."""
    out: dict[str, list[Member]] = {}
    for r in runs:
        name = run_name(r)
        group, seed = split_name(name, pattern)
        out.setdefault(group, []).append(Member(name, group, seed, r))
    return out
