"""The watch app driven with Pilot: every binding, follow mode, arms, panels, generations, status, themes."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from textual.widgets import Static

from steptable.app import feed as feed_mod
from steptable.app import make_app
from steptable.app.screens.events import EventsScreen
from steptable.app.screens.generations import GenerationsScreen
from steptable.app.screens.prompt import PromptScreen
from steptable.app.widgets.arm import ArmPanel
from steptable.app.widgets.grid import StepGrid
from steptable.app.widgets.keys import KeyBar
from steptable.app.widgets.panels import ChartPanel, DiagnosticsPanel, LegendPanel
from steptable.app.widgets.status import StatusBar
from steptable.table import render
from tests.app.helpers import (
    ARMS,
    HOSTILE,
    SIZE,
    T0,
    ManualFollower,
    append,
    make_runs,
    manual_app,
    open_generations,
    row,
    screen_text,
    static_text,
    sync,
    write_generations,
    write_rows,
)

pytestmark = pytest.mark.anyio


async def test_one_table_per_arm_same_layout(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        panels = list(app.query(ArmPanel))
        assert [p.label for p in panels] == sorted(ARMS)  # discovery order: sorted directories
        layouts = {tuple(c.key for c in p.grid.cols) for p in panels}
        assert len(layouts) == 1  # every arm shows the same columns in the same order
        cols = panels[0].grid.cols
        assert cols[0].key == "step" and "auroc" in {c.key for c in cols}
        for p in panels:
            assert p.grid.rows == 40
            title = static_text(p.title_bar)
            assert p.label in title and "40 rows" in title and "5s ago" in title and "following" in title
        # the newest row is on screen, formatted by render (same text as the stdout row)
        grid = panels[0].grid
        last = render.cells(grid.cols, grid.store.row(39))  # type: ignore[union-attr]
        assert render.SEP.join(last)[:30] in screen_text(app)


async def test_follow_mode_append_scroll_up_end(tmp_path: Path) -> None:
    root = make_runs(tmp_path, steps=60, arms=("solo",))
    app, follower, _ = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        grid = app.query_one(StepGrid)
        assert grid.follow and grid.scroll_y == grid.max_scroll_y
        append(root, "solo", 60, 80)
        await sync(pilot, follower)
        assert grid.rows == 80 and grid.follow and grid.scroll_y == grid.max_scroll_y
        assert "    79 " in screen_text(app)  # the newest step is on screen

        grid.focus()
        await pilot.press("pageup")
        assert not grid.follow
        top = grid.scroll_y
        append(root, "solo", 80, 90)
        await sync(pilot, follower)
        assert grid.rows == 90 and grid.scroll_y == top and not grid.follow  # stays where the user put it
        assert "paused" in static_text(app.query_one(ArmPanel).title_bar)

        await pilot.press("end")
        assert grid.follow and grid.scroll_y == grid.max_scroll_y
        await pilot.press("up")
        assert not grid.follow
        await pilot.press("G")
        assert grid.follow and grid.scroll_y == grid.max_scroll_y

        # mouse wheel up pauses too; wheel back to the bottom follows again
        grid.post_message(events.MouseScrollUp(grid, 2, 2, 0, -1, 0, False, False, False))
        await pilot.pause()
        assert not grid.follow
        for _ in range(5):
            grid.post_message(events.MouseScrollDown(grid, 2, 2, 0, 1, 0, False, False, False))
        await pilot.pause()
        assert grid.follow
        await pilot.press("home")
        assert grid.scroll_y == 0 and not grid.follow
        await pilot.press("f")  # follow all
        assert grid.follow and grid.scroll_y == grid.max_scroll_y


async def test_column_cursor_chart_and_pin(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        grids = list(app.query(StepGrid))
        grids[0].focus()
        first = app.session.selected
        await pilot.press("right")
        key = app.session.selected
        assert key != first and all(g.selected == key for g in grids)
        await pilot.press("left")
        assert app.session.selected == first
        await pilot.press("right", "right")
        key = app.session.selected
        assert key is not None

        await pilot.press("c")
        chart = app.query_one(ChartPanel)
        assert chart.display and chart.key == key
        text = static_text(chart.body)
        assert all(label in text for label in ARMS) and "min" in text and "max" in text and "last" in text
        await pilot.press("c")
        assert not chart.display

        await pilot.press("p")
        assert app.session.pins == [key]
        assert grids[1].fixed == 2 and grids[1].cols[1].key == key  # pinned next to the step column
        await pilot.press("p")
        assert app.session.pins == [] and grids[1].fixed == 1

        # a click on a header cell picks that column
        target = grids[0].cols[1]
        await pilot.click(grids[0], offset=(grids[0].cols[0].width + 2, 0))
        assert app.session.selected == target.key


async def test_horizontal_scroll_keeps_step_column(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)))
    async with app.run_test(size=(60, 24)) as pilot:
        await sync(pilot, follower)
        grid = app.query_one(StepGrid)
        grid.focus()
        assert grid.virtual_size.width > grid.size.width
        for _ in range(len(grid.cols)):
            await pilot.press("right")
        assert grid.scroll_x > 0 and grid.selected == grid.cols[-1].key
        header = screen_text(app).splitlines()[1]
        assert header.lstrip().startswith("step")  # pinned while the rest scrolled
        assert grid.cols[-1].header.strip() in header
        first, last, total = grid.columns_in_view()
        assert first > 1 and last == total
        assert f"columns {first}-{last} of {total}" in static_text(app.query_one(ArmPanel).title_bar)
        await pilot.press("shift+left")  # plain sideways scrolling, the column cursor stays
        assert grid.selected == grid.cols[-1].key and grid.columns_in_view()[0] < first


async def test_resume_redraws_rewritten_rows(tmp_path: Path) -> None:
    """A restarted writer appends steps again from its checkpoint: the table shows the new rows, not stale lines."""
    root = make_runs(tmp_path, steps=40, arms=("solo",))
    app, follower, _ = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        grid = app.query_one(StepGrid)
        assert "    39 " in screen_text(app)
        write_rows(root / "solo" / "metrics.jsonl", [{**row(0, s), "rew": 9.5} for s in range(30, 35)])
        await sync(pilot, follower)
        assert grid.rows == 35 and grid.store is not None and grid.store.resumes == [30]
        shown = screen_text(app)
        assert "    39 " not in shown and "    34 " in shown and "+9.50" in shown


async def test_keybar_click_presses_the_key(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        bar = app.query_one(KeyBar)
        start = next(a for a, _, key in bar._hits if key == "l")
        await pilot.click(KeyBar, offset=(start + 1, 0))
        assert app.query_one("#legend-box").display


async def test_keybar_fits_whole_keys_in_the_width(tmp_path: Path) -> None:
    """At 80 columns the footer was cut mid-key ("s Lay"), the palette's key off the end; it draws whole keys, closer
    together, the palette's last, and all of them again when the terminal widens."""
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


