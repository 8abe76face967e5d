"""Which style a table cell takes (the step column, a logged NaN/inf in the alert colour, moves by direction, a cell
that raised an alert), where the alert mark goes without widening a column, and which cells an alert names."""

from __future__ import annotations

import random
from dataclasses import dataclass

from rich.style import Style

from steptable.app.widgets.cellstyle import (
    ALERT_E,
    ALERT_MARK,
    ALERT_W,
    BETTER,
    KINDS,
    NAN,
    PINNED,
    PLAIN,
    WORSE,
    CellPaint,
    alert_level,
    cell_kind,
    cell_styles,
    marked,
)
from steptable.schemas.legend import COLOURS, MARKS
from steptable.table import render
from steptable.table.columns import Col

LOSS = Col("loss", 6, "loss", better="lower")
NOTE = Col("note", 6, "note")
STEP = Col("step", 5, "step", "d")
GN = Col("gn", 6, "gn", aliases=("grad_norm",))


@dataclass
class _Alert:
    level: str
    step: int | None
    column: str
    replaced: bool = False


def test_cell_kinds() -> None:
    assert cell_kind(0, "    3") == PINNED
    assert cell_kind(1, "   NaN") == NAN and cell_kind(1, "  -inf") == NAN and cell_kind(1, "   inf") == NAN
    assert cell_kind(1, "      ") == PLAIN  # not logged: blank, nothing to colour
    assert cell_kind(1, "   .4", 1) == BETTER and cell_kind(1, "   .4", -1) == WORSE
    assert cell_kind(1, "   NaN", -1) == NAN  # a logged NaN / inf first
    # an alert wins over everything else the cell is (a NaN that raised one, the step cell of its row)
    assert cell_kind(1, "   NaN", 0, "E") == ALERT_E
    assert cell_kind(1, "   1.2", -1, "W") == ALERT_W
    assert cell_kind(0, "    3", 0, "E") == ALERT_E


def _kinds(col: Col, series: list[float], first: int = 60, trend: bool = True) -> list[int]:
    """The kind of each cell of ``col`` from row ``first`` on, painted as the table paints them."""
    paint = CellPaint()
    cols = (STEP, col)
    rows = [{"step": i, col.key: v} for i, v in enumerate(series)]
    styles = tuple(Style(color=f"color({k})") for k in range(2 * KINDS))
    out = []
    for i in range(first, len(series)):
        segs, _ = paint.cells(i, i, cols, rows.__getitem__, styles, None, trend)
        out.append(styles.index(segs[1].style))
    return out


def test_a_noisy_stationary_column_is_almost_never_coloured_a_trend_is() -> None:
    """What the previous-row rule coloured nearly every cell of (any change), the level rule leaves alone; a
    steady trend is coloured by the column's better direction."""
    rnd = random.Random(7)
    noisy = [0.3 + rnd.gauss(0, 0.05) for _ in range(2000)]
    kinds = _kinds(LOSS, noisy)
    assert sum(k != PLAIN for k in kinds) / len(kinds) < 0.01
    prev_rule = [render.trend(LOSS, noisy[i], noisy[i - 1]) for i in range(60, 2000)]
    assert sum(t != 0 for t in prev_rule) / len(prev_rule) > 0.99
    trend = [1.0 - 0.01 * i + rnd.gauss(0, 0.05) for i in range(300)]  # a loss falling 0.2 sigma a row
    kinds = _kinds(LOSS, trend)
    assert sum(k == BETTER for k in kinds) / len(kinds) > 0.9 and WORSE not in kinds
    rising = _kinds(Col("loss", 6, "loss", better="higher"), trend)
    assert sum(k == WORSE for k in rising) / len(rising) > 0.9  # the same numbers, the other direction
    assert set(_kinds(NOTE, trend)) == {PLAIN}  # no direction: never coloured
    assert set(_kinds(LOSS, trend, trend=False)) == {PLAIN}  # a table that does not colour moves


