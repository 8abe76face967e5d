"""steptable.app.app: the watch app driven with Pilot: quitting (q, Ctrl-C), themes and the command palette, and
typed text in notifications that is never markup."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.screens.prompt import PromptScreen
from steptable.app.widgets.grid import StepGrid
from tests.app.helpers import SIZE, make_runs, manual_app, sync

pytestmark = pytest.mark.anyio


async def test_themes_and_command_palette(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)), theme="light")
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        assert app.theme == "light" and not app.current_theme.dark
        assert {"dark", "light", "high-contrast"} <= set(app.available_themes)
        app.theme = "high-contrast"
        await pilot.pause()
        names = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Legend", "Diag", "Chart", "Filter", "Jump", "Pin", "Layout", "Gens"} <= names
        assert names & {"Theme", "Change theme"}  # Textual's own entry ("Change theme" up to Textual 6.3)
        await pilot.press("ctrl+p")
        await pilot.press(*"Legend", "enter")
        await pilot.pause()
        assert app.query_one("#legend-box").display


async def test_quit_key(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("shift+right")
        assert app.query_one(StepGrid).scroll_x > 0
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0 and app._stop.is_set()  # the feed thread was told to stop


@pytest.mark.parametrize("where", ["jump", "theme"])
async def test_typed_text_in_notifications_is_never_markup(tmp_path: Path, where: str) -> None:
    """A Jump answer or a --theme name that looks like markup: a plain warning, no crash (an unbalanced closing
    tag would raise MarkupError) and no live action link (``[@click=app.quit]`` would quit the app when clicked)."""
    theme = "[/x][@click=app.quit]t" if where == "theme" else None
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)), theme=theme)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await sync(pilot, follower)
        if where == "jump":
            for answer in ("[/x]", "[@click=app.quit]hi"):
                await pilot.press("colon", *answer, "enter")
                await pilot.pause()
        texts = [str(n.message) for n in app._notifications]
        assert app.is_running and app.return_code is None
        assert any("[/x]" in t for t in texts)
        for strip in app.screen._compositor.render_strips():
            assert not any(seg.style and seg.style.meta and "@click" in seg.style.meta for seg in strip)


@pytest.mark.parametrize("over_prompt", [False, True])
async def test_ctrl_c_quits_the_app(tmp_path: Path, over_prompt: bool) -> None:
    """^C quits the app (also over a prompt's input), not a toast "Press ctrl+q to quit the app"."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        if over_prompt:
            await pilot.press("slash")
            assert isinstance(app.screen, PromptScreen)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
    assert (app.return_code or 0) == 0


async def test_palette_names_keys_as_the_footer_does(tmp_path: Path) -> None:
    """The palette names keys as the footer does (":", not "colon,g")."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        helps = {c.title: c.help for c in app.get_system_commands(app.screen)}
    assert helps["Jump"].endswith("(key : g)") and helps["Filter"].endswith("(key F)")
    assert helps["Search"].endswith("(key /)")
    assert not any("colon" in h or "slash" in h or "question_mark" in h for h in helps.values())


def test_panels_are_not_refreshed_once_the_screens_are_gone() -> None:
    """A focus event that arrives while the app shuts down (its screen stack empty) refreshes nothing and does not
    raise."""
    from steptable.app.app import StepTableApp
    from steptable.app.feed import Feed

    app = StepTableApp(Feed([]))
    assert app.screen_stack == []
    app.refresh_panels()


@pytest.mark.anyio
async def test_a_fit_resumed_in_a_new_logger_version_goes_on_in_its_runs_table(tmp_path: Path) -> None:
    """Lightning's CSVLogger writes the resumed process to ``version_1``: the watch shows one table going on from the
    resume's step (steptable.ingest.resumes), not a second run."""
    import math

    from tests.app.helpers import screen_text
    from tests.library_logs import write_lightning_rows

    arm = tmp_path / "armA"
    write_lightning_rows(arm / "version_0", [(s, {"loss": 1 + math.sin(s)}) for s in range(20)])
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        assert list(app.panels) == ["armA/version_0/metrics.csv"]
        write_lightning_rows(arm / "version_1", [(s, {"loss": 7.0}) for s in range(15, 25)])
        await sync(pilot, follower)
        await pilot.pause()
        assert list(app.panels) == ["armA/version_0/metrics.csv"]
        text = screen_text(app)
        assert "25 rows" in text and "resumed 15" in text and "7.00" in text