async def test_legend_and_diagnostics(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("l")
        assert app.query_one("#legend-box").display and app.query_one(LegendPanel).display
        shown = screen_text(app)
        assert "Legend" in shown and "how well dot(act, v_act)" in shown and "; higher is better" in shown
        await pilot.press("l")
        assert not app.query_one("#legend-box").display

        await pilot.press("d")
        diag = app.query_one(DiagnosticsPanel)
        text = static_text(diag.body)
        for key in ("auroc", "cos", "qmass", "keep", "resid", "rout", "tlo", "thi", "stale"):
            assert key in text
        assert all(label in text for label in ARMS)
        assert "▁" in text or "█" in text
        await pilot.press("d")
        assert not diag.display


async def test_filter_jump_prompts(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("slash")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"rew*", "enter")
        grid = app.query_one(StepGrid)
        assert [c.key for c in grid.cols] == ["step", "rew", "rew_s"]
        await pilot.press("slash", "escape")  # cancel keeps the filter
        assert [c.key for c in grid.cols] == ["step", "rew", "rew_s"]
        await pilot.press("slash")
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


async def test_generations_viewer_hostile_text(tmp_path: Path) -> None:
    root = make_runs(tmp_path)
    write_generations(root / "routeA")
    app, follower, _ = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        screen = await open_generations(pilot)
        assert screen.step == 20  # following: the newest step with samples
        await pilot.press("left")
        assert screen.step == 10
        shown = static_text(screen.query_one("#gen-text", Static))
        assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown
        assert "[bold red]markup[/]" in shown and "[link=https://evil.example]click[/link]" in shown
        assert "reward +1" in shown and "12 tokens" in shown
        assert "clearscreen" in shown and "titlepwned" not in shown
        await pilot.press("right", "right")
        assert screen.step == 20
        append(root, "routeA", 40, 45)  # rows arrive while the viewer is open: the tables behind it update
        await pilot.press("l")  # table keys do nothing over the viewer
        await sync(pilot, follower)
        assert app.screen is screen and not app.main.query_one("#legend-box").display
        assert max(p.grid.rows for p in app.main.query(ArmPanel)) == 45
        await pilot.press("a")  # one arm with generations: stays
        await pilot.press("escape")
        assert not isinstance(app.screen, GenerationsScreen)


async def test_generations_absent_notifies(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("v")
        assert not isinstance(app.screen, GenerationsScreen)


async def test_status_shows_bad_lines_alerts_and_stalls(tmp_path: Path) -> None:
    root = make_runs(tmp_path, arms=("solo",))
    path = root / "solo" / "metrics.jsonl"
    write_rows(path, [], extra='{"step": 40, "loss": \n')
    app, follower, clock = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        status = static_text(app.query_one(StatusBar))
        assert "bad lines" in status and "1 run" in status
        assert f"{path}:41:" in status

        write_rows(path, [{"step": 41, "loss": None, "ts": T0 + 82}, {"step": 42, "loss": float("nan"), "ts": T0 + 84}])
        await sync(pilot, follower)
        assert app.session.counts.get("E", 0) >= 1
        assert "loss non-finite" in static_text(app.query_one(StatusBar))

        clock.now = T0 + 84 + 3600  # an hour without a row, usual step 2 s
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


async def test_unknown_theme_falls_back(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)), theme="no-such-theme")
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        assert app.theme != "no-such-theme"


