"""Lockstep: every movement key on the focused table moves every shown arm's table to the same step and the same
sideways offset (same columns side by side); k turns it off; arms of different layouts are not locked by default."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.app import StepTableApp
from tests.app.helpers import SIZE, make_runs, manual_app, sync


def _tops(app: StepTableApp) -> list[int]:
    return [p.grid.store.step_at(p.grid.top_index) for p in app.panels.values() if p.grid.store is not None]


@pytest.mark.anyio
@pytest.mark.parametrize("keys", [("home",), ("home", "pagedown"), ("home", "down", "down", "down"), ("up", "up")])
async def test_movement_keys_move_every_table(tmp_path: Path, keys: tuple[str, ...]) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, steps=200))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press(*keys)
        await pilot.pause()
        tops = _tops(app)
        assert len(tops) == 3 and len(set(tops)) == 1, tops
        assert tops[0] < 200 - 5  # moved off the end
        assert not any(p.grid.follow for p in app.panels.values())
        await pilot.press("end")  # following again: all follow
        await pilot.pause()
        assert all(p.grid.follow for p in app.panels.values())


@pytest.mark.anyio
async def test_sideways_panning_shows_the_same_columns(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, steps=50))
    async with app.run_test(size=(90, 32)) as pilot:
        await sync(pilot, follower)
        await pilot.press("shift+right", "shift+right")
        await pilot.pause()
        views = [p.grid.columns_in_view() for p in app.panels.values()]
        offsets = {round(p.grid.scroll_x) for p in app.panels.values()}
        assert len(offsets) == 1 and offsets != {0}
        assert len({v[:2] for v in views}) == 1, views


@pytest.mark.anyio
async def test_k_turns_lockstep_off(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, steps=200))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("k", "home")
        await pilot.pause()
        tops = _tops(app)
        assert tops[0] == 0 and tops[1] != 0  # only the focused table moved
        assert not app.lockstep.on
