"""steptable.app.screens.help: every key listed, q quits the help, tab named, wrapped at 80 columns."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from steptable.app.screens.help import HelpScreen
from steptable.app.widgets.keys import KeyBar
from tests.app.helpers import make_runs, manual_app, sync

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("key", ["question_mark", "f1"])
async def test_help_lists_every_key(tmp_path: Path, key: str) -> None:
    """? and F1 open the help, which lists every key: e, f, 0 and 1-9 are in no footer, and at 80 columns the
    footer ends before s, v."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await sync(pilot, follower)
        assert "? Help" in str(app.query_one(KeyBar).render())[:40]  # (within 80 columns)
        await pilot.press(key)
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        keys = {k: what for k, what in screen.lines}
        for k in ("e", "f", "0", "1-9", "s", "v", ": g", "/", "F", "n", "N", "q ^c", "end G", "^p"):
            assert k in keys, k
        assert keys["e"].startswith("Events") and keys["1-9"].startswith("Arm")
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_the_help_quits_on_q_names_tab_and_wraps_at_80_columns(tmp_path: Path) -> None:
    """q quits the help as its footer says (a modal screen takes the app's q away); tab, which picks the table p
    and the chart follow, is listed; at 80 columns the lines wrap, none is cut ("at the step" of "... on
    screen")."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await sync(pilot, follower)
        await pilot.press("question_mark")
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        keys = {k: what for k, what in screen.lines}
        assert any(k.startswith("tab") for k in keys), keys
        box = screen.query_one("VerticalScroll")
        assert box.outer_size.width <= 80
        text = screen.query_one("#help-text", Static)
        assert text.size.width <= box.size.width  # wrapped inside its box, not cut at its edge
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


@pytest.mark.parametrize("home", ["tables", "run list"])
async def test_the_helps_footer_takes_the_whole_bottom_line(tmp_path: Path, home: str) -> None:
    """On the run list at 80x24 the help's footer read ``esc Close  q Quit ect ⏎ Open w Compare ...``: it was as
    wide as its own keys, and the footer of the screen under it showed through beside it (the tables': ``^p
    palette``). It takes the whole line, and the screen's own footer is back once the help closes."""
    from steptable.app.app import StepTableApp
    from steptable.app.feed import Feed
    from tests.app.helpers import screen_text, until
    from tests.app.sweephelpers import write_sweep

    if home == "tables":
        app, follower, _ = manual_app(make_runs(tmp_path))
    else:
        write_sweep(tmp_path, runs=12)
        app = StepTableApp(Feed([str(tmp_path)]))
    async with app.run_test(size=(80, 24)) as pilot:
        if home == "tables":
            await sync(pilot, follower)
        else:  # (and the list focused, its keys in the footer: on a loaded runner that came after the rows)
            await until(pilot, lambda: "12 of 12 shown" in screen_text(app)
                        and type(app.focused).__name__ == "RunList" and "Select" in screen_text(app))
        before = screen_text(app).splitlines()[-1]
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert screen_text(app).splitlines()[-1].split() == ["esc", "Close", "q", "Quit"]
        await pilot.press("escape")
        await pilot.pause()
        assert screen_text(app).splitlines()[-1] == before


@pytest.mark.parametrize("view", ["chart", "events", "generations"])
async def test_help_over_a_view_lists_that_views_keys(tmp_path: Path, view: str) -> None:
    """? in the chart, the events list or the generations viewer did nothing (or, where the app's key reached it,
    listed the tables' keys, which do nothing there): it lists the view's own keys, and esc brings the view back."""
    from steptable.app.screens.chart import ChartScreen
    from steptable.app.screens.events import EventsScreen
    from steptable.app.screens.generations import GenerationsScreen
    from tests.app.helpers import open_generations, write_generations

    root = make_runs(tmp_path)
    write_generations(root / "routeA")
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(100, 30)) as pilot:
        await sync(pilot, follower)
        if view == "generations":
            screen = await open_generations(pilot)
        else:
            await pilot.press({"chart": "C", "events": "e"}[view])
            await pilot.pause()
            screen = app.screen
        kind = {"chart": ChartScreen, "events": EventsScreen, "generations": GenerationsScreen}[view]
        assert isinstance(screen, kind)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = dict(app.screen.lines)
        own = {"chart": ("y", "Log y"), "events": ("⏎", "Go to step"), "generations": ("a", "Next arm")}[view]
        assert keys[own[0]].startswith(own[1]), keys
        assert "Legend" not in app.screen.text()  # (the tables' keys are not listed)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
