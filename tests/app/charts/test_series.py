"""The chart's data feed (steptable.app.charts.series): a run's column as a min/max pyramid on its x axis, NaN
flagged and absent rows empty, the smoothed series on demand, rows appended later taken without building again,
series dropped with their run."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.charts.series import EMA_WEIGHT, Feeds
from steptable.ingest import Follower
from tests.helpers import write_rows


def test_a_series_follows_its_run(tmp_path: Path) -> None:
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, [*({"step": s, "loss": float(s)} for s in range(3)), {"step": 3, "loss": float("nan")},
                      {"step": 4}])
    follower = Follower([tmp_path])
    follower.scan()
    (store,) = follower.stores.values()
    feeds = Feeds()
    s = feeds.get(store, "loss", "step", 3)
    assert len(s.raw) == 3 and s.smooth is None
    raw = s.raw
    s = feeds.get(store, "loss", "step", 100, smooth=True)  # rows past the store's are not there
    assert s.raw is raw and len(s.raw) == 5 and list(s.xs) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert [tuple(s.raw.range(i, i + 1)) for i in range(3)] == [(0.0, 0.0, False), (1.0, 1.0, False),
                                                                (2.0, 2.0, False)]
    assert s.raw.range(3, 4).bad and s.raw.range(4, 5).empty and not s.raw.range(4, 5).bad  # NaN; absent
    assert s.smooth is not None
    ema = [0.0, EMA_WEIGHT * 0.0 + (1 - EMA_WEIGHT) * 1.0]
    ema.append(EMA_WEIGHT * ema[1] + (1 - EMA_WEIGHT) * 2.0)
    assert [s.smooth.range(i, i + 1).lo for i in range(3)] == pytest.approx(ema)
    assert s.smooth.range(3, 4).lo == pytest.approx(ema[2])  # NaN skipped: the average so far
    with path.open("a") as f:
        f.write('{"step": 5, "loss": 10.0}\n')
    follower.scan()
    again = feeds.get(store, "loss", "step", len(store), smooth=True)
    assert again is s and s.raw is raw and len(s.raw) == 6 and s.raw.range(5, 6).hi == 10.0  # appended, not rebuilt
    assert s.smooth.range(5, 6).lo == pytest.approx(EMA_WEIGHT * ema[2] + (1 - EMA_WEIGHT) * 10.0)
    feeds.keep([store])
    assert len(feeds.items) == 1
    feeds.keep([])
    assert feeds.items == {}


def test_a_long_build_goes_to_a_thread_and_its_failure_is_said_after(tmp_path: Path) -> None:
    import threading

    from steptable.compare import XError

    write_rows(tmp_path / "r" / "metrics.jsonl", ({"step": s, "loss": float(s)} for s in range(50)))
    follower = Follower([tmp_path])
    follower.scan()
    (store,) = follower.stores.values()
    done = threading.Event()
    feeds = Feeds(done.set, background=10)
    assert feeds.ready(store, "loss", "step", 50) is None  # 50 rows > 10: built in a thread
    assert done.wait(10)
    s = feeds.ready(store, "loss", "step", 50)
    assert s is not None and len(s.raw) == 50 and s.raw.range(0, 50)[:2] == (0.0, 49.0)
    assert feeds.ready(store, "loss", "step", 50) is s  # nothing new: no thread
    done.clear()
    assert feeds.ready(store, "loss", "tokens", 50) is None
    assert done.wait(10)
    with pytest.raises(XError):  # the run has no token counts: said by the next call, not lost in the thread
        feeds.ready(store, "loss", "tokens", 50)
    assert Feeds(background=10).ready(store, "loss", "step", 50) is not None  # no callback: built right here


def test_a_run_without_the_x_axis_raises_on_every_call_not_only_the_first(tmp_path: Path) -> None:
    """A run with no token counts charted on tokens: the first call raised, the next (no row appended between: a
    redraw for another arm's row, a key) returned a series of no x and every value, drawn as nothing, and the chart
    stopped saying why it was empty."""
    from steptable.compare import XError

    write_rows(tmp_path / "r" / "metrics.jsonl", ({"step": s, "loss": float(s)} for s in range(5)))
    follower = Follower([tmp_path])
    follower.scan()
    (store,) = follower.stores.values()
    feeds = Feeds()
    for _ in range(3):
        with pytest.raises(XError):
            feeds.get(store, "loss", "tokens", 5)
        with pytest.raises(XError):
            feeds.ready(store, "loss", "tokens", 5)
