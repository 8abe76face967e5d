"""steptable.app.widgets.grid: the step table: follow mode, the column cursor, horizontal scroll keeping the
step column, rows rewritten or changed in place redrawn, columns widened, the cursor column shaded in every theme."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events

from steptable.app.widgets.arm import ArmPanel
from steptable.app.widgets.grid import StepGrid
from steptable.app.widgets.panels import ChartPanel
from tests.app.helpers import ARMS, SIZE, append, make_runs, manual_app, row, screen_text, static_text, sync, write_rows

pytestmark = pytest.mark.anyio


async def test_the_cursor_column_is_shaded_in_every_theme(tmp_path: Path) -> None:
    """The column under the cursor (the one the chart plots and p pins) is shaded in each of steptable's three
    themes ($boost is transparent in a theme that sets $panel, in Textual 8.2.5 and later)."""
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        for theme in ("dark", "light", "high-contrast", "textual-dark"):
            app.theme = theme
            await pilot.pause()
            grid = app.query_one(StepGrid)
            shade = grid.get_component_styles("grid--column").background
            base = grid.styles.background if grid.styles.background.a else app.screen.styles.background
            assert shade.a > 0, theme
            assert base.blend(shade, shade.a).rgb != base.rgb, theme


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
        # (a jump pauses every table: the hint names the key that resumes them all too)
        assert "paused (End/G follows; f: every table)" in static_text(app.query_one(ArmPanel).title_bar)

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


async def test_columns_widen_for_values_the_first_rows_never_had(tmp_path: Path) -> None:
    path = tmp_path / "solo" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 0.5, "tokens": 12} for s in range(30)])
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        write_rows(path, [{"step": 30, "loss": -1.2345e-05, "tokens": 123456789}])
        await sync(pilot, follower)
        line = next(t for t in screen_text(app).splitlines() if t.split()[:1] == ["30"])
        # (not "1.2e8"; the loss on its own, as tail writes it: its column's new notation would write '-.000')
        assert line.split()[:3] == ["30", "-1e-5", "123456789"], line


async def test_joiners_in_keys_and_cells_keep_the_screen_lines_measured_alike(tmp_path: Path) -> None:
    """Two arms side by side; one logs a key and a text value full of zero-width joiners between letters and
    between emoji. Every screen line is as wide to Textual (Rich's measure) as to the table's own measure: a joiner
    whose next character Textual counts as no cell would push the rest of its line, the other arm included, out
    of place on a terminal that draws that character."""
    from steptable.table.cells import display_width

    joined = "x\u200dy\u200dz\u200d\u4e2d\u200d\U0001f468\u200d\u200d\U0001f469"
    rows = [{"step": s, "loss": 1 / (s + 1), "n\u200do\u200dt\u200de": joined, joined: float(s)} for s in range(40)]
    write_rows(tmp_path / "a" / "metrics.jsonl", rows)
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": s, "loss": 1 / (s + 2)} for s in range(40)])
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("l")  # the legend names the keys too
        await pilot.pause()
        strips = app.screen._compositor.render_strips()
        assert "\u4e2d" in "".join(s.text for s in strips)  # (the column and its legend line are on screen)
        assert [display_width(s.text) for s in strips] == [s.cell_length for s in strips]
