"""Which way is better for a metric: ``Col.better`` (or a rule's) of the schema its runs are shown with. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from steptable.compare.core import Arm
from steptable.schemafiles.resolve import run_schema
from steptable.schemas import Schema
from steptable.schemas.registry import Located


def directions(arms: Sequence[Arm], metrics: Sequence[str]) -> dict[str, str | None]:
    """Metric -> "higher" / "lower" / None, from the schema of the first run that says one (the baseline first)."""
    out: dict[str, str | None] = dict.fromkeys(metrics)
    runs = [m.run for a in arms for m in a.members if hasattr(m.run, "path")]
    schemas: list[Schema] = []
    for r in runs:
        s = run_schema(cast(Located, r))
        if all(s is not t for t in schemas):
            schemas.append(s)
    for key in metrics:
        for s in schemas:
            col = s.col(key) or next((c for c in s.cols if key in c.aliases), None)
            rule = s.rule(key)
            better = col.better if col is not None and col.better else rule.better if rule is not None else None
            if better:
                out[key] = better
                break
    return out
