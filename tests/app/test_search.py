"""/ searches the shown cells and column names (ignoring case), n / N go to the next / previous match and wrap, the
status line says "k of m" or that nothing matched; moving to a cell takes every table to its step and marks it."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from steptable.app.app import StepTableApp
from steptable.app.search import Finder
from steptable.app.widgets.status import StatusBar
from tests.app.helpers import SIZE, manual_app, row, sync, write_rows

pytestmark = pytest.mark.anyio

ARMS = ("vanilla", "routeA", "absorb")


def marked_runs(root: Path) -> Path:
    """Three arms of 200 rows; the loss 777.25 at step 30 of vanilla, 60 of absorb, 120 of routeA."""
    at = {"vanilla": 30, "routeA": 120, "absorb": 60}
    for i, arm in enumerate(ARMS):
        rows = [row(i, s) for s in range(200)]
        rows[at[arm]]["loss"] = 777.25
        write_rows(root / arm / "metrics.jsonl", rows)
    return root


def _tops(app: StepTableApp) -> list[int]:
    return [p.grid.store.step_at(p.grid.top_index) for p in app.panels.values() if p.grid.store is not None]


def _found(app: StepTableApp) -> dict[str, tuple[int, str]]:
    return {rid.split("/")[0]: p.grid.found for rid, p in app.panels.items() if p.grid.found is not None}


def _status(app: StepTableApp) -> str:
    return app.query_one(StatusBar)._last.plain


async def _settled(pilot: Any) -> None:
    """Wait for the search's thread to have read the cells and the search to have moved."""
    for _ in range(1000):  # (bounded)
        if not pilot.app.search.searching:
            break
        await pilot.pause(0.01)
    await pilot.pause()


@asynccontextmanager
async def _running(tmp_path: Path) -> AsyncIterator[tuple[StepTableApp, Any]]:
    """The app over ``marked_runs``, its rows read."""
    app, follower, _ = manual_app(marked_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        yield app, pilot


async def _search(pilot: Any, text: str) -> None:
    await pilot.press("slash", "ctrl+a", "ctrl+k", *text, "enter")
    await _settled(pilot)


async def test_cells_next_previous_and_wrapping(tmp_path: Path) -> None:
    async with _running(tmp_path) as (app, pilot):
        await pilot.press("home")
        await _search(pilot, "777.2")
        assert _tops(app) == [30] * 3 and _found(app) == {"vanilla": (30, "loss")}
        assert "search '777.2': 1 of 3" in _status(app)
        assert app.session.selected == "loss" and all(p.grid.follow is False for p in app.panels.values())
        await pilot.press("n")
        assert _tops(app) == [60] * 3 and _found(app) == {"absorb": (60, "loss")}
        assert "2 of 3" in _status(app)
        await pilot.press("n", "n")  # 120, then around to the first
        assert _tops(app) == [30] * 3 and "1 of 3" in _status(app)
        await pilot.press("N")  # back around to the last
        assert _tops(app) == [120] * 3 and _found(app) == {"routeA": (120, "loss")}
        assert "3 of 3" in _status(app)


async def test_a_search_starts_at_the_step_on_screen(tmp_path: Path) -> None:
    async with _running(tmp_path) as (app, pilot):
        await pilot.press("colon", *"50", "enter")
        await _search(pilot, "777.25")
        assert _tops(app) == [60] * 3 and "2 of 3" in _status(app)


async def test_column_names_match_ignoring_case_and_light_the_column(tmp_path: Path) -> None:
    async with _running(tmp_path) as (app, pilot):
        await _search(pilot, "QMASS")
        assert app.session.selected == "qmass" and "1 of 1" in _status(app)
        assert not _found(app)  # a column, no cell
        grid = app.tables.focused_grid()
        assert grid is not None and grid.selected == "qmass"


async def test_no_match_says_so_and_moves_nothing(tmp_path: Path) -> None:
    async with _running(tmp_path) as (app, pilot):
        await pilot.press("home")
        await _search(pilot, "[bold]zz")
        assert "no match for '[bold]zz'" in _status(app)  # typed text shown as typed, not as markup
        assert _tops(app) == [0] * 3 and not _found(app)
        await pilot.press("n")
        assert _tops(app) == [0] * 3


async def test_next_before_any_search_says_how(tmp_path: Path) -> None:
    async with _running(tmp_path) as (app, pilot):
        await pilot.press("n")
        assert app.search.next(True) == "no search yet: / searches"


async def test_the_filter_moved_to_F_and_search_is_in_the_help(tmp_path: Path) -> None:
    async with _running(tmp_path) as (app, _):
        keys = dict(app.key_help())
        assert keys["/"].startswith("Search") and keys["F"].startswith("Filter")
        assert keys["n"].startswith("Next match") and keys["N"].startswith("Prev match")


def test_finder_wraps_both_ways() -> None:
    f: Finder[int] = Finder()
    assert f.start("x", [7, 8, 9], first=2) == 9
    assert f.next(True) == 7 and f.next(False) == 9 and f.status == "search 'x': 3 of 3"
    assert f.start("y", []) is None and f.next(True) is None and f.status == "no match for 'y'"
    assert f.start("  ", []) is None and f.status == ""


async def test_the_status_says_searching_while_the_thread_reads(tmp_path: Path) -> None:
    async with _running(tmp_path) as (app, pilot):
        gate = threading.Event()
        real = app.search.post
        assert real is not None
        app.search.post = lambda f: (gate.wait(10), real(f))  # the result held back until the test lets it go
        app.search.find("777.25")
        await pilot.pause()
        assert app.search.status == "searching '777.25'…" and app.search.next(True) == app.search.status
        app.search.post = real
        gate.set()
        await _settled(pilot)
        assert "1 of 3" in _status(app)
