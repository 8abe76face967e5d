"""The events list (e): f filters it by level, run and column; Enter on an alert shows its step at the top of
every table and closes the list; Enter on an event without a step (a bad line) says so and keeps the list open."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.screens.events import EMPTY, EventList, EventsScreen, matching
from steptable.app.widgets.status import Event
from tests.app.helpers import SIZE, make_runs, manual_app, row, sync, write_rows


def nan_run(root: Path, steps: int = 200, nan_at: int = 60) -> Path:
    """Three arms of ``steps`` rows; the first arm's loss is NaN at step ``nan_at`` (an error alert there) and its
    file ends in a line that is not JSON (a bad line, no step)."""
    make_runs(root, steps=0)
    for i, arm in enumerate(("vanilla", "routeA", "absorb")):
        rows = [row(i, s) for s in range(steps)]
        if i == 0:
            rows[nan_at]["loss"] = float("nan")
        write_rows(root / arm / "metrics.jsonl", rows, extra="{not json\n" if i == 0 else "")
    return root


def _tops(app: object) -> list[int]:
    return [p.grid.store.step_at(p.grid.top_index) for p in app.panels.values()]  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_enter_on_an_alert_jumps_every_table(tmp_path: Path) -> None:
    app, follower, _ = manual_app(nan_run(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("e")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, EventsScreen)
        lst = screen.query_one(EventList)
        target = next(i for i, ev in enumerate(lst.events) if ev.step == 60)
        await pilot.press(*["down"] * target)
        await pilot.pause()
        assert lst.current is not None and lst.current.step == 60
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, EventsScreen)  # closed
        assert _tops(app) == [60, 60, 60]
        assert not any(p.grid.follow for p in app.panels.values())


@pytest.mark.anyio
async def test_enter_on_a_bad_line_keeps_the_list(tmp_path: Path) -> None:
    app, follower, _ = manual_app(nan_run(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        before = _tops(app)
        await pilot.press("e")
        await pilot.pause()
        lst = app.screen.query_one(EventList)
        bad = next(i for i, ev in enumerate(lst.events) if ev.level == "B")
        await pilot.press("home", *["down"] * bad, "enter")
        await pilot.pause()
        assert isinstance(app.screen, EventsScreen)
        assert any("has no step" in str(n.message) for n in app._notifications)
        await pilot.press("escape")
        await pilot.pause()
        assert _tops(app) == before


def test_matching_words() -> None:
    evs = [Event("E", "a", "x", "ra", 3, "loss"), Event("W", "b", "y", "rb", 5, "kl"), Event("B", "a", "z", "ra")]
    assert matching(evs, "") == evs
    assert matching(evs, "e w") == evs[:2]
    assert matching(evs, "run:a") == [evs[0], evs[2]]
    assert matching(evs, "run:rb col:k*") == [evs[1]]
    assert matching(evs, "W col:loss") == []
    assert isinstance(matching(evs, "level=E"), str)


@pytest.mark.anyio
async def test_filter_the_events_list(tmp_path: Path) -> None:
    app, follower, _ = manual_app(nan_run(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("e")
        await pilot.pause()
        lst = app.screen.query_one(EventList)
        everything = list(lst.events)
        assert {ev.level for ev in everything} >= {"E", "B"}
        await pilot.press("f", *"E col:loss", "enter")
        await pilot.pause()
        assert isinstance(app.screen, EventsScreen)
        assert lst.events and all(ev.level == "E" and ev.column == "loss" for ev in lst.events)
        assert len(lst.events) < len(everything)
        await pilot.press("f", "ctrl+a", "ctrl+k", *"run:nobody", "enter")
        await pilot.pause()
        assert lst.events == [] and lst.lines == [EMPTY]
        await pilot.press("f", "ctrl+a", "ctrl+k", *"bogus", "enter")
        await pilot.pause()
        assert lst.events == []  # kept
        assert any("not a filter word" in str(n.message) for n in app._notifications)
        await pilot.press("f", "ctrl+a", "ctrl+k", "enter")
        await pilot.pause()
        assert lst.events == everything
