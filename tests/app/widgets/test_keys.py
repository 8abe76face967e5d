"""steptable.app.widgets.keys: the key bar: a click presses the key, whole keys fit the width, a new theme's
colours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steptable.app.widgets.keys import KeyBar
from tests.app.helpers import SIZE, make_runs, manual_app, sync

pytestmark = pytest.mark.anyio


async def test_keybar_click_presses_the_key(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        bar = app.query_one(KeyBar)
        start = next(a for a, _, key in bar._hits if key == "l")
        await pilot.click(KeyBar, offset=(start + 1, 0))
        assert app.query_one("#legend-box").display


async def test_keybar_fits_whole_keys_in_the_width(tmp_path: Path) -> None:
    """At 80 columns the footer draws whole keys (never "s Lay"), closer together, the palette's last, and all of
    them again when the terminal widens."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await sync(pilot, follower)
        bar = app.query_one(KeyBar)
        wide = [f" {d} {desc}" for _, d, desc, _ in bar.shown()]
        for width, every in ((80, False), (130, True), (60, False)):
            await pilot.resize_terminal(width, 24)
            await pilot.pause()
            text = str(bar.render())
            drawn = [text[a:b].rstrip() for a, b, _ in bar._hits]
            assert len(text) <= width and all(d in wide for d in drawn) and drawn[-1] == " ^p palette", (width, text)
            assert " ? Help" in drawn and (drawn == wide) == every


def _footer_colours(app: Any) -> set[tuple[Any, Any]]:
    bar = app.query_one(KeyBar)
    strip = app.screen._compositor.render_strips()[bar.region.y]
    return {(seg.style.bgcolor, seg.style.color) for seg in strip if seg.style and seg.text.strip()}


async def test_footer_takes_the_new_theme_colours(tmp_path: Path) -> None:
    """The key bar drew its bindings once per change of bindings: a theme picked in the command palette left the
    footer in the old theme's colours."""
    root = make_runs(tmp_path)
    seen = {}
    for start, switch in (("light", None), ("dark", "light")):
        app, follower, _ = manual_app(root, theme=start)
        async with app.run_test(size=(120, 30)) as pilot:
            await sync(pilot, follower)
            if switch:
                app.theme = switch  # what the palette's theme picker does
                await pilot.pause()
                await pilot.pause()
            seen[start] = _footer_colours(app)
    assert seen["light"] and seen["dark"] == seen["light"]
