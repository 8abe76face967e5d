"""Schema: a declarative column set plus how to recognise a run that it fits. Pure.

The seam between ingest and every viewer: ``layout(runs)`` gives the one column layout shared by all arms shown
together, so their tables line up column for column.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from steptable.columns import Col
from steptable.formatting import display_width, format_value

#: keys that are bookkeeping, not metrics (never auto-columns)
META_KEYS = frozenset({"arm", "ts", "timestamp", "_timestamp", "wall_time", "run", "condition"})


class RunView(Protocol):
    """What a schema needs to see of a run (``steptable.ingest.RunStore`` satisfies it)."""

    keys: list[str]

    def column(self, key: str) -> Sequence[Any]: ...

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class Schema:
    """A named column set. ``match(path, keys)`` scores how well a file fits (0 = not at all, 1 = certain)."""

    name: str
    cols: tuple[Col, ...]
    description: str = ""
    match: Callable[[Path, Sequence[str]], float] = field(default=lambda path, keys: 0.0, compare=False)
    #: show keys the schema does not declare as auto columns after the declared ones
    extend: bool = True

    def col(self, key: str) -> Col | None:
        for c in self.cols:
            if c.key == key:
                return c
        return None


def _sample(run: RunView, key: str, limit: int = 200) -> list[Any]:
    col = run.column(key)
    n = len(col)
    if n <= limit:
        return list(col)
    step = max(n // limit, 1)
    return [col[i] for i in range(0, n, step)][:limit] + [col[n - 1]]


def auto_col(key: str, samples: Sequence[Any], header: str | None = None, desc: str = "") -> Col:
    """A column for an undeclared key: width from the header and the data, compact number format."""
    h = header if header is not None else key
    fmt = "frac" if any(isinstance(v, (tuple, list)) and len(v) == 2 for v in samples) else None
    is_str = any(isinstance(v, str) and v.lower() not in ("nan", "inf", "-inf") for v in samples)
    widths = [display_width(format_value(v, fmt, 12)) for v in samples if v is not None]
    data_w = max(widths, default=3)
    w = max(display_width(h), min(data_w, 12 if is_str else 8), 3)
    return Col(key, w, h, fmt, desc or f"{key} (as logged)", align="left" if is_str else "right")


def informative(run: RunView, key: str) -> float:
    """How much a key tells: share of rows present times 1 if it varies (0.2 if constant)."""
    vals = _sample(run, key)
    present = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not present:
        return 0.0
    distinct = len({repr(v) for v in present[:50]})
    return len(present) / max(len(vals), 1) * (1.0 if distinct > 1 else 0.2)


def layout(
    runs: Sequence[RunView],
    schema: Schema | None = None,
    max_width: int | None = None,
    step_key: str = "step",
) -> tuple[Col, ...]:
    """One column layout for all ``runs``: the schema's declared columns present in any run, in declared order,
    then (if the schema extends) the other keys by information, fitted to ``max_width`` cells when given."""
    keys: dict[str, None] = {}
    for r in runs:
        for k in r.keys:
            keys.setdefault(k, None)
    out: list[Col] = []
    used: set[str] = set()
    headers: set[str] = set()
    if schema is not None:
        for c in schema.cols:
            if c.key in keys or c.key == step_key:
                out.append(c)
                used.add(c.key)
                headers.add(c.header.strip())
    if schema is None or schema.extend:
        if step_key not in used:
            samples = [v for r in runs if step_key in r.keys for v in _sample(r, step_key)]
            out.insert(0, auto_col(step_key, samples or [0]))
            used.add(step_key)
        rest = [k for k in keys if k not in used and k not in META_KEYS]
        scored = sorted(rest, key=lambda k: -max((informative(r, k) for r in runs if k in r.keys), default=0.0))
        for k in scored:
            samples = [v for r in runs if k in r.keys for v in _sample(r, k)]
            header = k
            if header in headers:
                continue
            out.append(auto_col(k, samples, header))
            headers.add(header)
    if max_width is not None:
        out = fit(out, max_width)
    return tuple(out)


def fit(cols: Sequence[Col], max_width: int) -> list[Col]:
    """Keep columns in order while they fit ``max_width`` cells (the first column always stays)."""
    kept: list[Col] = []
    used = 0
    for c in cols:
        need = c.width + (1 if kept else 0)
        if kept and used + need > max_width:
            continue
        kept.append(c)
        used += need
    return kept


def by_key(cols: Sequence[Col]) -> Mapping[str, Col]:
    return {c.key: c for c in cols}
