"""steptable.app.screens.events: the events list draws only the lines on screen."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.screens.events import EventList, EventsScreen
from steptable.app.widgets.status import Event
from tests.app.helpers import make_runs, manual_app, screen_text, sync

pytestmark = pytest.mark.anyio


async def test_events_screen_draws_only_what_shows(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("a",)))
    async with app.run_test(size=(100, 30)) as pilot:
        await sync(pilot, follower)
        many = [Event("B", "a", f"metrics.jsonl:{i}: malformed JSON [bold]x[/]\x1b[2J") for i in range(20_000)]
        app.push_screen(EventsScreen(many))
        await pilot.pause()
        events = app.screen.query_one(EventList)
        assert events.virtual_size.height == 20_000 and app.focused is events
        shown = screen_text(app)
        assert "metrics.jsonl:0: malformed JSON [bold]x[/]" in shown and "\x1b" not in shown
        await pilot.press("end")
        await pilot.pause()
        assert "metrics.jsonl:19999:" in screen_text(app)
        await pilot.press("escape")
        assert not isinstance(app.screen, EventsScreen)


async def test_the_filter_in_the_list_title_is_plain_text(tmp_path: Path) -> None:
    """The filter typed (a run's name as the app shows it may hold brackets: ``base[b]x``) is shown in the list's
    title as typed, never read as markup; a stray closing tag does not end the app."""
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("a",)))
    async with app.run_test(size=(100, 30)) as pilot:
        await sync(pilot, follower)
        app.push_screen(EventsScreen([Event("B", "base[b]x_seed1", "metrics.jsonl:3: malformed JSON")] * 3))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, EventsScreen)
        for typed in ("run:base[b]x_seed1", "col:[/]\x1b[2J"):
            screen.filter(typed)
            await pilot.pause()
            shown = screen_text(app)
            assert app.is_running and "\x1b" not in shown
        screen.filter("run:base[b]x_seed1")
        await pilot.pause()
        assert "events: run:base[b]x_seed1" in screen_text(app)
