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
