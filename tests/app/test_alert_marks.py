"""The cells that raised an alert carry the alert mark (a glyph, kept under NO_COLOR) and their level's colour, as
does their row's step; the legend pane and the help screen explain every mark and colour."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.screens.help import HelpScreen
from steptable.app.widgets.cellstyle import ALERT_E, ALERT_W, KINDS
from steptable.app.widgets.grid import StepGrid
from steptable.app.widgets.panels import LegendPanel
from steptable.schemas.legend import ALERT_MARK, COLOURS, MARKS
from tests.app.helpers import SIZE, manual_app, row, screen_text, sync, write_rows

pytestmark = pytest.mark.anyio

SPIKE = 30  # the step whose grad norm is 12x its level


def _spiked_run(root: Path) -> Path:
    rows = [row(0, s) for s in range(40)]
    rows[SPIKE]["gn"] = 12.0
    write_rows(root / "solo" / "metrics.jsonl", rows)
    return root


def _line_of(app: object, step: int) -> str:
    """The screen line of ``step``'s row (its step cell, right-aligned, starts the line)."""
    lines = [ln for ln in screen_text(app).splitlines()  # type: ignore[arg-type]
             if ln.lstrip(" !").split(" ")[0] == str(step)]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("no_color", [False, True])
async def test_a_grad_norm_spike_marks_its_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                no_color: bool) -> None:
    """The 12x grad-norm cell's alert marks it: ! just left of its value and its row's step, the alert level's
    style on both; with NO_COLOR the ! is still in the line; cells of other rows carry no mark."""
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    app, follower, _ = manual_app(_spiked_run(tmp_path))
    async with app.run_test(size=(160, 50)) as pilot:
        await sync(pilot, follower)
        assert [(e.step, e.column) for e in app.session.alerts] == [(SPIKE, "gn")]
        grid = app.query_one(StepGrid)
        i = grid.store.index_of_step(SPIKE)  # type: ignore[union-attr]
        j = next(k for k, c in enumerate(grid.cols) if c.key == "gn")
        gn = grid.texts(i)[j].strip()
        assert ALERT_MARK not in "".join(grid.texts(i))  # the text tail prints stays as it is (views agree)
        line = _line_of(app, SPIKE)
        assert f"{ALERT_MARK}{gn}" in line and line.lstrip().startswith(f"{ALERT_MARK}{SPIKE}")
        assert len(line) == len(_line_of(app, SPIKE - 1))  # no column widened
        assert ALERT_MARK not in _line_of(app, SPIKE - 1) and ALERT_MARK not in _line_of(app, SPIKE + 1)
        segs, _ = grid._cells(i, 0, len(grid.cols))
        styles = grid._styles()
        level = app.session.alerts[0].level
        kind = ALERT_E if level == "E" else ALERT_W
        assert segs[0].style == styles[kind] and segs[j].style in (styles[kind], styles[kind + KINDS])
        assert app.no_color == no_color  # (Textual's NO_COLOR: colours are dropped, the mark is text)


async def test_alerts_found_before_the_table_mark_it(tmp_path: Path) -> None:
    """A table made after its run's alerts were found takes them from the session."""
    app, follower, _ = manual_app(_spiked_run(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        grid = app.query_one(StepGrid)
        assert grid.paint.alerts == {SPIKE: {"gn": app.session.alerts[0].level}}
        grid.paint.alerts.clear()
        app.tables.mark_alerts(grid.store.run)  # type: ignore[union-attr]
        assert grid.paint.alerts == {SPIKE: {"gn": app.session.alerts[0].level}}


async def test_an_alert_of_a_row_a_resume_replaced_marks_no_cell(tmp_path: Path) -> None:
    """The grad norm spiked at step 30, the run crashed at 39 and resumed from step 25: the spike is still said (of a
    row the resume replaced), but the cell at step 30 is the resumed run's, an ordinary value: no mark on it (the
    table said the new value raised the alert)."""
    rows = [row(0, s) for s in range(40)]
    rows[SPIKE]["gn"] = 12.0
    write_rows(tmp_path / "solo" / "metrics.jsonl", rows + [row(0, s) for s in range(25, 45)])
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await sync(pilot, follower)
        said = [e for e in app.session.alerts if e.step == SPIKE and e.column == "gn"]
        assert said and all("the resume at step 25 replaced" in e.text for e in said)
        grid = app.query_one(StepGrid)
        assert SPIKE not in grid.paint.alerts
        assert ALERT_MARK not in _line_of(app, SPIKE)


async def test_the_legend_pane_and_the_help_name_every_mark_and_colour(tmp_path: Path) -> None:
    app, follower, _ = manual_app(_spiked_run(tmp_path))
    async with app.run_test(size=(200, 100)) as pilot:
        await sync(pilot, follower)
        await pilot.press("l")
        await pilot.pause()
        legend = screen_text(app)  # (all of it on this screen)
        assert app.query_one(LegendPanel).display and "Marks and colours" in legend
        await pilot.press("question_mark")
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        help_text = screen.text()
        for mark, meaning in (*MARKS, *COLOURS):
            assert mark in help_text and meaning in help_text, mark
            assert mark in legend and meaning[:30] in legend, mark  # (the meaning wraps in the pane)
        for glyph in ("↑ ↓", "? after a header", ALERT_MARK, "green", "bold red"):
            assert glyph in help_text and glyph in legend, glyph


def _luminance(c: object) -> float:
    r, g, b = (v / 255 for v in c.triplet)  # type: ignore[attr-defined]
    lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


async def test_alert_cells_read_in_every_theme(tmp_path: Path) -> None:
    """In each of steptable's themes an alert cell's tint differs from the table's background and from the other
    level's, its text is readable on it (contrast >= 3:1), and it is bold (a cue without colour)."""
    app, follower, _ = manual_app(_spiked_run(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        grid = app.query_one(StepGrid)
        for theme in ("dark", "light", "high-contrast"):
            app.theme = theme
            await pilot.pause()
            styles = grid._styles()
            plain, warn, err = styles[0], styles[ALERT_W], styles[ALERT_E]
            assert warn.bgcolor != plain.bgcolor and err.bgcolor != plain.bgcolor and warn.bgcolor != err.bgcolor
            for s in (warn, err):
                assert s.bold and s.color is not None and s.bgcolor is not None, theme
                hi, lo = sorted((_luminance(s.color), _luminance(s.bgcolor)), reverse=True)
                assert (hi + 0.05) / (lo + 0.05) >= 3, (theme, s)
