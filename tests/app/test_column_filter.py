"""The column filter: the status bar shows the filter in force and how many columns it shows; a glob that matches
no column says so and keeps the columns shown before."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.widgets.status import StatusBar
from tests.app.helpers import SIZE, make_runs, manual_app, static_text, sync


async def _filter(pilot: object, text: str) -> None:
    await pilot.press("F", "ctrl+a", "ctrl+k", *text, "enter")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_filter_in_the_status_bar_and_a_glob_matching_nothing(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        bar = app.query_one(StatusBar)
        assert "filter" not in static_text(bar)
        await _filter(pilot, "rew*")
        keys = {c.key for p in app.panels.values() for c in p.grid.cols[1:]}
        assert keys == {"rew", "rew_s"}
        assert "filter rew*: 2 columns" in static_text(bar)
        await _filter(pilot, "zzz*")
        assert app.session.pattern == "rew*"
        assert {c.key for p in app.panels.values() for c in p.grid.cols[1:]} == keys
        assert any("no column matches 'zzz*'" in str(n.message) for n in app._notifications)
        assert "filter rew*: 2 columns" in static_text(bar)
        await _filter(pilot, "")
        assert app.session.pattern == "" and "filter" not in static_text(bar)
        assert len({c.key for p in app.panels.values() for c in p.grid.cols}) > 3
