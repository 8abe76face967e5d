"""steptable.app.demo: the demo app stops its writer when it ends, and starts on the hack-rate column."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from steptable.app import demo as app_demo
from steptable.app.widgets.panels import ChartPanel
from tests.app.helpers import SIZE, manual_app, sync

pytestmark = pytest.mark.anyio


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


async def test_the_demo_starts_on_the_hack_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """c first charted ref_eq, the generations count: three identical ramps."""
    made: list[Any] = []

    def rows_written() -> None:  # (the stand-in for app.run: the writer thread's first rows, waited for, bounded)
        for _ in range(500):
            if len(list(tmp_path.glob("*/metrics.jsonl"))) == 3:
                return
            threading.Event().wait(0.02)

    def make(paths: list[str], theme: str | None = None) -> Any:
        app, follower, _ = manual_app(Path(paths[0]))
        monkeypatch.setattr(app, "run", rows_written)
        made.append((app, follower))
        return app

    monkeypatch.setattr(app_demo, "make_app", make)
    assert app_demo.run_demo_app(tmp_path, steps=3, interval=0) == 0
    app, follower = made[0]
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        assert app.query_one(ChartPanel).key == "hack_s"
        assert "Chart of hack_s" in str(app.query_one(ChartPanel).build(100))
