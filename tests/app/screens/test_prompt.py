"""steptable.app.screens.prompt: the filter and jump prompts."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.screens.prompt import PromptScreen
from steptable.app.widgets.grid import StepGrid
from tests.app.helpers import SIZE, make_runs, manual_app, sync

pytestmark = pytest.mark.anyio


async def test_filter_jump_prompts(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("F")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"rew*", "enter")
        grid = app.query_one(StepGrid)
        assert [c.key for c in grid.cols] == ["step", "rew", "rew_s"]
        await pilot.press("F", "escape")  # cancel keeps the filter
        assert [c.key for c in grid.cols] == ["step", "rew", "rew_s"]
        await pilot.press("F")
        await pilot.press(*["backspace"] * 4, "enter")
        assert len(grid.cols) > 3

        for key in ("colon", "g"):
            await pilot.press(key)
            assert isinstance(app.screen, PromptScreen)
            await pilot.press("1", "2", "enter")
            for g in app.query(StepGrid):
                assert g.top_index == 12 and not g.follow
            await pilot.press("G")
        for answer in ("x", "inf", "-1e400", "nan"):  # not a step: a warning, nothing moves ("inf" ended the app)
            await pilot.press("g", *answer, "enter")
            assert not isinstance(app.screen, PromptScreen) and app.is_running
        assert sum("not a step" in n.message for n in app._notifications) == 4


@pytest.mark.parametrize("opener", [":", "g"])
async def test_keys_typed_with_the_jump_key_go_into_the_prompt(tmp_path: Path, opener: str) -> None:
    """``g1200⏎`` typed at once (a fast typist, a paste, keys that arrive together over ssh): the jump key went to
    the table first and came back to the app's bindings after the keys typed with it had gone the same way, to be
    dropped there (the prompt on top by then): the prompt stayed empty, the step never asked for (in tmux, the first
    jump of a session). Posted here as a terminal's keys arrive, without waiting between them."""
    from textual import events

    app, follower, _ = manual_app(make_runs(tmp_path, steps=200))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        for ch in (opener, "1", "2", "0"):
            app.post_message(events.Key("colon" if ch == ":" else ch, ch))
        app.post_message(events.Key("enter", "\r"))
        for _ in range(10):
            await pilot.pause()
        assert not isinstance(app.screen, PromptScreen) and not app.session.hidden
        grids = app.tables.grids()
        assert [g.store.step_at(g.top_index) for g in grids if g.store is not None] == [120] * 3
