"""The app's first frame: a big file's preview is drawn in it (not one message and one frame later), the feed does not
post that preview again, and garbage collection is paused from the mount until rows are on screen."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from steptable.app import feed as feed_mod
from steptable.app import firstrows, make_app
from steptable.app.app import StepTableApp
from steptable.app.feed import Feed
from steptable.app.messages import PreviewReady
from steptable.app.widgets.arm import ArmPanel
from steptable.ingest import Follower
from tests.app.helpers import SIZE, T0, make_runs, screen_text

pytestmark = pytest.mark.anyio


@pytest.fixture
def collecting() -> Iterator[None]:
    """Garbage collection on during the test, as it was after."""
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _big_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(feed_mod, "PREVIEW_BYTES", 20_000)
    return make_runs(tmp_path, steps=2000, arms=("big",))


async def test_the_preview_is_in_the_first_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _big_run(tmp_path, monkeypatch)
    posted: list[str] = []
    real = StepTableApp.on_preview_ready

    def on_preview_ready(self: StepTableApp, message: PreviewReady) -> None:
        posted.append(message.run)
        real(self, message)

    monkeypatch.setattr(StepTableApp, "on_preview_ready", on_preview_ready)
    feed = Feed([str(root)], follower=Follower([root]), preview_min_bytes=1)
    app = make_app([str(root)], feed=feed, clock=lambda: T0 + 4000, tick=3600)
    drawn: list[str] = []
    app.first_rows.add(lambda: drawn.append(screen_text(app)))
    async with app.run_test(size=SIZE) as pilot:
        # composed with the panel, its rows taken at mount: the first refresh draws the newest rows
        assert list(app.panels) == ["big/metrics.jsonl"] and app.panels["big/metrics.jsonl"].preview is not None
        assert not app.query_one("#no-runs").display
        for _ in range(200):
            if drawn:
                break
            await pilot.pause(0.01)
        assert drawn and "1999" in drawn[0] and "No runs" not in drawn[0]
        assert app.query_one(ArmPanel).has_class("-focused") and app.focused is app.panels["big/metrics.jsonl"].grid
        for _ in range(500):  # then the full parse replaces the preview
            if app.panels["big/metrics.jsonl"].grid.rows == 2000:
                break
            await pilot.pause(0.01)
        assert app.panels["big/metrics.jsonl"].grid.rows == 2000 and app.panels["big/metrics.jsonl"].preview is None
    assert posted == []  # (the feed did not post the preview the app took itself)


def test_first_messages_are_not_posted_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _big_run(tmp_path, monkeypatch)
    feed = Feed([str(root)], follower=Follower([root]), preview_min_bytes=1)
    assert feed.first_messages() == []  # (no read-ahead started: nothing to wait for)
    feed.prepare()
    first = feed.first_messages(wait=30)
    assert [type(m) for m in first] == [PreviewReady] and first[0].run == "big/metrics.jsonl"
    posted: list[Any] = []
    feed._post = posted.append
    feed.drawn.set()  # (the app drew it)
    feed._preview(threading.Event())
    assert posted == []
    assert feed.first_messages(wait=0.01) == []  # (the read-ahead's end stays for the feed's own loop)


def test_a_slow_read_ahead_is_not_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not ready within the wait: the first frame goes without it, and the feed posts the preview later."""
    root = _big_run(tmp_path, monkeypatch)
    gate = threading.Event()
    real = Feed._read_ahead

    def slow(self: Feed, out: Any) -> None:
        gate.wait(30)
        real(self, out)

    monkeypatch.setattr(Feed, "_read_ahead", slow)
    feed = Feed([str(root)], follower=Follower([root]), preview_min_bytes=1)
    feed.prepare()
    assert feed.first_messages(wait=0.05) == []
    gate.set()
    posted: list[Any] = []
    feed._post = posted.append
    stop = threading.Event()
    threading.Timer(0.05, feed.drawn.set).start()
    feed._preview(stop)
    assert [m.run for m in posted] == ["big/metrics.jsonl"]


@pytest.mark.usefixtures("collecting")
async def test_collection_pauses_until_rows_are_drawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _big_run(tmp_path, monkeypatch)
    feed = Feed([str(root)], follower=Follower([root]), preview_min_bytes=1)
    app = make_app([str(root)], feed=feed, clock=lambda: T0 + 4000, tick=3600)
    at_rows: list[bool] = []
    app.first_rows.add(lambda: at_rows.append(gc.isenabled()))  # (before the pause's own callback)
    async with app.run_test(size=SIZE) as pilot:
        assert not gc.isenabled() or at_rows
        for _ in range(200):
            if at_rows:
                break
            await pilot.pause(0.01)
        assert at_rows == [False] and gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("collecting")
async def test_collection_resumes_without_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No rows to draw (an empty directory): collection is on again after FIRST_ROWS_WAIT, or when the app ends."""
    monkeypatch.setattr(firstrows, "FIRST_ROWS_WAIT", 0.05)
    app = make_app([str(tmp_path)], tick=3600)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            if gc.isenabled():
                break
            await pilot.pause(0.01)
        assert gc.isenabled() and "No runs" in screen_text(app)
    monkeypatch.setattr(firstrows, "FIRST_ROWS_WAIT", 3600)
    app = make_app([str(tmp_path)], tick=3600)
    async with app.run_test(size=SIZE):
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("collecting")
async def test_collection_left_off_by_the_caller_stays_off(tmp_path: Path) -> None:
    gc.disable()
    app = make_app([str(tmp_path)], tick=3600)
    async with app.run_test(size=SIZE):
        pass
    assert not gc.isenabled()
