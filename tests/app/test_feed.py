"""steptable.app.feed: the follower side of the app: a preview first, then the full store; the real follower thread;
changes coalesced and alerts scanned; a failing follower or reader told once."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from steptable.app import feed as feed_mod
from steptable.app import make_app
from steptable.app.feed import Feed
from steptable.app.messages import AlertsFound, FeedProblem, RunsChanged
from steptable.app.widgets.arm import ArmPanel
from steptable.app.widgets.grid import StepGrid
from steptable.ingest import Follower
from tests.app.helpers import SIZE, T0, ManualFollower, append, make_runs, row, screen_text, static_text, sync

pytestmark = pytest.mark.anyio


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


def _read_ahead(root: Path, monkeypatch: pytest.MonkeyPatch, fails: str, error: Exception) -> list[Any]:
    """What the read-ahead of ``root`` posts where the preview of each file under an arm named ``fails`` raises
    ``error``."""
    import steptable.ingest as ingest

    real = ingest.preview_tail

    def preview(path: Any, *a: Any, **kw: Any) -> Any:
        if Path(path).parent.name == fails:
            raise error
        return real(path, *a, **kw)

    monkeypatch.setattr(ingest, "preview_tail", preview)
    feed = Feed([str(root)], follower=Follower([root]), preview_min_bytes=1)
    feed.prepare()
    assert feed._prepared is not None
    got = []
    while (msg := feed._prepared.get(timeout=30)) is not None:
        got.append(msg)
    return got


def test_previews_only_for_what_the_follower_will_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big dataset JSONL and a big server log beside a run are not previewed as runs (they would stay "loading"
    and lend their keys to the real run's layout), and a big file that cannot be read is passed over."""
    root = make_runs(tmp_path, steps=300, arms=("big", "locked"))
    (root / "data").mkdir()
    (root / "data" / "prompts.jsonl").write_text(json.dumps({"prompt": "Solve " + "x" * 300, "answer": "42"}) + "\n"
                                                 * 300)
    (root / "vllm_server.log").write_text("INFO metrics.py:351] Avg prompt throughput: 0.0 tokens/s\n" * 3000)
    got = [m.run for m in _read_ahead(root, monkeypatch, "locked", PermissionError(13, "Permission denied"))]
    assert got == ["big/metrics.jsonl"]
    # a file several arms' StepLoggers share: no preview (it would show their rows merged under one name)
    from steptable import Col, StepLogger

    loggers = [StepLogger([Col("step", 4, "step", "d"), Col("rew", 6, "rew")], run_dir=root / "shared", arm=arm,
                          console=False, alerts=False) for arm in ("routeA", "absorb")]
    for s in range(50):
        for i, lg in enumerate(loggers):
            lg.log({"step": s, "rew": 0.111 if i == 0 else 0.999})
    for lg in loggers:
        lg.close()
    feed = Feed([str(root / "shared")], follower=Follower([root / "shared"]), preview_min_bytes=1)
    feed.prepare()
    assert feed._prepared is not None and feed._prepared.get(timeout=30) is None


def test_a_preview_that_fails_is_told_and_the_other_files_are_still_previewed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_runs(tmp_path, steps=300, arms=("big", "broken"))
    got = _read_ahead(root, monkeypatch, "broken", ValueError("a bug in the preview"))
    problems = [m for m in got if isinstance(m, FeedProblem)]
    assert [m.run for m in got if not isinstance(m, FeedProblem)] == ["big/metrics.jsonl"]
    assert len(problems) == 1 and not problems[0].lasting
    assert "broken/metrics.jsonl" in problems[0].text and "ValueError: a bug in the preview" in problems[0].text


def test_a_read_ahead_that_fails_is_told_and_not_written_to_stderr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import steptable.ingest as ingest

    root = make_runs(tmp_path, steps=30, arms=("a",))

    def discover(paths: Any) -> Any:
        raise RuntimeError("cannot list the runs")

    monkeypatch.setattr(ingest, "discover", discover)
    caught: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", caught.append)
    feed = Feed([str(root)], follower=Follower([root]), preview_min_bytes=1)
    feed.prepare()
    assert feed._prepared is not None
    first = feed._prepared.get(timeout=30)
    assert isinstance(first, FeedProblem) and not first.lasting
    assert first.text == "reading ahead stopped: RuntimeError: cannot list the runs"
    assert feed._prepared.get(timeout=30) is None
    assert caught == [] and capsys.readouterr().err == ""


