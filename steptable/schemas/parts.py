"""The declarations a schema holds besides its columns: pattern rules, derived columns, side files. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import PurePath
from typing import Any

from steptable.table.columns import Better, ColumnError, check_fmt

#: the kinds of side files viewers know how to show
SIDE_KINDS = frozenset({"generations", "rollout_summaries", "logtree", "checkpoints", "config", "timing_spans"})


#: the legend of an evaluation key a rule promotes (on evaluation steps only: nan between them)
EVALUATION = "evaluation metric, present on evaluation steps only ({key})"


@dataclass(frozen=True)
class Rule:
    """What a schema says about every key matching ``pattern`` (an ``fnmatch`` glob over the whole key).

    desc     legend text for the matched columns; ``{key}`` is replaced by the key
    better   direction hint for all matched keys (None when it is not clear for all of them)
    fmt      format spec of the matched columns (None: compact automatic)
    hide     keep matched keys out of the default layout (a column filter still shows them)
    promote  place matched keys right after the declared columns, ahead of the keys ranked by information (among
             themselves ranked the same way: a constant promoted key comes last)
    The first rule that matches a key applies.
    """

    pattern: str
    desc: str = ""
    better: Better | None = None
    fmt: str | None = None
    hide: bool = False
    promote: bool = False

    def __post_init__(self) -> None:
        if self.better not in (None, "higher", "lower"):
            raise ColumnError(f"rule {self.pattern!r}: better must be 'higher', 'lower' or None", "better")
        check_fmt(self.fmt, f"rule {self.pattern!r}")

    def matches(self, key: str) -> bool:
        """Does ``pattern`` match the whole ``key`` (case-sensitive)?"""
        return fnmatchcase(key, self.pattern)

    def describe(self, key: str) -> str:
        """The legend text of ``key``: ``desc`` with ``{key}`` replaced."""
        return self.desc.replace("{key}", key)


@dataclass(frozen=True)
class Derived:
    """A column computed from other keys of the same row.

    key          the column's key; the schema must declare a ``Col`` with it (header, width, fmt, legend)
    needs        raw keys the value is computed from; the column is in a run's layout when a run has them all
    compute      row -> value; it gets the whole row and may return None (shown as nan); it must not raise, but
                 an exception is caught and shown as nan
    hide_inputs  keep the ``needs`` keys out of the default layout while the derived column is shown
    """

    key: str
    needs: tuple[str, ...]
    compute: Callable[[Mapping[str, Any]], Any] = field(compare=False)
    hide_inputs: bool = True

    def value(self, row: Mapping[str, Any]) -> Any:
        """The column's value in ``row``; None when an input is missing or ``compute`` raises."""
        if not all(k in row for k in self.needs):
            return None
        try:
            return self.compute(row)
        except Exception:  # a hostile or malformed row must not break a viewer
            return None


def ratio_pair(num: str, den: str) -> Callable[[Mapping[str, Any]], Any]:
    """A ``Derived.compute`` giving the ``(n, d)`` pair of two count keys, for a ``fmt="frac"`` column."""

    def pair(row: Mapping[str, Any]) -> Any:
        n, d = row.get(num), row.get(den)
        if n is None or d is None:
            return None
        return (n, d)

    return pair


@dataclass(frozen=True)
class SideFile:
    """A file of a run that holds no step rows but belongs to steps (or to the whole run).

    pattern    ``PurePath.match`` pattern, matched from the right (``emergence/generations.jsonl``,
               ``*_rollout_summaries.jsonl``)
    kind       one of ``SIDE_KINDS`` (the names ingest's discovery files them under): generations (several
               sampled completions per step), rollout_summaries (one record per trajectory), logtree (full rollout
               transcripts), checkpoints (marks on the step axis), config (run metadata, not per step),
               timing_spans (timed spans of each step)
    step_key   field of each record that holds its step (None: the records carry none)
    name_step  regular expression with one group that reads the step from the file's path
    """

    pattern: str
    kind: str
    desc: str = ""
    step_key: str | None = "step"
    name_step: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in SIDE_KINDS:
            raise ValueError(f"side file {self.pattern!r}: kind must be one of {sorted(SIDE_KINDS)}")

    def matches(self, path: str | PurePath) -> bool:
        """Does ``path`` match ``pattern`` (from the right)?"""
        return PurePath(path).match(self.pattern)

    def step_of(self, path: str | PurePath, record: Mapping[str, Any] | None = None) -> int | None:
        """The step a record (or the whole file) belongs to, when it can be told."""
        if record is not None and self.step_key is not None:
            v = record.get(self.step_key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
                return int(v)
        if self.name_step is not None:
            m = re.search(self.name_step, PurePath(path).as_posix())
            if m:
                return int(m.group(1))
        return None