async def test_preview_then_full_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_runs(tmp_path, steps=2000, arms=("big",))
    monkeypatch.setattr(feed_mod, "PREVIEW_BYTES", 20_000)
    follower = ManualFollower([root])
    feed = feed_mod.Feed([str(root)], follower=follower, preview_min_bytes=1)
    app = make_app([str(root)], feed=feed, clock=lambda: T0 + 4000, tick=3600)
    async with app.run_test(size=SIZE) as pilot:
        assert follower.ready.wait(10)  # the preview is posted before the follower runs
        await pilot.pause()
        panel = app.query_one(ArmPanel)
        assert panel.preview is not None and 0 < panel.grid.rows < 2000
        assert "preview" in static_text(panel.title_bar)
        assert "1999" in screen_text(app)  # the newest rows first
        for _ in range(100):  # the full parse waits until the preview rows are drawn
            if feed.drawn.is_set():
                break
            await pilot.pause(0.01)
        assert feed.drawn.is_set() and panel.grid.drawn_rows
        await sync(pilot, follower)
        assert panel.preview is None and panel.grid.rows == 2000


async def test_live_follower_thread(tmp_path: Path) -> None:
    """The real Follower.run in the app's thread worker (stat polling): appended rows reach the table."""
    root = make_runs(tmp_path, arms=("solo",))
    app = make_app([str(root)], poll=0.02, clock=lambda: T0 + 100, tick=3600)
    async with app.run_test(size=SIZE) as pilot:
        grid = None
        for _ in range(500):
            await pilot.pause(0.01)
            grids = list(app.query(StepGrid))
            if grids and grids[0].rows == 40:
                grid = grids[0]
                break
        assert grid is not None
        append(root, "solo", 40, 45)
        for _ in range(500):
            await pilot.pause(0.01)
            if grid.rows == 45:
                break
        assert grid.rows == 45 and grid.scroll_y == grid.max_scroll_y


