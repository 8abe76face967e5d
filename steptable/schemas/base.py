"""Schema: a declarative column set plus how to recognise a run that it fits. Pure.

How runs are laid out against a schema (``layout``, ``auto_col``, column filters) is ``steptable.schemas.arrange``.

A schema declares, besides its ``Col`` list:

- ``rules``: descriptions, direction hints and visibility for keys it cannot list one by one (``val-core/*``,
  ``time/*``). ``hide=True`` keeps matching keys out of the default layout; a column filter still reaches them.
- ``derived``: columns computed from other keys of the same row (``Derived``). Their values are not in the raw
  rows: a viewer passes each row through ``schema.derive(row)`` (or reads ``schema.column(run, key)``) before
  rendering. ``Col.aliases`` are filled the same way: a column shows its first alias when its own key is absent.
- ``side_files``: files of the run that are not step rows (sampled completions, rollout summaries, checkpoint
  marks, the run config). Discovery asks ``schema.side_file(path)`` and hands them to the viewers by kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePath
from typing import Any, Protocol

from steptable.schemas.parts import SIDE_KINDS, Derived, Rule, SideFile, ratio_pair
from steptable.table.columns import Col, ColumnError, validate
from steptable.table.stepkeys import STEP_KEYS as STEP_KEYS

__all__ = [
    "META_KEYS", "SIDE_KINDS", "STEP_KEYS", "Derived", "Rule", "RunView", "Schema", "SideFile", "derive_rows",
    "ratio_pair",
]

#: keys that are bookkeeping, not metrics (never auto-columns)
META_KEYS = frozenset({"arm", "ts", "timestamp", "_timestamp", "wall_time", "run", "_runtime", "_step", "writer_pid"})



class RunView(Protocol):
    """What a schema needs to see of a run (``steptable.ingest.RunStore`` satisfies it)."""

    keys: list[str]

    def column(self, key: str) -> Sequence[Any]: ...

    def __len__(self) -> int: ...


def _no_match(path: Path, keys: Sequence[str]) -> float:
    return 0.0


def one_part(path: PurePath) -> str:
    """Every file of a schema is of one kind (the default ``Schema.part``)."""
    return ""


@dataclass(frozen=True)
class Schema:
    """A named column set. ``match(path, keys)`` scores how well a file fits (0 = not at all, 1 = certain)."""

    name: str
    cols: tuple[Col, ...]
    description: str = ""
    match: Callable[[Path, Sequence[str]], float] = field(default=_no_match, compare=False)
    #: show keys the schema does not declare as auto columns after the declared ones
    extend: bool = True
    rules: tuple[Rule, ...] = ()
    derived: tuple[Derived, ...] = ()
    side_files: tuple[SideFile, ...] = ()
    #: where the schema comes from: "built-in" or the path of the TOML file that declared it
    source: str = "built-in"
    #: declared columns kept out of the default layout (a StepLogger's dump-only timings): a filter shows them
    #: as declared (width, format, header), where a hidden key of a rule is measured as an undeclared one
    extra: tuple[Col, ...] = ()
    #: declared columns kept out of the default layout: those a user's file takes from the schema it extends and
    #: hides with its own glob (``hide = ["timing_s/*"]`` over verl's timings); never one the file declares itself
    hides: frozenset[str] = field(default=frozenset(), compare=False)
    #: which of the schema's kinds of file a file is: runs share a layout only with runs of their kind (retrain's
    #: emergence summary beside its metrics file: one layout of the two would show the summary as a row of nan)
    part: Callable[[PurePath], str] = field(default=one_part, compare=False)
    #: one schema for several trainers whose runs log different keys (HF Trainer's SFT, DPO, PPO, GRPO): the keys
    #: all of them log (loss, learning_rate...), which say nothing of the trainer. Runs detected as it share a
    #: layout only with runs that share most of their other keys, as a generic run's do. None: one trainer.
    several: frozenset[str] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        validate(self.cols + self.extra)
        keys = {c.key for c in self.cols}
        for d in self.derived:
            if d.key not in keys:
                raise ColumnError(f"schema {self.name!r}: derived column {d.key!r} has no declared Col")

    @cached_property
    def _by_key(self) -> dict[str, Col]:
        return {c.key: c for c in self.cols}

    def col(self, key: str) -> Col | None:
        """The declared column of ``key`` (not of an alias); None when there is none."""
        return self._by_key.get(key)

    def rule(self, key: str) -> Rule | None:
        """The first rule whose pattern matches ``key``; None when none does."""
        for r in self.rules:
            if r.matches(key):
                return r
        return None

    def hidden(self, key: str) -> bool:
        """Does the rule of ``key`` keep it out of the default layout?"""
        r = self.rule(key)
        return r is not None and r.hide

    def side_file(self, path: str | PurePath) -> SideFile | None:
        """The first side-file declaration ``path`` matches; None for a file of step rows."""
        for s in self.side_files:
            if s.matches(path):
                return s
        return None

    @cached_property
    def _fills(self) -> tuple[tuple[Col, ...], tuple[Derived, ...]]:
        return tuple(c for c in self.cols if c.aliases), self.derived

    def derive(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """The row with derived and aliased values added (a new dict; the row itself when nothing applies)."""
        aliased, derived = self._fills
        if not aliased and not derived:
            return row
        out = dict(row)
        for c in aliased:
            if c.key not in out:
                for a in c.aliases:
                    if a in out:
                        out[c.key] = out[a]
                        break
        for d in derived:
            if d.key not in out:
                v = d.value(out)
                if v is not None:
                    out[d.key] = v
        return out

    def column(self, run: RunView, key: str) -> list[Any]:
        """All values of ``key`` in ``run``, derived or aliased ones included (None where missing)."""
        if key in run.keys:
            return list(run.column(key))
        c = self.col(key)
        for a in c.aliases if c is not None else ():
            if a in run.keys:
                return list(run.column(a))
        for d in self.derived:
            if d.key == key and all(n in run.keys for n in d.needs):
                cols = {n: run.column(n) for n in d.needs}
                return [d.value({n: v[i] for n, v in cols.items()}) for i in range(len(run))]
        return [None] * len(run)


def derive_rows(schema: Schema | None, rows: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    """``schema.derive`` over rows (the rows unchanged when there is no schema)."""
    if schema is None:
        return rows
    return (schema.derive(r) for r in rows)
