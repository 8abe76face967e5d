"""The sweep's index in the watch app (steptable.app.sweep): the runs found, their digests read by the index's own
thread, one IndexChanged posted until the UI has taken it, the status line, the metric columns a list starts with."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from steptable.app.sweep import IndexChanged, SweepIndex, default_metrics
from tests.app.sweephelpers import write_sweep


def test_the_index_thread_reads_every_run(tmp_path: Path) -> None:
    write_sweep(tmp_path, runs=5)
    index = SweepIndex([str(tmp_path)], period=0.05)
    assert index.discover() == 5
    assert index.line(time.time()).endswith("(reading 5 more)")  # nothing read yet: known by their files
    posted: list[Any] = []
    stop = threading.Event()
    index.drawn.set()
    worker = threading.Thread(target=index.run, args=(stop, posted.append), daemon=True)
    worker.start()
    deadline = time.monotonic() + 20
    while any(e.digest is None for e in index.entries()) and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    worker.join(10)
    assert not worker.is_alive()
    assert all(e.digest is not None for e in index.entries())
    assert posted and all(isinstance(m, IndexChanged) for m in posted)
    assert len(posted) <= 2  # the first post, then one more at most: the UI never took the first
    assert index.line(time.time()) == "5 runs: 3 live, 1 ended, 1 crashed; 1 with errors"
    assert default_metrics(index.entries()) == ["reward", "loss"]  # the ranking keys the runs log
    assert default_metrics(index.entries(), most=1) == ["reward"]
