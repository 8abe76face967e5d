"""The watch's heap kept out of the collector's full passes (steptable.app.heap), and when the app's parts freeze it:
the feed at the UI's take after the one that gave it the first rows (only while it runs), undone when it stops."""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest

from steptable.app import heap
from steptable.app.feed import Feed


class _Spy:
    """gc's freeze and unfreeze, counted (the test process's own heap is left alone)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def freeze(self) -> None:
        self.calls.append("freeze")

    def unfreeze(self) -> None:
        self.calls.append("unfreeze")


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> _Spy:
    s = _Spy()
    monkeypatch.setattr(heap, "gc", s)
    monkeypatch.setattr(heap, "_holders", 0)
    return s


def test_settle_freezes_until_its_last_release(spy: _Spy) -> None:
    heap.settle()
    heap.settle()
    heap.release()
    assert spy.calls == ["freeze", "freeze"]  # one holder left
    heap.release()
    assert spy.calls == ["freeze", "freeze", "unfreeze"]
    heap.release()  # (one too many: the collector has everything already)
    assert spy.calls[-1] == "unfreeze" and heap._holders == 0


def test_settle_freezes_the_live_heap() -> None:
    keep = [[] for _ in range(10)]  # (tracked containers alive now)
    before = gc.get_freeze_count()
    heap.settle()
    try:
        assert gc.get_freeze_count() >= before + len(keep)
    finally:
        heap.release()


class _OneChange:
    """A follower that reports one run changed, then waits for the stop."""

    stores: dict[str, Any] = {}  # noqa: RUF012

    def run(self, stop: threading.Event, on_change: Any) -> None:
        on_change({"r"})
        stop.wait(10)

    def scan(self) -> set[str]:
        return set()


def _start(worker: threading.Thread, posted: list[Any]) -> None:
    """Start the feed's thread and wait (bounded) for its first post."""
    worker.start()
    for _ in range(500):
        if posted:
            return
        threading.Event().wait(0.01)


def test_the_feed_freezes_after_the_ui_took_its_first_rows_and_thaws_when_it_stops(spy: _Spy) -> None:
    feed = Feed([], follower=_OneChange(), preview_min_bytes=0, alerts=False)
    stop = threading.Event()
    posted: list[Any] = []
    worker = threading.Thread(target=feed.run, args=(stop, posted.append))
    try:
        _start(worker, posted)
        assert posted and spy.calls == []  # the rows are read, the tables not made yet
        assert feed.take() == {"r"}
        assert spy.calls == []  # the UI makes its tables of them now
        assert feed.take() == set()
        assert spy.calls == ["freeze"]  # made: what the watch holds is long-lived
        feed.take()
        assert spy.calls == ["freeze"]  # once
    finally:
        stop.set()
        worker.join(10)
    assert not worker.is_alive() and spy.calls == ["freeze", "unfreeze"]
    feed.take()  # (a take after the feed stopped freezes nothing)
    assert spy.calls == ["freeze", "unfreeze"]


def test_a_feed_that_does_not_run_never_freezes(spy: _Spy) -> None:
    feed = Feed([], follower=_OneChange(), preview_min_bytes=0, alerts=False)
    feed._post = lambda m: None
    for _ in range(3):
        feed._changed({"r"})
        feed.take()
    assert spy.calls == []


def test_a_feed_that_stops_while_the_ui_freezes_thaws_after(spy: _Spy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The feed's thread ends between the UI's take that decides to freeze and the freeze itself: the thaw still
    comes after the freeze (else the heap stays frozen for the rest of the process)."""
    feed = Feed([], follower=_OneChange(), preview_min_bytes=0, alerts=False)
    stop = threading.Event()
    posted: list[Any] = []
    worker = threading.Thread(target=feed.run, args=(stop, posted.append))
    real_lock, real_settle = feed._lock, heap.settle
    ending = threading.Event()  # the feed's thread, stopped, reached its end's look at the heap's state

    class Lock:
        def __enter__(self) -> None:
            if threading.current_thread() is worker and stop.is_set():
                ending.set()
            real_lock.acquire()

        def __exit__(self, *exc: object) -> None:
            real_lock.release()

    def settle() -> None:  # the feed's thread runs to its end (or waits there) just before the UI's freeze
        stop.set()
        assert ending.wait(10)
        worker.join(0.01 if real_lock.locked() else 10)
        real_settle()

    feed._lock = Lock()  # type: ignore[assignment]
    monkeypatch.setattr(heap, "settle", settle)
    try:
        _start(worker, posted)
        assert posted and feed.take() == {"r"}
        feed.take()  # (the freeze)
    finally:
        stop.set()
        worker.join(10)
    assert not worker.is_alive()
    assert spy.calls == ["freeze", "unfreeze"] and heap._holders == 0
