"""steptable.app.viewers: the generations key over a store emptied meanwhile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steptable.app.widgets.arm import ArmPanel
from tests.app.helpers import make_runs, manual_app, row, sync, write_generations

pytestmark = pytest.mark.anyio


async def test_generations_key_with_an_emptied_store(tmp_path: Path) -> None:
    root = make_runs(tmp_path, steps=100, arms=("a",))
    write_generations(root / "a")
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(120, 32)) as pilot:
        await sync(pilot, follower)
        grid = app.query_one(ArmPanel).grid
        grid.focus()
        await pilot.press("home")  # paused at the top: the viewer opens at the step on screen
        grid.scroll_to(y=50, animate=False, immediate=True)
        await pilot.pause()
        assert not grid.follow and grid.top_index == 50
        (root / "a" / "metrics.jsonl").write_text(json.dumps(row(0, 0)) + "\n")
        follower.real.scan()
        await pilot.press("v")
        await pilot.pause()
        assert app.is_running and app._exception is None
