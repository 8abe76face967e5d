"""Cell colours and marks of StepGrid: the component classes a cell is styled with, their CSS, which one a cell
takes, and the alert mark a cell that raised an alert carries.

A cell that raised an alert carries :data:`ALERT_MARK` just left of its value (in its padding, or in the separator
before it where the value fills the column: no column widens) and the alert colour of its level over a tint of it;
so does the step cell of its row. A logged NaN / inf is in the alert colour; a column with a ``better`` direction is
green where its level moved the good way and bold red where it moved the bad way
(:func:`steptable.table.direction.direction`); the step column is in the pinned colour; the lit column is tinted
over whichever of those the cell has. The mark is text, not a colour: it stays under NO_COLOR and for a reader who
cannot tell red from green.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache

from steptable.app.widgets.moves import Moves
from steptable.schemas.legend import ALERT_MARK
from steptable.table import render
from steptable.table.columns import Col
from steptable.table.direction import BEFORE

COMPONENT_CLASSES = frozenset({
    "grid--header",
    "grid--cursor",
    "grid--column",
    "grid--better",
    "grid--worse",
    "grid--nan",
    "grid--pinned",
    "grid--alert-W",
    "grid--alert-E",
})

CELL_CSS = """
    StepGrid > .grid--header { text-style: bold; background: $panel; color: $text; }
    StepGrid > .grid--cursor { text-style: bold reverse; }
    /* the cursor's column: a tint of the text colour shows in every theme ($boost is transparent from Textual
       8.2.5 on in a theme that sets $panel, as all of steptable's do) */
    StepGrid > .grid--column { background: $foreground 8%; }
    StepGrid > .grid--better { color: $text-success; }
    /* bold as well as red: better and worse differ for a reader who cannot tell red from green */
    StepGrid > .grid--worse { color: $text-error; text-style: bold; }
    StepGrid > .grid--nan { color: $error; text-style: bold; }  /* a logged NaN / inf: an alert, not filler */
    StepGrid > .grid--pinned { color: $text-accent; }
    /* a cell that raised an alert: the events list's colour of its level, over a tint of it (and the mark) */
    StepGrid > .grid--alert-W { color: $text-warning; background: $warning 20%; text-style: bold; }
    StepGrid > .grid--alert-E { color: $text-error; background: $error 25%; text-style: bold; }
    """

#: the texts of a logged non-finite value (steptable.table.formatting), shown in the alert colour
_NON_FINITE = frozenset({"NaN", "inf", "-inf"})
_NON_FINITE_ENDS = ("NaN", "inf")

#: the cell kinds, in ``cell_styles``' order
PLAIN, PINNED, NAN, BETTER, WORSE, ALERT_W, ALERT_E = range(7)
#: how many cell styles there are off the lit column (``cell_styles``: the same again on it follow)
KINDS = 7
_ALERT_KIND = {"W": ALERT_W, "E": ALERT_E}


def cell_styles(base: Style, style: Callable[[str], Style]) -> tuple[Style, ...]:
    """The cell styles over ``base`` (``style``: a component class's full style): plain, pinned, nan, better, worse,
    warning alert, error alert, then the same seven on the lit column."""
    names = ("pinned", "nan", "better", "worse", "alert-W", "alert-E")
    kinds = [base] + [base + style(f"grid--{k}") for k in names]
    column = Style(bgcolor=style("grid--column").bgcolor)  # a tint only: keep the cell's colour
    alerts = len(kinds) - 2
    # (an alert's own tint stays on the lit column: the mark must not fade where the user looks)
    return (*kinds, *(k + column if i < alerts else k for i, k in enumerate(kinds)))


def cell_kind(j: int, text: str, move: int = 0, alert: str | None = None) -> int:
    """Which of ``cell_styles``' first :data:`KINDS` cell ``j`` (showing ``text``) takes; ``move``: which way its
    column's level moved there (steptable.table.direction: +1 the better way, -1 the worse, 0 no move or no
    direction); ``alert``: the level ("W" / "E") of an alert the cell raised, if any."""
    if alert is not None:
        return _ALERT_KIND.get(alert, ALERT_W)
    if j == 0:
        return PINNED
    if text.endswith(_NON_FINITE_ENDS) and text.strip() in _NON_FINITE:
        return NAN  # a logged NaN / inf (a key not logged is blank: nothing to colour)
    return BETTER if move > 0 else WORSE if move < 0 else PLAIN


def marked(text: str) -> tuple[str, bool]:
    """``text`` (a cell, padded to its width) with :data:`ALERT_MARK` just left of its value, in the padding: (the
    text, False); where the value fills the cell, (``text`` as it is, True): the mark takes the separator before
    the cell. A blank cell carries it at its right end."""
    value = text.lstrip(" ")
    pad = len(text) - len(value)
    if not value:
        return (text[:-1] + ALERT_MARK, False) if text else (text, True)
    if pad:
        return text[: pad - 1] + ALERT_MARK + value, False
    return text, True


def alert_level(alerts: Mapping[str, str], c: Col) -> str | None:
    """The level of the worst alert in ``alerts`` (key -> "W" / "E", a row's) that column ``c`` shows: its key's
    or an alias's (a column shows its first alias when its own key is absent)."""
    level = alerts.get(c.key)
    for a in c.aliases:
        if level == "E":
            break
        other = alerts.get(a)
        level = other if level is None or other == "E" else level
    return level


class CellPaint:
    """What one table's cells are painted from besides their own row: the alerts its run raised (step -> key ->
    worst level), the rows before a row (what a move is measured against), a few hundred of them kept, and the
    cells' moves."""

    def __init__(self) -> None:
        self.alerts: dict[int, dict[str, str]] = {}
        self._rows: LRUCache[int, Mapping[str, Any]] = LRUCache(4 * BEFORE)
        self.moves = Moves()

    def add_alerts(self, alerts: Iterable[Any]) -> bool:
        """Take the cells ``alerts`` (steptable.alerts.rules.Alert) name (run-level ones name none, nor one of a row a
        resume replaced: the cell at its step is the new row's); True when a cell is newly marked or its level
        rose."""
        changed = False
        for a in alerts:
            if not a.column or a.step is None or a.replaced:
                continue
            row = self.alerts.setdefault(a.step, {})
            if row.get(a.column) != "E" and row.get(a.column) != a.level:
                row[a.column] = "E" if "E" in (a.level, row.get(a.column)) else a.level
                changed = True
        return changed

    def forget_rows(self, i: int | None = None) -> None:
        """Row ``i`` changed (None: any row did)."""
        if i is None:
            self._rows.clear()
        else:
            self._rows.discard(i)
        self.moves.forget(i)

    def _row(self, k: int, row_values: Callable[[int], Mapping[str, Any]]) -> Mapping[str, Any]:
        row = self._rows.get(k)
        if row is None:
            row = self._rows[k] = row_values(k)
        return row

    def cells(self, i: int, step: int, cols: Sequence[Col], row_values: Callable[[int], Mapping[str, Any]],
              styles: Sequence[Style], selected: str | None, trend: bool) -> tuple[list[Segment], dict[int, Segment]]:
        """Row ``i`` (of ``step``) of ``cols`` as styled cells, and the alert marks that take the separator before
        a cell (cell index -> segment). ``styles``: ``cell_styles``; ``trend``: colour the moves of columns with a
        better direction."""
        values = self._row(i, row_values)
        alerts = self.alerts.get(step, {})
        segs: list[Segment] = []
        leads: dict[int, Segment] = {}
        for j, (c, text) in enumerate(zip(cols, render.cells(cols, values), strict=True)):
            level = ("E" if "E" in alerts.values() else "W") if j == 0 and alerts else alert_level(alerts, c)
            move = self.moves.move(c, i, lambda k: self._row(k, row_values)) if trend and c.better and j else 0
            kind = cell_kind(j, text, move, level)
            style = styles[kind + KINDS if c.key == selected else kind]
            if level is not None:
                text, lead = marked(text)
                if lead:
                    leads[j] = Segment(ALERT_MARK, style)
            segs.append(Segment(text, style))
        return segs, leads
