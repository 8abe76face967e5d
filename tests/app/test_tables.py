"""steptable.app.tables: the picked column is the focused table's lit one (what p pins and the chart plots), it
moves to a shown table when its arm is hidden, and closing a focused panel gives the focus back to a table."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from steptable.app.widgets.arm import ArmPanel
from steptable.app.widgets.grid import StepGrid
from steptable.app.widgets.panels import ChartPanel
from tests.app.helpers import make_runs, manual_app, sync
from tests.trainer_logs import write_tinker, write_verl

pytestmark = pytest.mark.anyio


async def test_closing_a_focused_panel_gives_the_focus_back_to_a_table(tmp_path: Path) -> None:

    app, follower, _ = manual_app(make_runs(tmp_path, steps=20, arms=("a", "b")))
    async with app.run_test(size=(140, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        app.query_one(ChartPanel).focus()  # (a click to scroll the panel focuses it)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.focused, StepGrid)
        grid = app.focused
        await pilot.press("1")  # hide the arm whose table has the focus
        await pilot.pause()
        assert isinstance(app.focused, StepGrid) and app.focused is not grid


WIDE_SIZE = (160, 44)


def _keys(panel: ArmPanel) -> list[str]:
    return [c.key for c in panel.grid.cols]


def _two_trainers(root: Path) -> tuple[Any, Any]:
    """A verl run and a tinker run under ``root``, and the app (not started) with its follower."""
    write_verl(root / "verl" / "qwen.jsonl", steps=8)
    write_tinker(root / "tinker" / "llama", steps=8)
    app, follower, _ = manual_app(root, now=time.time())
    return app, follower


def _first_and_other(app: Any) -> tuple[ArmPanel, ArmPanel]:
    """The arm whose table has the picked column (and the focus, as the app starts), and the other trainer's."""
    a, b = app.query(ArmPanel)
    return (a, b) if app.session.selected in _keys(a) else (b, a)


@pytest.mark.anyio
async def test_p_and_the_chart_take_the_focused_tables_lit_column(tmp_path: Path) -> None:
    """p pins and the chart plots the focused table's lit column (the verl table's critic/score/mean), not the
    column picked last in the other table (tinker's progress/done_frac)."""
    app, follower = _two_trainers(tmp_path)
    async with app.run_test(size=WIDE_SIZE) as pilot:
        await sync(pilot, follower)
        first, other = _first_and_other(app)
        lit = other.grid.selected
        assert lit in _keys(other) and lit not in _keys(first)
        await pilot.press("c")
        chart = app.query_one(ChartPanel)
        other.grid.focus()  # (the chart open: it follows the focus, not only the next key)
        await pilot.pause()
        assert (app.session.selected, chart.key) == (lit, lit)
        assert [label for label, _, _ in chart.arms] == [other.label]
        await pilot.press("p")
        assert app.session.pins == [lit] and _keys(other)[1] == lit
        assert first.grid.selected in _keys(first)  # the first table keeps its own


@pytest.mark.anyio
@pytest.mark.parametrize("in_legend", [False, True])
async def test_hiding_the_arms_with_the_picked_column_moves_it_to_a_visible_table(
    tmp_path: Path, in_legend: bool
) -> None:
    """With the tinker arm hidden, the picked column is the verl table's lit one, charted (not "pick a column")
    (``in_legend``: the focus in the legend, not in the table hidden, so it stays there)."""
    app, follower = _two_trainers(tmp_path)
    async with app.run_test(size=WIDE_SIZE) as pilot:
        await sync(pilot, follower)
        first, other = _first_and_other(app)
        await pilot.press("c")
        if in_legend:
            await pilot.press("l")
            app.query_one("#legend-box").focus()
            await pilot.pause()
        await pilot.press(str(list(app.panels).index(first.run_id) + 1))  # hide the arm with the picked column
        await pilot.pause()
        chart = app.query_one(ChartPanel)
        assert chart.key == other.grid.selected and chart.key in _keys(other)
        assert [label for label, _, _ in chart.arms] == [other.label]
        assert not in_legend or app.focused is app.query_one("#legend-box")