def test_feed_coalesces_changes_and_scans_alerts(tmp_path: Path) -> None:
    root = make_runs(tmp_path, steps=30, arms=("solo",))
    path = root / "solo" / "metrics.jsonl"
    with open(path, "a") as fh:
        fh.write(json.dumps({**row(0, 30), "loss": None}) + "\n")  # JSON null: a logged NaN loss
    follower = Follower([str(root)])
    posted: list[Any] = []
    feed = Feed([str(root)], follower=follower, preview_min_bytes=0)
    feed._post = posted.append
    ids = follower.scan()
    feed._changed(ids)
    feed._changed(ids)  # a second change before the app took the first: no second message
    assert posted == [RunsChanged()] and not feed.scanner.idle.is_set()
    assert feed.take() == ids and feed.take() == set()
    feed._changed(ids)
    assert posted == [RunsChanged(), RunsChanged()]

    stop = threading.Event()
    scanner = threading.Thread(target=feed.scanner.run, args=(stop,))
    scanner.start()
    assert feed.scanner.idle.wait(10)
    stop.set()
    scanner.join()
    alerts = [m for m in posted if isinstance(m, AlertsFound)]
    assert len(alerts) == 1 and any(a.kind == "nonfinite" and a.column == "loss" for a in alerts[0].alerts)
    assert feed.scanner.scan(next(iter(ids)), follower.stores[next(iter(ids))]) == []  # nothing new to scan


def test_feed_reports_a_failing_follower() -> None:
    class Broken:
        stores: dict[str, Any] = {}  # noqa: RUF012

        def run(self, stop: threading.Event, on_change: Any) -> None:
            raise OSError("disk on fire")

    posted: list[Any] = []
    Feed([], follower=Broken(), preview_min_bytes=0).run(threading.Event(), posted.append)
    assert "disk on fire" in posted[0].text


def test_a_readers_internal_error_is_told_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_runs(tmp_path, steps=5, arms=("solo",))
    follower = Follower([str(root)])
    feed = Feed([str(root)], follower=follower, preview_min_bytes=0)
    posted: list[Any] = []
    feed._post = posted.append
    feed._changed(follower.scan())

    def boom() -> bool:
        raise KeyError("reader bug \x1b]52;c;ZXZpbA==\x07")

    for src in follower._sources.values():
        monkeypatch.setattr(src, "poll", boom)
    for _ in range(2):  # the same error on every pass: one notice
        feed._changed(follower.scan())
    problems = [m.text for m in posted if isinstance(m, FeedProblem)]
    assert len(problems) == 1 and "internal error (KeyError: 'reader bug" in problems[0]
    assert "\x1b" not in problems[0] and "\x07" not in problems[0]
    assert follower.error_count == 2


def test_an_internal_error_reported_while_another_thread_tells_is_told(tmp_path: Path) -> None:
    """A pass on one thread (a run opened from a sweep's list is read on a thread of its own) reports a reader's
    internal error while the follower's thread tells the errors so far: it is still told (it was counted before it
    was listed, and the teller took the count as told)."""
    import collections
    import sys

    from steptable.ingest.parse import BadLine

    root = make_runs(tmp_path, steps=5, arms=("solo",))
    follower = Follower([str(root)])
    feed = Feed([str(root)], follower=follower, preview_min_bytes=0, alerts=False)
    posted: list[Any] = []
    feed._post = posted.append
    feed._changed(follower.scan())
    listing, listed = threading.Event(), threading.Event()

    class Held(collections.deque):  # type: ignore[type-arg]
        def append(self, item: Any) -> None:  # (the reporting pass, between its count and its listing)
            listing.set()
            assert listed.wait(10)
            super().append(item)

    follower.reports.kept = Held(follower.reports.kept, maxlen=follower.reports.kept.maxlen)
    bad = BadLine(str(root / "solo" / "metrics.jsonl"), 0, "internal error (KeyError: 'reader bug')")
    reporter = threading.Thread(target=follower._report, args=(bad,))
    teller = threading.Thread(target=feed._changed, args=({"solo/metrics.jsonl"},))
    reporter.start()
    assert listing.wait(10)
    teller.start()
    for _ in range(1000):  # the teller is done, or waits for the report to end
        frame = sys._current_frames().get(teller.ident or 0)
        waiting = frame is not None and frame.f_code.co_name in ("errors_after", "problems_after", "after")
        if not teller.is_alive() or waiting:
            break
        threading.Event().wait(0.01)
    listed.set()
    reporter.join(10)
    teller.join(10)
    feed._changed({"solo/metrics.jsonl"})
    problems = [m.text for m in posted if isinstance(m, FeedProblem)]
    assert len(problems) == 1 and "KeyError: 'reader bug'" in problems[0]


def test_the_follower_is_built_once_when_two_threads_ask_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The read-ahead thread and the feed's thread both ask for the follower as the app starts: one is built."""
    import time as time_mod

    import steptable.ingest

    built: list[Any] = []

    class Slow(Follower):
        def __init__(self, *a: Any, **k: Any) -> None:
            time_mod.sleep(0.05)  # (both threads are in here together)
            super().__init__(*a, **k)
            built.append(self)

    monkeypatch.setattr(steptable.ingest, "Follower", Slow)
    feed = Feed([], preview_min_bytes=0)
    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(feed.follower)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(built) == 1 and got == [built[0], built[0]]
