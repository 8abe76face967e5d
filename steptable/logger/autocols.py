"""Automatic columns: the column set a StepLogger made without one prints with, chosen from its first row.

The first row's keys pick the schema the readers would pick for the file (``schemafiles.resolve.detect``: the trl
schema for HF/TRL keys, tinker's, verl's..., a ``steptable.toml`` beside the run; generic otherwise), and
``steptable.schemas.layout`` lays the row out as ``steptable tail`` lays the file out: the step, the schema's
declared columns present, then the other keys ranked by how much they tell, each as wide as its value needs, fitted
to the terminal's width (200 cells when stdout is not a terminal, as ``tail``). Keys first logged later are not in
the printed row (the JSONL keeps them; readers show them); ``expect`` names such keys up front (an evaluation's).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from steptable.schemafiles.resolve import detect, get_schema
from steptable.schemas.arrange import layout
from steptable.table.columns import Col
from steptable.table.formatting import sanitize

#: cells of a printed row when stdout is not a terminal (as ``steptable tail``)
PIPE_WIDTH = 200
#: the step column's least width: a run passing step 99999 must not push its row out of line before then
STEP_WIDTH = 5


class _OneRow:
    """One row as a schema's ``RunView``: each key's column holds its value (None for an expected key)."""

    def __init__(self, row: Mapping[str, Any], expect: Iterable[str]) -> None:
        self._row = {**{k: None for k in expect}, **row}
        self.keys = list(self._row)

    def column(self, key: str) -> Sequence[Any]:
        return [self._row.get(key)]

    def __len__(self) -> int:
        return 1


def row_width() -> int:
    """Cells a row may take: the terminal's width, else PIPE_WIDTH (``COLUMNS`` overrides both)."""
    return shutil.get_terminal_size((PIPE_WIDTH, 24)).columns


def auto_columns(
    row: Mapping[str, Any],
    path: str | os.PathLike[str] = "metrics.jsonl",
    *,
    expect: Sequence[str] = (),
    schema: str | None = None,
    max_width: int | None = None,
) -> tuple[Col, ...]:
    """The columns for a run whose first row is ``row`` (flat: ``{"train/loss": ...}``).

    path       where the rows go: user schemas (``steptable.toml``) beside it apply, and its name counts in detection
    expect     keys not in this row that later rows will carry (evaluation metrics): given columns now
    schema     a schema name to lay out with instead of detecting one
    max_width  cells the row may take (default :func:`row_width`)
    """
    view = _OneRow(row, [k for k in expect if k not in row])
    p = Path(path)
    chosen = get_schema(schema, p.parent) if schema is not None else detect(p, view.keys)
    cols = layout([view], chosen, max_width=row_width() if max_width is None else max_width)
    present = set(view.keys)
    out: list[Col] = []
    for c in cols:
        if c.key == "step":
            out.append(c.with_(width=max(c.width, STEP_WIDTH), fmt=c.fmt or "d"))
        elif c.key in present:
            # "loss (as logged)" says nothing a legend line should be paid for (a short header still gets its key)
            out.append(c.with_(desc="") if c.desc == f"{sanitize(c.key)} (as logged)" else c)
        else:  # a declared column read through an alias (StepLogger renders its keys as logged)
            alias = next((a for a in c.aliases if a in present), None)
            if alias is not None:
                out.append(c.with_(key=alias, aliases=()))
    return tuple(out)
