"""Which runs are seeds of one arm in the app, and where its compare view starts: ``watch --group REGEX``, else the
``[compare]`` table of the runs' steptable.toml (``group``, ``baseline``, ``x``) as ``compare`` and ``summary`` read
it, so that a sweep whose runs the file groups (``lr1e-5_seed3_r12``) is folded into the same arms in every view."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ArmRule:
    """``pattern``: the seed part of a run's name, as steptable.compare.groups takes it (None: its default, a
    trailing ``seed<N>``); ``baseline``: the arm the compare view compares against first (None: the first arm);
    ``x``: the compare view's first x axis."""

    pattern: re.Pattern[str] | None = None
    baseline: str | None = None
    x: str = "step"


def arm_rule(paths: Sequence[str], group: str | None = None) -> ArmRule:
    """The rule for the runs under ``paths``: ``group`` (``--group``, a valid pattern) over the ``[compare]`` table
    of the steptable.toml nearest the first path. Raises SchemaFileError where that table cannot be used."""
    from steptable.schemafiles.files import compare_settings

    settings = compare_settings(paths[0]) if paths else {}
    pattern = group if group is not None else settings.get("group")
    return ArmRule(re.compile(pattern) if pattern else None, settings.get("baseline"), settings.get("x", "step"))


def group_refusal(group: str | None) -> str | None:
    """Why ``--group`` cannot be used (``watch`` refuses to start on it), or None."""
    if group is None:
        return None
    try:
        re.compile(group)
    except re.error as e:
        return f"--group {group!r}: {e}"
    return None


class RuleOf:
    """The app's rule, read when first asked (after the first frame: the file is not read before it), once. A
    ``[compare]`` table that cannot be used leaves ``group`` alone (``watch`` refused to start on it already)."""

    def __init__(self, paths: Sequence[str], group: str | None = None) -> None:
        self._paths = list(paths)
        self._group = group
        self._rule: ArmRule | None = None

    def __call__(self) -> ArmRule:
        if self._rule is None:
            from steptable.schemas import SchemaFileError

            try:
                self._rule = arm_rule(self._paths, self._group)
            except SchemaFileError:
                self._rule = ArmRule(re.compile(self._group) if self._group else None)
        return self._rule
