"""steptable.app.viewers: the generations key over a store emptied meanwhile, and over a seed group shown as its
table of means."""

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


async def test_generations_of_a_seed_group_shown_as_its_table_of_means_are_its_seeds(tmp_path: Path) -> None:
    from steptable.app.screens.generations import GenerationsScreen
    from steptable.app.seedgroups import GROUP_PREFIX

    root = make_runs(tmp_path, steps=40, arms=("routeA_seed1", "routeA_seed2", "vanilla"))
    for arm in ("routeA_seed1", "routeA_seed2"):
        write_generations(root / arm)
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(120, 32)) as pilot:
        await sync(pilot, follower)
        gid = GROUP_PREFIX + "routeA"
        assert {rid for rid, p in app.panels.items() if p.display} == {gid, "vanilla/metrics.jsonl"}
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, GenerationsScreen)
        assert [s.label for s in app.screen.sources] == ["routeA_seed1", "routeA_seed2"]
        await pilot.press("escape")
        await pilot.pause()
        app.session.hidden.add(gid)  # the group's table hidden (a number key): its seeds' samples are not offered
        app.arrangement.set_hidden(app.session.hidden)
        await pilot.press("v")
        await pilot.pause()
        assert not isinstance(app.screen, GenerationsScreen)
