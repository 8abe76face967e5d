"""] / [ take every table to the next / previous step with an alert, } / { to the next / previous step with a NaN or
inf in a shown column; where there is none they say so and nothing moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.app import StepTableApp
from steptable.app.seek import nearest
from tests.app.helpers import SIZE, manual_app, row, screen_text, sync, write_rows


def two_nans(root: Path) -> Path:
    """Three arms of 200 rows; arm 1's loss is NaN at steps 40 and 150, arm 2's gn is inf at step 90."""
    for i, arm in enumerate(("vanilla", "routeA", "absorb")):
        rows = [row(i, s) for s in range(200)]
        if i == 1:
            rows[40]["loss"] = rows[150]["loss"] = float("nan")
        if i == 2:
            rows[90]["gn"] = float("inf")
        write_rows(root / arm / "metrics.jsonl", rows)
    return root


def _tops(app: StepTableApp) -> list[int]:
    return [p.grid.store.step_at(p.grid.top_index) for p in app.panels.values() if p.grid.store is not None]


def test_nearest() -> None:
    assert nearest([5, 1, 9], 5, True) == 9
    assert nearest([5, 1, 9], 5, False) == 1
    assert nearest([5, 1, 9], 9, True) is None
    assert nearest([], 0, False) is None


@pytest.mark.anyio
async def test_next_and_previous_nonfinite(tmp_path: Path) -> None:
    app, follower, _ = manual_app(two_nans(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("home")
        seen = []
        for _ in range(3):
            await pilot.press("right_curly_bracket")
            await pilot.pause()
            seen.append(_tops(app))
        assert seen[0] == [40] * 3 and seen[1] == [90] * 3
        assert all(p.grid.follow is False for p in app.panels.values())
        # 150 is too near the end to come to the top: the table still counts as at 150
        assert set(seen[2]) != {90}
        assert app.seek.here(app.tables.focused_grid()) == 150  # type: ignore[arg-type]
        await pilot.press("right_curly_bracket")
        await pilot.pause()
        assert any("no NaN or inf after step 150" in str(n.message) for n in app._notifications)
        await pilot.press("left_curly_bracket")
        await pilot.pause()
        assert _tops(app) == [90] * 3


@pytest.mark.anyio
async def test_next_and_previous_alert(tmp_path: Path) -> None:
    app, follower, _ = manual_app(two_nans(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        alert_steps = sorted({e.step for e in app.session.alerts if e.step is not None})
        assert 40 in alert_steps
        await pilot.press("home", "right_square_bracket")
        await pilot.pause()
        assert _tops(app) == [alert_steps[0]] * 3
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert _tops(app) == [alert_steps[0]] * 3  # nothing before the first
        assert any(f"no alert before step {alert_steps[0]}" in str(n.message) for n in app._notifications)


@pytest.mark.anyio
async def test_the_alerts_of_a_folded_seed_group_are_sought(tmp_path: Path) -> None:
    """A seed of a group shown as its table of means is a hidden run: ] passed over its alerts, which that table
    marks (in tmux, ] from step 40 went past vanilla_seed1's grad-norm spike at 150 to absorb's NaN at 220)."""
    for i, arm in enumerate(("vanilla_seed0", "vanilla_seed1", "absorb")):
        rows = [row(i, s) for s in range(200)]
        if arm == "vanilla_seed1":
            rows[60]["loss"] = float("nan")
        write_rows(tmp_path / arm / "metrics.jsonl", rows)
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        seed = "vanilla_seed1/metrics.jsonl"
        assert seed in app.session.hidden and 60 in {e.step for e in app.session.alerts if e.run == seed}
        await pilot.press("home", "right_square_bracket")
        await pilot.pause()
        assert [g.store.step_at(g.top_index) for g in app.tables.grids() if g.store is not None] == [60, 60]
        app.session.hidden.add(app.seedgroups.group_of(seed) or "")  # the group's table hidden: its seeds' alerts too
        app.arrangement.set_hidden(app.session.hidden)
        await pilot.press("home", "right_square_bracket")
        await pilot.pause()
        assert [g.store.step_at(g.top_index) for g in app.tables.grids() if g.store is not None] != [60]


@pytest.mark.anyio
async def test_seek_keys_are_in_the_help(tmp_path: Path) -> None:
    app, _, _ = manual_app(two_nans(tmp_path))
    async with app.run_test(size=SIZE):
        lines = dict(app.key_help())
        assert lines["]"].startswith("Next alert") and lines["{"].startswith("Prev NaN")


def stepped(root: Path) -> Path:
    """Two arms of 300 rows whose learning rate is halved at steps 100 and 200 (a stepped schedule)."""
    for i, arm in enumerate(("vanilla", "routeA")):
        rows = [row(i, s) for s in range(300)]
        for s, r in enumerate(rows):
            r["lr"] = 1e-3 / 2 ** (s // 100)
        write_rows(root / arm / "metrics.jsonl", rows)
    return root


@pytest.mark.anyio
async def test_next_and_previous_regime_change_of_the_lit_column(tmp_path: Path) -> None:
    app, follower, _ = manual_app(stepped(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        grid = app.tables.focused_grid()
        assert grid is not None
        grid.select("lr")
        app.tables.column_picked(grid, "lr")
        await pilot.press("home", "right_parenthesis")
        await pilot.pause()
        assert _tops(app) == [100, 100]
        await pilot.press("right_parenthesis")
        await pilot.pause()
        assert _tops(app) == [200, 200]
        await pilot.press("right_parenthesis")
        await pilot.pause()
        assert any("no regime change of lr after step 200" in str(n.message) for n in app._notifications)
        await pilot.press("left_parenthesis")
        await pilot.pause()
        assert _tops(app) == [100, 100]
        keys = dict(app.key_help())
        assert keys[")"].startswith("Next regime") and keys["("].startswith("Prev regime")


@pytest.mark.anyio
async def test_the_regime_notice_names_a_hostile_key_as_inert_text(tmp_path: Path) -> None:
    """The notice quotes the lit column's key: escape sequences, C1 controls, bidi overrides and a newline in it
    reach neither the toast's text nor the screen."""
    key = "lr\x1b[2J\x1b]52;c;ZXZpbA==\x07\u202e\x9b31m\nstep 9"
    rows = [row(0, s) for s in range(50)]
    for r in rows:
        r[key] = 1e-3
    write_rows(tmp_path / "vanilla" / "metrics.jsonl", rows)
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await sync(pilot, follower)
        grid = app.tables.focused_grid()
        assert grid is not None
        grid.select(key)
        app.tables.column_picked(grid, key)
        await pilot.press("right_parenthesis")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications if "regime change of" in str(n.message)]
        assert len(said) == 1 and said[0].startswith("no regime change of lr31m⏎step 9 after step ")
        assert not any(bad in said[0] for bad in ("\x1b", "\x07", "\u202e", "\x9b", "\n"))
        assert not any(bad in screen_text(app) for bad in ("\x1b", "\x07", "\u202e", "\x9b"))