def test_cell_styles_are_the_kinds_then_the_same_on_the_lit_column() -> None:
    styles = cell_styles(Style(color="white"), lambda name: Style(color="red", bgcolor="blue"))
    assert len(styles) == 2 * KINDS and styles[KINDS].bgcolor == Style(bgcolor="blue").bgcolor
    tints = {"grid--column": "grey11", "grid--alert-E": "red", "grid--alert-W": "yellow"}
    styles = cell_styles(Style(), lambda name: Style(bgcolor=tints.get(name, "default")))
    # an alert keeps its own tint on the lit column: the mark must not fade where the user looks
    assert styles[KINDS + ALERT_E].bgcolor == Style(bgcolor="red").bgcolor
    assert styles[KINDS + ALERT_W].bgcolor == Style(bgcolor="yellow").bgcolor
    assert styles[KINDS + PLAIN].bgcolor == Style(bgcolor="grey11").bgcolor


def test_the_mark_takes_padding_or_the_separator_never_a_cell_more() -> None:
    assert marked("  12.3") == (" !12.3", False)  # just left of the value
    assert marked("1.2e+1") == ("1.2e+1", True)  # the value fills the column: the separator before it
    assert marked("      ") == ("     !", False)  # a blank cell: at its right end
    assert marked("   NaN") == ("  !NaN", False)
    assert all(len(marked(t)[0]) == len(t) for t in ("  12.3", "1.2e+1", "      ", "x"))


def test_the_cells_an_alert_names() -> None:
    paint = CellPaint()
    assert paint.add_alerts([_Alert("W", 5, "grad_norm"), _Alert("E", 9, ""), _Alert("W", None, "gn")])
    assert paint.alerts == {5: {"grad_norm": "W"}}  # run-level alerts and step-less events name no cell
    assert not paint.add_alerts([_Alert("W", 5, "grad_norm")])  # (found again: nothing new to draw)
    assert paint.add_alerts([_Alert("E", 5, "grad_norm")]) and paint.alerts[5]["grad_norm"] == "E"
    assert not paint.add_alerts([_Alert("W", 5, "grad_norm")]) and paint.alerts[5]["grad_norm"] == "E"
    assert alert_level(paint.alerts[5], GN) == "E"  # through the column's alias
    assert alert_level({"gn": "W", "grad_norm": "E"}, GN) == "E" and alert_level({}, GN) is None


def test_painted_cells_carry_the_mark_in_their_text() -> None:
    paint = CellPaint()
    paint.add_alerts([_Alert("E", 3, "gn")])
    cols = (Col("step", 4, "step", "d"), Col("gn", 6, "gn", ".1f"), Col("x", 3, "x", "d"))
    rows = [{"step": s, "gn": 12.0 if s == 3 else 1.0, "x": 100} for s in range(5)]
    styles = tuple(Style(bold=k >= ALERT_W) for k in range(2 * KINDS))
    segs, leads = paint.cells(3, 3, cols, rows.__getitem__, styles, None, True)
    assert [s.text for s in segs] == ["  !3", " !12.0", "100"] and leads == {}
    assert segs[1].style is not None and segs[1].style.bold
    paint.add_alerts([_Alert("W", 4, "x")])
    segs, leads = paint.cells(4, 4, cols, rows.__getitem__, styles, None, True)
    assert segs[2].text == "100" and leads[2].text == ALERT_MARK  # "100" fills x: the mark is its separator


def test_the_key_names_every_mark_and_colour() -> None:
    said = " ".join(f"{k} {v}" for k, v in COLOURS)
    for word in (ALERT_MARK, "warning", "error", "green", "red", "NaN", "step column", "lit column", "median"):
        assert word in said
    marks = [k.split()[0] for k, _ in MARKS]
    assert {"↑", "?", ALERT_MARK, "NaN", "…", "blank"} <= set(marks)