def test_run_watch_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from steptable.app import run_watch

    assert run_watch([str(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert run_watch([str(tmp_path)], schema="no-such-schema") == 2
    assert "unknown schema" in capsys.readouterr().err


def test_run_demo_app_stops_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from steptable.app import demo

    seen: list[Path] = []

    class FakeApp:
        return_code = 0

        def run(self) -> None:
            for _ in range(2000):  # wait (bounded) until the writer thread produced files
                if list(tmp_path.glob("*/metrics.jsonl")):
                    break
                threading.Event().wait(0.005)
            seen.extend(tmp_path.glob("*/metrics.jsonl"))

    monkeypatch.setattr(demo, "make_app", lambda paths, theme=None: FakeApp())
    assert demo.run_demo_app(tmp_path, steps=1000, interval=0.01) == 0
    assert seen
    assert not any(t.name == "steptable-demo-writer" and t.is_alive() for t in threading.enumerate())


def test_hostile_constant_is_hostile() -> None:
    assert "\x1b[2J" in HOSTILE and "\x1b]52;" in HOSTILE and "\u202e" in HOSTILE and "[bold red]" in HOSTILE


@pytest.mark.parametrize("where", ["jump", "theme"])
async def test_typed_text_in_notifications_is_never_markup(tmp_path: Path, where: str) -> None:
    """A Jump answer or a --theme name that looks like markup: a plain warning, no crash (an unbalanced closing
    tag raised MarkupError) and no live action link (``[@click=app.quit]`` quit the app when clicked)."""
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


async def test_generations_viewer_pages_a_big_step(tmp_path: Path) -> None:
    """A GRPO group of 128 long completions: the viewer shows a page (laying out all of it froze the UI for
    seconds), n and p move between pages."""
    import json

    root = make_runs(tmp_path, arms=("solo",))
    path = root / "solo" / "emergence" / "generations.jsonl"
    path.parent.mkdir(parents=True)
    body = "\n".join(f"reasoning line {i}" for i in range(200))
    path.write_text("".join(json.dumps({"step": 5, "prompt": "q", "completion": f"{k}\n{body}", "reward": 0.5})
                            + "\n" for k in range(128)))
    app, follower, _ = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        screen = await open_generations(pilot)
        first = static_text(screen.query_one("#gen-text", Static))
        assert "── 1/128 " in first and "── 128/128 " not in first and "n for the next ones" in first
        await pilot.press("n")
        second = static_text(screen.query_one("#gen-text", Static))
        assert "── 1/128 " not in second and second != first
        await pilot.press("p")
        assert static_text(screen.query_one("#gen-text", Static)) == first
        await pilot.press("p")  # no page before the first
        assert static_text(screen.query_one("#gen-text", Static)) == first


async def test_rows_changed_in_place_are_redrawn_charted_and_alerted(tmp_path: Path) -> None:
    """A later line that merges into a row on screen (tinker's eval line), a rewrite of the file and a resume: the
    table line, the chart's min/max and the alerts all follow what the store now holds."""
    path = tmp_path / "solo" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"step": 0, "loss": 1, "acc": 0.5}\n' + "".join(f'{{"step": {s}, "loss": 1}}\n' for s in range(1, 10))
    )
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        grid = app.query_one(StepGrid)
        write_rows(path, [{"step": 3, "acc": 0.33}])  # merged into a row already drawn
        await sync(pilot, follower)
        line = next(t for t in screen_text(app).splitlines() if t.split()[:1] == ["3"])
        assert ".33" in line, line

        write_rows(path, [{"step": 10, "lr": 0.1}])
        await sync(pilot, follower)
        with open(path, "a") as f:
            f.write('{"step": 10, "loss": NaN}\n')  # a NaN merged into a row the alert engine has already seen
        await sync(pilot, follower)
        assert any("step 10 loss non-finite" in e.text for e in app.session.alerts)

        grid.focus()
        while app.session.selected != "loss":
            await pilot.press("right")
        await pilot.press("c")
        path.write_text("")  # rewritten (a restart that truncates): the chart forgets the old values
        await sync(pilot, follower)
        write_rows(path, [{"step": s, "loss": s / 100} for s in range(40)])
        await sync(pilot, follower)
        text = static_text(app.query_one(ChartPanel).body)
        assert "max .39" in text and "min 0" in text, text

        write_rows(path, [{"step": s, "loss": 5.0} for s in range(20, 25)])  # a resume from the step-20 checkpoint
        write_rows(path, [{"step": 25, "loss": float("inf")}])
        await sync(pilot, follower)
        assert any("step 25 loss non-finite" in e.text for e in app.session.alerts)
        assert "max 5" in static_text(app.query_one(ChartPanel).body)


@pytest.mark.parametrize("stacked", [True, False])
async def test_many_arms_keep_a_readable_size_and_scroll(tmp_path: Path, stacked: bool) -> None:
    """More arms than fit: each arm keeps a readable size and the box scrolls to any of them (every arm grew to the
    whole box, so only the first was ever seen)."""
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


async def test_no_runs_says_what_it_waits_for_and_a_deleted_run_says_gone(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("just some notes\n")
    app, follower, _ = manual_app(notes)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        text = screen_text(app)
        assert "No runs under" in text and "keeps watching" in text  # it was a blank screen
        write_rows(notes / "a" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(3)])
        await sync(pilot, follower)
        assert "No runs under" not in screen_text(app) and len(app.query(ArmPanel)) == 1
        (notes / "a" / "metrics.jsonl").unlink()
        await sync(pilot, follower)
        app._on_tick()
        await pilot.pause()
        assert "FILE GONE" in static_text(app.query_one(ArmPanel).title_bar)


async def test_columns_widen_for_values_the_first_rows_never_had(tmp_path: Path) -> None:
    path = tmp_path / "solo" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 0.5, "tokens": 12} for s in range(30)])
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        write_rows(path, [{"step": 30, "loss": -1.2345e-05, "tokens": 123456789}])
        await sync(pilot, follower)
        line = next(t for t in screen_text(app).splitlines() if t.split()[:1] == ["30"])
        assert line.split()[:3] == ["30", "-1e-5", "123456789"], line  # "####" and "1.2e8" before


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
