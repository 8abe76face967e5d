"""The watch's heap kept out of the collector's full passes (steptable.app.heap), and when the app's parts freeze it:
the feed at the UI's take after the one that gave it the first rows, undone when the feed stops."""

from __future__ import annotations

import gc
import threading
from typing import Any

from steptable.app import heap
from steptable.app.feed import Feed


def test_settle_freezes_until_its_last_release() -> None:
    assert gc.get_freeze_count() == 0
    keep = [[] for _ in range(10)]  # (tracked containers alive now)
    heap.settle()
    heap.settle()
    assert gc.get_freeze_count() >= len(keep)
    heap.release()
    assert gc.get_freeze_count() > 0  # one holder left
    heap.release()
    assert gc.get_freeze_count() == 0
    heap.release()  # (one too many: nothing to undo, no error)
    assert gc.get_freeze_count() == 0


class _OneChange:
    """A follower that reports one run changed, then waits for the stop."""

    stores: dict[str, Any] = {}  # noqa: RUF012

    def run(self, stop: threading.Event, on_change: Any) -> None:
        on_change({"r"})
        stop.wait(10)

    def scan(self) -> set[str]:
        return set()


def test_the_feed_freezes_after_the_ui_took_its_first_rows_and_thaws_when_it_stops() -> None:
    feed = Feed([], follower=_OneChange(), preview_min_bytes=0, alerts=False)
    stop = threading.Event()
    posted: list[Any] = []
    worker = threading.Thread(target=feed.run, args=(stop, posted.append))
    worker.start()
    try:
        for _ in range(500):
            if posted:
                break
            threading.Event().wait(0.01)
        assert posted and gc.get_freeze_count() == 0  # the rows are read, the tables not made yet
        assert feed.take() == {"r"}
        assert gc.get_freeze_count() == 0  # the UI makes its tables of them now
        assert feed.take() == set()
        assert gc.get_freeze_count() > 0  # made: what the watch holds is long-lived
    finally:
        stop.set()
        worker.join(10)
    assert not worker.is_alive() and gc.get_freeze_count() == 0
    feed.take()  # (a take after the feed stopped freezes nothing)
    assert gc.get_freeze_count() == 0
