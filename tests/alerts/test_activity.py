"""A run that stopped writing: stalled (an alert) only where something says it still runs, else idle since then."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from steptable import Col, StepLogger
from steptable.alerts.activity import IDLE, LIVE, STALLED, store_activity
from steptable.ingest import Follower
from tests.helpers import run_cli, write_rows


def _quiet_run(path: Path, rows: int, quiet_s: float, step_s: float = 1.0) -> None:
    """A finished run of another trainer: ``rows`` rows ``step_s`` apart, the last one ``quiet_s`` ago."""
    last = time.time() - quiet_s
    write_rows(path, [{"step": s, "ts": last - step_s * (rows - 1 - s), "loss": 0.5} for s in range(rows)])
    os.utime(path, (last, last))


def _stores(root: Path) -> dict[str, object]:
    f = Follower([root])
    f.scan()
    return dict(f.stores)


def test_a_directory_of_long_finished_runs_is_idle_not_stalled(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    for i in range(30):
        _quiet_run(tmp_path / f"r{i}" / "metrics.jsonl", rows=40, quiet_s=3 * 3600)
    now = time.time()
    assert {store_activity(s, now).state for s in _stores(tmp_path).values()} == {IDLE}
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)  # (a sweep: its ranking, each run's state)
    assert rc == 0 and out.startswith("30 runs: 30 idle\n") and "stalled" not in out, out
    rc, out, _ = run_cli(["summary", str(tmp_path), "--all"], capsys)
    assert rc == 0 and "stalled" not in out and "idle since" in out, out
    header = next(line for line in out.splitlines() if "idle since" in line)  # arms in one state share one line
    assert all(f": r{i}," in header or f": r{i}:" in header for i in range(30)), header
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and "stalled" not in out, out


def test_a_two_row_run_quiet_for_hours_is_called_idle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _quiet_run(tmp_path / "short" / "metrics.jsonl", rows=2, quiet_s=3 * 3600)
    (store,) = _stores(tmp_path).values()
    assert store_activity(store, time.time()).state == IDLE  # (too few rows for an interval: not nothing)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "idle since" in out, out


def test_a_steplogger_run_whose_log_still_grows_is_stalled(tmp_path: Path) -> None:
    run = tmp_path / "run"
    sl = StepLogger([Col("step", 5, "step", "d"), Col("loss", 6, "loss")], run_dir=run, console=False, alerts=False)
    last = time.time() - 2 * 3600  # its rows stopped two hours ago; it was never closed
    for s in range(20):
        sl.log({"step": s, "loss": 0.5, "ts": last - (19 - s)})
    for f in run.iterdir():  # the process hangs: no close, no end marker; its own files as they were then
        os.utime(f, (last, last))
    (run / "train.log").write_text("still printing: data loader retry\n")  # written now, beside the rows
    (store,) = _stores(tmp_path).values()
    assert store_activity(store, time.time()).state == STALLED
    (run / "train.log").unlink()  # nothing says it still runs: idle since its last row
    assert store_activity(store, time.time()).state == IDLE


def test_a_run_written_within_its_threshold_is_live(tmp_path: Path) -> None:
    _quiet_run(tmp_path / "r" / "metrics.jsonl", rows=40, quiet_s=5)
    (store,) = _stores(tmp_path).values()
    assert store_activity(store, time.time()).state == LIVE
