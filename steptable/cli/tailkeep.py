"""The projection `steptable tail --columns` reads with: which keys' values a run's store keeps, and whether what it
kept prints what a store of every key would.

Why: a long run's store holds every key's history (34 MB of doubles for 100k rows x 43 keys) while ``--columns``
prints a few. The layout that decides which columns the patterns select needs every key of the run (kept in any
case: a key left out stays one of the store's keys, with a byte a row for where rows go) but the values of few:
a column's own width, notation and rank come from its own values. What the kept values cannot settle is checked
once the file is read (:func:`holds`); where it does not hold, the command reads again with every key (one-shot),
so the output is always the store path's.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from steptable.ingest.parsed import WALL_KEYS
from steptable.schemafiles.files import files_below
from steptable.schemafiles.resolve import by_schema, get_schema, user_schemas
from steptable.schemas import Schema
from steptable.schemas.arrange import layout, matches, own_step_keys, run_keys, step_key_of
from steptable.schemas.base import META_KEYS
from steptable.schemas.headers import order_free, short_headers
from steptable.schemas.registry import SCHEMAS
from steptable.table.stepkeys import is_step_key


def for_args(args: argparse.Namespace, patterns: Sequence[str]) -> Callable[[str], bool] | None:
    """The projection of `tail` with ``args`` and its ``--columns`` ``patterns``: none with --alerts-only (alerts
    watch every column) or without patterns."""
    if args.alerts_only or not patterns:
        return None
    named = [get_schema(args.schema, near=args.paths)] if args.schema else []
    # (the steptable.toml columns of the runs too: under -f their keys may arrive after the first check)
    places = [q for p in args.paths for q in (p, *(f.parent for f in files_below(Path(p))))]
    mine = [s for q in places for s in user_schemas(q)]
    return projection(patterns, [*named, *mine])


def holds_for(args: argparse.Namespace, patterns: Sequence[str], stores: Sequence[Any]) -> bool:
    """:func:`holds` of ``stores`` grouped by schema as `tail` with ``args`` groups them."""
    named = get_schema(args.schema, near=args.paths) if args.schema else None
    return holds(by_schema(stores, named), patterns)


def projection(patterns: Sequence[str], schemas: Sequence[Schema] = ()) -> Callable[[str], bool] | None:
    """The keep test of a store read for ``patterns`` (``--columns`` globs; None when there are none: every column
    may be printed): a key kept when a pattern may select it (its key, its header alone, a tail of its path),
    when a declared column a pattern may select reads it (an alias, a derived column's input) in a built-in schema
    or one of ``schemas``, and every step, clock and bookkeeping key. A guess: :func:`holds` checks it."""
    pats = [p.strip() for p in patterns if p.strip()]
    if not pats:
        return None
    wanted: set[str] = set()
    for schema in [*SCHEMAS.values(), *schemas]:
        for c in (*schema.cols, *schema.extra):
            if any(matches(c.key, c.header.strip(), p) for p in pats):
                wanted.update((c.key, *c.aliases))
                wanted.update(n for d in schema.derived if d.key == c.key for n in d.needs)
    fixed = {"step", *WALL_KEYS, *META_KEYS} | wanted

    def keep(key: str) -> bool:
        if key in fixed or is_step_key(key):
            return True
        segs = key.split("/")
        names = {key, short_headers([key])[key], *("/".join(segs[i:]) for i in range(1, len(segs)))}
        return any(fnmatchcase(n, p) for n in names for p in pats)

    return keep


def needed(cols: Sequence[Any], schema: Schema, step_key: str, more: Sequence[str] = ()) -> set[str]:
    """The stored keys rows of ``cols`` (and the keys ``more``) are made of: the columns, their aliases, what
    derived ones are computed from (closed over: an alias of a derived column's input counts), the step."""
    need: set[str] = set()
    todo = ["step", step_key, *(k for c in cols for k in (c.key, *c.aliases)), *more]
    while todo:
        k = todo.pop()
        if k in need:
            continue
        need.add(k)
        c = schema.col(k)
        todo += c.aliases if c is not None else ()
        todo += [n for d in schema.derived if d.key == k for n in d.needs]
    return need


def holds(groups: Sequence[tuple[Schema, Sequence[Any]]], patterns: Sequence[str]) -> bool:
    """Do stores read under a projection print what stores of every key would, for ``groups`` (schema, its runs)?
    Yes when no store lost a key to the key limit, every key the selected columns need was kept, and the headers
    of the undeclared keys do not depend on their rank (ranked by values a store left out, they may be ranked
    otherwise than by the full store: only a key whose grown header is shared or too wide is headed by rank)."""
    for schema, runs in groups:
        if any(getattr(r, "dropped_keys", 0) for r in runs):
            return False
        gone = {k for r in runs for k in set(r.keys).difference(r.held_keys())}
        if not gone:
            continue
        cols = layout(runs, schema, patterns=patterns)
        if needed(cols, schema, step_key_of(runs)) & gone:
            return False
        declared = (*schema.cols, *schema.extra)  # (headed as declared: what the auto-headed keys must not take)
        own = {c.key for c in declared} | {"step", step_key_of(runs)} | own_step_keys(runs)
        keys = [k for r in runs for k in run_keys(r) if k not in META_KEYS and k not in own]
        if not order_free(keys, ["step", *(c.header for c in declared)]):
            return False
    return True
