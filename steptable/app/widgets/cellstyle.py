"""Cell colours of StepGrid: the component classes a cell is styled with, their CSS, and which one a cell takes.

A logged NaN / inf is in the alert colour; a column with a ``better`` direction is green where the value moved the
good way since the row before and red where it moved the bad way; the step column is in the pinned colour; the lit
column is tinted over whichever of those the cell has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.style import Style

from steptable.table import render
from steptable.table.columns import Col

COMPONENT_CLASSES = frozenset({
    "grid--header",
    "grid--cursor",
    "grid--column",
    "grid--better",
    "grid--worse",
    "grid--nan",
    "grid--pinned",
})

CELL_CSS = """
    StepGrid > .grid--header { text-style: bold; background: $panel; color: $text; }
    StepGrid > .grid--cursor { text-style: bold reverse; }
    /* the cursor's column: a tint of the text colour shows in every theme ($boost is transparent from Textual
       8.2.5 on in a theme that sets $panel, as all of steptable's do) */
    StepGrid > .grid--column { background: $foreground 8%; }
    StepGrid > .grid--better { color: $text-success; }
    StepGrid > .grid--worse { color: $text-error; }
    StepGrid > .grid--nan { color: $error; text-style: bold; }  /* a logged NaN / inf: an alert, not filler */
    StepGrid > .grid--pinned { color: $text-accent; }
    """

#: the texts of a logged non-finite value (steptable.table.formatting), shown in the alert colour
_NON_FINITE = frozenset({"NaN", "inf", "-inf"})
_NON_FINITE_ENDS = ("NaN", "inf")

#: how many cell styles there are off the lit column (``cell_styles``: the same again on it follow)
KINDS = 5


def cell_styles(base: Style, style: Callable[[str], Style]) -> tuple[Style, ...]:
    """The cell styles over ``base`` (``style``: a component class's full style): plain, pinned, nan, better, worse,
    then the same five on the lit column."""
    kinds = [base] + [base + style(f"grid--{k}") for k in ("pinned", "nan", "better", "worse")]
    column = Style(bgcolor=style("grid--column").bgcolor)  # a tint only: keep the cell's colour
    return (*kinds, *(k + column for k in kinds))


def cell_kind(j: int, c: Col, text: str, values: Mapping[str, Any], prev: Mapping[str, Any] | None) -> int:
    """Which of ``cell_styles``' first five cell ``j`` (column ``c``, showing ``text`` of ``values``) takes;
    ``prev``: the row before, where the table colours trends (None: no trend colours)."""
    kind = 0
    if j == 0:
        kind = 1
    elif text.endswith(_NON_FINITE_ENDS) and text.strip() in _NON_FINITE:
        kind = 2  # a logged NaN / inf (a key not logged is blank: nothing to colour)
    elif prev is not None and c.better:
        t = render.trend(c, values.get(c.key), prev.get(c.key))
        kind = 3 if t > 0 else 4 if t < 0 else 0
    return kind
