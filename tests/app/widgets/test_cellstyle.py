"""Which style a table cell takes: the step column, a logged NaN/inf in the alert colour, trends by direction."""

from __future__ import annotations

from rich.style import Style

from steptable.app.widgets.cellstyle import KINDS, cell_kind, cell_styles
from steptable.table.columns import Col

LOSS = Col("loss", 6, "loss", better="lower")
NOTE = Col("note", 6, "note")


def test_cell_kinds() -> None:
    assert cell_kind(0, Col("step", 5, "step", "d"), "    3", {"step": 3}, None) == 1
    assert cell_kind(1, LOSS, "   NaN", {"loss": float("nan")}, None) == 2
    assert cell_kind(1, LOSS, "  -inf", {"loss": float("-inf")}, None) == 2
    assert cell_kind(1, LOSS, "      ", {}, None) == 0  # not logged: blank, nothing to colour
    assert cell_kind(1, NOTE, "   NaN", {"note": "NaN"}, None) == 2  # (the text is what is shown)
    assert cell_kind(1, LOSS, "    .4", {"loss": 0.4}, {"loss": 0.5}) == 3  # lower is better: better
    assert cell_kind(1, LOSS, "    .6", {"loss": 0.6}, {"loss": 0.5}) == 4


def test_cell_styles_are_the_kinds_then_the_same_on_the_lit_column() -> None:
    styles = cell_styles(Style(color="white"), lambda name: Style(color="red", bgcolor="blue"))
    assert len(styles) == 2 * KINDS and styles[KINDS].bgcolor == Style(bgcolor="blue").bgcolor
