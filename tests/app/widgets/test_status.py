"""steptable.app.widgets.status: the status bar shows bad lines, alerts and stalls."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.screens.events import EventsScreen
from steptable.app.widgets.arm import ArmPanel
from steptable.app.widgets.status import StatusBar
from tests.app.helpers import SIZE, T0, make_runs, manual_app, screen_text, static_text, sync, write_rows

pytestmark = pytest.mark.anyio


async def test_status_shows_bad_lines_alerts_and_stalls(tmp_path: Path) -> None:
    root = make_runs(tmp_path, arms=("solo",))
    path = root / "solo" / "metrics.jsonl"
    write_rows(path, [], extra='{"step": 40, "loss": \n')
    app, follower, clock = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        status = static_text(app.query_one(StatusBar))
        assert "1 bad line " in status and "1 run" in status  # (one: "1 bad lines" read as a slip)
        assert f"{path}:41:" in status

        write_rows(path, [{"step": 41, "loss": None, "ts": T0 + 82}, {"step": 42, "loss": float("nan"), "ts": T0 + 84}])
        await sync(pilot, follower)
        assert app.session.counts.get("E", 0) >= 1
        assert "loss non-finite" in static_text(app.query_one(StatusBar))

        clock.now = T0 + 84 + 600  # ten minutes without a row, usual step 2 s
        app._on_tick()
        await pilot.pause()
        panel = app.query_one(ArmPanel)
        assert "STALLED" in static_text(panel.title_bar) and panel.has_class("-stalled")
        assert "stalled: no row for" in static_text(app.query_one(StatusBar))

        await pilot.press("e")
        assert isinstance(app.screen, EventsScreen)
        assert "non-finite" in screen_text(app)
        await pilot.press("escape")
        assert not isinstance(app.screen, EventsScreen)
