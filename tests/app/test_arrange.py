"""steptable.app.arrange: arms side by side or stacked, hidden and shown, each at a readable size, arranged again
after a resize, with a table row left under every open panel."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from steptable.app.widgets.arm import ArmPanel
from tests.app.helpers import SIZE, make_runs, manual_app, screen_text, sync

pytestmark = pytest.mark.anyio


async def test_toggle_arms_and_layout(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path), stacked=False)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        panels = list(app.query(ArmPanel))
        arms = app.query_one("#arms")
        assert arms.has_class("side")
        await pilot.press("s")
        assert arms.has_class("stacked") and not arms.has_class("side")
        await pilot.press("s")
        assert arms.has_class("side")

        await pilot.press("2")
        assert not panels[1].display and panels[0].display
        await pilot.press("3")
        await pilot.press("1")  # the last visible arm stays
        assert panels[0].display and not panels[2].display
        await pilot.press("2")
        assert panels[1].display
        await pilot.press("0")
        assert all(p.display for p in panels)
        await pilot.press("9")  # no ninth arm: nothing happens
        assert all(p.display for p in panels)


@pytest.mark.parametrize("stacked", [True, False])
async def test_many_arms_keep_a_readable_size_and_scroll(tmp_path: Path, stacked: bool) -> None:
    """More arms than fit: each arm keeps a readable size and the box scrolls to any of them (an arm the size of
    the whole box would leave only the first ever seen)."""
    arms = [f"arm{i:02d}" for i in range(12)]
    app, follower, _ = manual_app(make_runs(tmp_path, steps=20, arms=arms), stacked=stacked)
    async with app.run_test(size=(80, 24)) as pilot:
        await sync(pilot, follower)
        panels = list(app.query(ArmPanel))
        assert len(panels) == 12
        box = app.query_one("#arms")
        if stacked:
            assert all(p.size.height == 8 for p in panels)
        else:
            assert all(p.outer_size.width == 40 for p in panels)
        assert "arm00" in screen_text(app) and "arm11" not in screen_text(app)
        panels[-1].grid.focus()  # Tab to the last arm's table: the box scrolls to it
        for _ in range(200):  # (the scroll may be animated: wait for it, bounded)
            await pilot.wait_for_scheduled_animations()
            await pilot.pause(0.01)
            if "arm11" in screen_text(app):
                break
        assert "arm11" in screen_text(app) and (box.scroll_y > 0 if stacked else box.scroll_x > 0)


async def test_arms_are_arranged_again_after_a_resize(tmp_path: Path) -> None:
    arms = [f"arm{i}" for i in range(4)]
    app, follower, _ = manual_app(make_runs(tmp_path, steps=20, arms=arms), stacked=True)
    async with app.run_test(size=(100, 50)) as pilot:
        await sync(pilot, follower)
        panels = list(app.query(ArmPanel))
        assert all(p.size.height > 8 for p in panels)  # room for all: they share the box
        await pilot.resize_terminal(100, 16)
        await pilot.pause()
        await pilot.pause()
        assert all(p.size.height == 8 for p in panels)  # too little room: each keeps 8 rows, the box scrolls
        await pilot.resize_terminal(100, 60)
        await pilot.pause()
        await pilot.pause()
        assert all(p.size.height > 8 for p in panels)


def _last_rows_shown(app: Any) -> int:
    """Table lines showing the last step (39) on screen."""
    return len(re.findall(r"^\s+39\s+[+-]", screen_text(app), re.M))


@pytest.mark.parametrize(("arms", "size", "keys"), [(("a_very_long_arm_name",), (60, 15), "d"),
                                                    (("vanilla", "routeA", "absorb"), (80, 24), "dc")])
async def test_open_panels_leave_every_arm_table_rows(tmp_path: Path, arms: tuple[str, ...], size: tuple[int, int],
                                                      keys: str) -> None:
    """Open panels leave every arm's table rows: a panel of 14 lines would hide every row at 60x15, and at 80x24
    with both panels open would leave only the first of three stacked arms."""
    root = make_runs(tmp_path, arms=arms)
    app, follower, _ = manual_app(root)
    async with app.run_test(size=size) as pilot:
        await sync(pilot, follower)
        assert _last_rows_shown(app) == len(arms)
        await pilot.press(*keys)
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert "Routing diagnostics" in text and ("Chart of" in text) == ("c" in keys)
        assert _last_rows_shown(app) == len(arms), text
        assert all(name in text for name in arms), text
