"""steptable.ingest.readers.trackiotraces: a run's traces found through trackio's run-id index, on databases trackio
itself writes."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest

from steptable.ingest.readers import trackiotraces
from steptable.ingest.readers.trackiodb import connect as trackio_connect
from steptable.ingest.readers.trackiotraces import has_traces, trace_steps, traces_at
from tests.ingest.writers import run_writer

pytest.importorskip("trackio")

_PROJECT = """
    import trackio
    trackio.init(project="p", name="a")
    for s in (1, 2):
        trackio.log({{"loss": 1.0 / s, "val/gen": [trackio.Trace(messages=[{{"role": "user", "content": f"a{{s}}"}}],
                                                                 metadata={{"score": s}})]}}, step=s)
    trackio.finish()
    trackio.init(project="p", name="b")
    for s in range({other_steps}):
        trackio.log({{"loss": 1.0, "val/gen": [trackio.Trace(messages=[{{"role": "user", "content": "b" * 2000}}])
                                              for _ in range(4)]}}, step=s)
    trackio.finish()
"""


def _project(root: Path, other_steps: int) -> Path:
    """A trackio project of run ``a`` (a trace at steps 1 and 2) and run ``b`` (4 traces a step for
    ``other_steps`` steps)."""
    run_writer(_PROJECT.format(other_steps=other_steps), {"TRACKIO_DIR": str(root)}, timeout=300)
    return root / "p.db"


def _work(monkeypatch: pytest.MonkeyPatch, read: Callable[[], None]) -> int:
    """SQLite virtual-machine steps the reads of ``read()`` take (a count of work, the same on every machine)."""
    steps = [0]
    inner = trackio_connect

    @contextmanager
    def counted(db: Path) -> Iterator[sqlite3.Connection]:
        with inner(db) as con:
            con.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1) or 0, 1)
            yield con

    with monkeypatch.context() as m:
        m.setattr(trackiotraces, "connect", counted)
        read()
    return steps[0]


def test_a_runs_traces_are_read_without_reading_other_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether run ``a`` logged traces, at which steps, and one step's: the same work beside another run of 10 steps
    of traces as beside one of 200 (a read by name reads every run's traces: the viewer asks on its thread, and a
    project of long validation runs holds gigabytes of them)."""
    small, big = _project(tmp_path / "small", 10), _project(tmp_path / "big", 200)

    def reads(db: Path) -> None:
        assert has_traces(db, "a") and trace_steps(db, "a") == [1, 2]
        (trace,) = traces_at(db, "a", 2)
        assert trace.messages == [{"role": "user", "content": "a2"}] and trace.metadata == {"score": 2}

    work = {db: _work(monkeypatch, partial(reads, db)) for db in (small, big)}
    assert work[big] < 1.5 * work[small], work
    assert len(trace_steps(big, "b")) == 200 and len(traces_at(big, "b", 7)) == 4


def test_a_run_trackio_kept_no_configs_row_for_is_read_by_name(tmp_path: Path) -> None:
    """A database whose ``configs`` holds no row for the run (or no run ids: an older trackio) gives the same
    traces, found by the run's name."""
    db = _project(tmp_path, 3)
    with sqlite3.connect(db) as con:
        con.execute("DELETE FROM configs WHERE run_name = 'a'")
    con.close()
    assert has_traces(db, "a") and trace_steps(db, "a") == [1, 2]
    assert [t.messages for t in traces_at(db, "a", 1)] == [[{"role": "user", "content": "a1"}]]
    assert not has_traces(db, "nobody") and trace_steps(db, "nobody") == []
    with sqlite3.connect(db) as con:
        con.execute("ALTER TABLE configs RENAME COLUMN run_id TO id_of_run")
    con.close()
    assert trace_steps(db, "b") == [0, 1, 2] and len(traces_at(db, "b", 0)) == 4
