"""Snapshot tests of the watch app (pytest-textual-snapshot): fixed data, fixed clock, fixed terminal size.

Update after an intended change with ``pytest tests/app/test_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from steptable.app.screens.generations import GenerationsScreen
from tests.app.helpers import SIZE, make_runs, manual_app, sync, write_generations


def _app(root: Path, **kw: Any) -> tuple[Any, Any]:
    app, follower, _ = manual_app(root, **kw)

    async def loaded(pilot: Any) -> None:
        await sync(pilot, follower)

    return app, loaded


def _with(loaded: Any, *keys: str) -> Any:
    async def run_before(pilot: Any) -> None:
        await loaded(pilot)
        await pilot.press(*keys)

    return run_before


def test_main_screen(snap_compare: Any, tmp_path: Path) -> None:
    app, loaded = _app(make_runs(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_side_by_side_with_chart(snap_compare: Any, tmp_path: Path) -> None:
    app, loaded = _app(make_runs(tmp_path, arms=("vanilla", "routeA")), stacked=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=_with(loaded, "tab", "right", "right", "c"))


def test_legend(snap_compare: Any, tmp_path: Path) -> None:
    app, loaded = _app(make_runs(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=_with(loaded, "l"))


def test_diagnostics_panel(snap_compare: Any, tmp_path: Path) -> None:
    app, loaded = _app(make_runs(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=_with(loaded, "d"))


def test_light_theme(snap_compare: Any, tmp_path: Path) -> None:
    app, loaded = _app(make_runs(tmp_path), theme="light")
    assert snap_compare(app, terminal_size=SIZE, run_before=_with(loaded, "c"))


def test_high_contrast_theme(snap_compare: Any, tmp_path: Path) -> None:
    app, loaded = _app(make_runs(tmp_path, arms=("vanilla", "routeA")), theme="high-contrast")
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_generations_hostile_text(snap_compare: Any, tmp_path: Path) -> None:
    root = make_runs(tmp_path)
    write_generations(root / "routeA")
    app, loaded = _app(root)

    async def run_before(pilot: Any) -> None:
        await loaded(pilot)
        await pilot.press("v")
        screen = pilot.app.screen
        assert isinstance(screen, GenerationsScreen)
        indexing = [w for w in pilot.app.workers if w.group == "gen-index"]
        if indexing:
            await pilot.app.workers.wait_for_complete(indexing)
        await pilot.pause()
        await pilot.press("left")  # step 10: the hostile completion

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_alert_marked_cell(snap_compare: Any, tmp_path: Path) -> None:
    """A 12x grad-norm cell: ! and the alert's colour on it and on its row's step."""
    from tests.app.helpers import row, write_rows

    rows = [row(0, s) for s in range(40)]
    rows[30]["gn"] = 12.0
    write_rows(tmp_path / "solo" / "metrics.jsonl", rows)
    app, loaded = _app(tmp_path)
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)
