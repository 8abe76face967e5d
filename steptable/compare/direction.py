"""What the schema a run is shown with says of its metrics: which way is better (``Col.better``, or a rule's), and in
which order they are laid out. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from steptable.alerts.rules import DEFAULT_ROLES
from steptable.compare.core import Arm
from steptable.schemafiles.resolve import run_schema
from steptable.schemas import Schema
from steptable.schemas.registry import Located

#: which way is better for the keys of the alert roles of these names, where no run's schema declares their column
ROLE_BETTER = {"reward": "higher", "loss": "lower"}


def directions(arms: Sequence[Arm], metrics: Sequence[str]) -> dict[str, str | None]:
    """Metric -> "higher" / "lower" / None, from the schema of the first run that says one (the baseline first); a
    key of the reward's or the loss's alert role (``reward``, ``train/loss``...) that no schema declares
    (:func:`_declared`): higher, lower. The one answer for ``compare``, ``summary`` and the watch's compare view."""
    out: dict[str, str | None] = dict.fromkeys(metrics)
    schemas = _schemas(arms)
    for key in metrics:
        for s in schemas:
            col = s.col(key) or next((c for c in s.cols if key in c.aliases), None)
            rule = s.rule(key)
            better = col.better if col is not None and col.better else rule.better if rule is not None else None
            if better:
                out[key] = better
                break
    known = _declared(schemas, metrics)
    for role, way in ROLE_BETTER.items():
        for k in DEFAULT_ROLES[role]:
            if k in out and out[k] is None and k not in known:
                out[k] = way
    return out


def _declared(schemas: Sequence[Schema], metrics: Sequence[str]) -> set[str]:
    """The metrics a column of one of ``schemas`` declares (its key or an alias; a column that describes it or
    gives a direction): their direction is the column's, none where it gives none (a GRPO loss follows the
    advantages). A column with neither (a StepLogger's automatic one for a key no schema knows) declares nothing."""
    return {k for k in metrics if any((c.desc or c.better) and (c.key == k or k in c.aliases)
                                      for s in schemas for c in s.cols)}


def schema_order(arms: Sequence[Arm], metrics: Sequence[str]) -> list[str]:
    """``metrics`` in the order the baseline's schema lays its columns out (a column's aliases at its place: an SB3
    run's return first), those it has no column for after them, in their own order."""
    schemas = _schemas(arms[:1])
    return _ordered(schemas[0], metrics) if schemas else list(metrics)


def default_metrics(arms: Sequence[Arm], metrics: Sequence[str]) -> list[str]:
    """``metrics`` as :func:`schema_order` lays them out, less the keys the baseline's schema keeps out of its table
    by a rule and declares no column for (TRL's profiling timings, a trainer's counters and end-of-run summaries):
    what ``tail`` leaves out by default, ``compare`` does too (``--metrics`` names them). A declared column kept out
    of the table (a StepLogger's dump-only timings) is a metric still."""
    schemas = _schemas(arms[:1])
    if not schemas:
        return list(metrics)
    s = schemas[0]
    declared = {k for c in (*s.cols, *s.extra) for k in (c.key, *c.aliases)}
    return _ordered(s, [m for m in metrics if m in declared or not s.hidden(m)])


def _ordered(schema: Schema, metrics: Sequence[str]) -> list[str]:
    rank: dict[str, int] = {}
    for i, c in enumerate(schema.cols):
        for k in (c.key, *c.aliases):
            rank.setdefault(k, i)
    return sorted((m for m in metrics if m in rank), key=rank.__getitem__) + [m for m in metrics if m not in rank]


def _schemas(arms: Sequence[Arm]) -> list[Schema]:
    """The schemas the runs of ``arms`` are shown with, each once, the baseline's first."""
    out: list[Schema] = []
    for r in (m.run for a in arms for m in a.members if hasattr(m.run, "path")):
        s = run_schema(cast(Located, r))
        if all(s is not t for t in out):
            out.append(s)
    return out
