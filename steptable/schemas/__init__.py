"""Declarative column sets for the trainers steptable reads, and their detection.

    schema = detect(path, keys)          # the best-fitting built-in (or user) schema; "generic" otherwise
    cols = layout(runs, schema, max_width=terminal_width)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from steptable.columns import streamed
from steptable.schemas.base import Schema, auto_col, fit, layout
from steptable.schemas.routing import routing_columns

__all__ = ["SCHEMAS", "Schema", "auto_col", "detect", "fit", "get_schema", "layout", "routing_columns"]


def _routing_match(path: Path, keys: Sequence[str]) -> float:
    ks = set(keys)
    hits = len(ks & {"hack_s", "gt_s", "rew_s", "auroc", "qmass", "ref_eq", "hack_t", "gt_t"})
    return min(hits / 5, 1.0)


ROUTING = Schema(
    "routing",
    streamed(routing_columns(modes=("code", "math"), mode_code={"code": "c", "math": "m"}, show_ablate=True)),
    "gradient-routing arms (vanilla / routeA / absorb)",
    _routing_match,
)
GENERIC = Schema("generic", (), "any JSONL: columns chosen from the data")

SCHEMAS: dict[str, Schema] = {s.name: s for s in (ROUTING, GENERIC)}


def get_schema(name: str) -> Schema:
    try:
        return SCHEMAS[name]
    except KeyError:
        raise KeyError(f"unknown schema {name!r}; known: {', '.join(sorted(SCHEMAS))}") from None


def detect(path: Path, keys: Sequence[str]) -> Schema:
    """The schema that fits a file best; generic when none scores at least 0.5."""
    best, score = GENERIC, 0.0
    for s in SCHEMAS.values():
        m = s.match(path, keys)
        if m > score:
            best, score = s, m
    return best if score >= 0.5 else GENERIC
