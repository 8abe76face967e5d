"""steptable.logger.backlog: the rows StepLogger.record wrote wait for their other work (view, dump row, column fit,
alerts) by the alert feed's rules; an alert is said when the feed would say it, and whatever reads that state
(the dump, table.txt, close, the interpreter's exit) sees every row."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger
from steptable.alerts.engine import AlertEngine
from steptable.logger import alertfeed, backlog
from tests.logger.helpers import SIGTERM_IN_A_READ, spike_said_at_exit


def _rows(n: int) -> list[dict[str, Any]]:
    rnd = random.Random(7)
    rows = [{"step": i, "loss": 0.5 + rnd.gauss(0, 0.01), "kl": 0.05 + rnd.gauss(0, 0.002), "n": i % 5}
            for i in range(n)]
    rows[100]["loss"] = 9.0  # a spike
    rows[150]["loss"] = math.nan
    rows[170]["kl"] = math.inf
    return rows


def _said(sl: StepLogger, monkeypatch: pytest.MonkeyPatch, rows: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """(the row whose record() said it, the alert line) for each alert of the run; close's at len(rows)."""
    said: list[tuple[int, str]] = []
    at = [0]
    monkeypatch.setattr(StepLogger, "_emit", lambda self, text, level="INFO": said.append((at[0], text))
                        if level != "INFO" else None)
    for i, row in enumerate(rows):
        at[0] = i
        sl.record(row)
    at[0] = len(rows)
    sl.close()
    return said


def test_recorded_rows_alerts_come_as_the_feed_says_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(300)
    said = _said(StepLogger(None, tmp_path, console=False), monkeypatch, rows)
    steps = {(i, int(text.split()[1])) for i, text in said if text.startswith("step ")}
    assert {150, 170} <= {s for _, s in steps} and 100 in {s for _, s in steps}
    for i, step in steps:
        assert step <= i < step + alertfeed.BATCH_ROWS or i == len(rows)
        if step in (150, 170):
            assert i == step  # a non-finite cell's alert at its own row


def test_a_slow_runs_recorded_alert_is_said_at_its_own_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(backlog, "monotonic", lambda: now[0])
    monkeypatch.setattr(alertfeed, "monotonic", lambda: now[0])
    rows = _rows(200)
    sl = StepLogger(None, tmp_path, console=False)
    said: list[tuple[int, str]] = []
    monkeypatch.setattr(StepLogger, "_emit", lambda self, text, level="INFO": said.append((int(now[0] // 300), text))
                        if level != "INFO" else None)
    for i, row in enumerate(rows):
        now[0] = 300.0 * i
        sl.record(row)
    assert [i for i, text in said if text.startswith("step 100 loss")] == [100]
    sl.close()


def test_the_dump_and_the_table_mid_run_see_every_recorded_row(tmp_path: Path) -> None:
    sl = StepLogger([Col("step", 5, "step", "d"), Col("name")], tmp_path, console=False)
    for i in range(9):
        sl.record({"step": i, "name": "x" * (i + 1)})
    assert sl.dump().splitlines()[-1].split()[0] == "8"  # (the last row, caught up)
    table = sl.write_table()
    assert table is not None and "xxxxxxxxx" in table.read_text()
    assert {c.key: c.width for c in sl.cols}["name"] >= 9  # (fitted to the widest value)
    sl.close()


def test_a_recorded_runs_last_alerts_are_said_when_the_script_exits_without_close(tmp_path: Path) -> None:
    assert spike_said_at_exit(tmp_path, "record", console=False) == 1


def _failing_at_step_3(run: Path, monkeypatch: pytest.MonkeyPatch) -> StepLogger:
    """A logger of step and loss whose work on the row of step 3 raises (a bug in the row's catch-up)."""
    real = backlog.kept

    def kept(view: dict[str, Any]) -> dict[str, Any]:
        if view.get("step") == 3:
            raise RuntimeError("a bug")
        return real(view)

    monkeypatch.setattr(backlog, "kept", kept)
    return StepLogger([Col("step", 5, "step", "d"), Col("loss", 7, "loss", "+.3f")], run, console=False,
                      dump_rows=100)


def test_a_row_that_fails_its_catch_up_leaves_the_later_rows_for_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row whose work raises costs that row's work only (reported once; training goes on): the rows after it
    are caught up at the next batch, and every row is in the JSONL."""
    sl = _failing_at_step_3(tmp_path, monkeypatch)
    for i in range(10):
        sl.record({"step": i, "loss": 0.5 if i != 3 else math.nan})  # (the NaN row catches up at once)
    sl.close()
    assert [r["step"] for r in sl._recent] == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 10


@pytest.mark.parametrize("cells", [{"big": 2**1100, "loss": 0.5}, {"a": 1e308, "b": 1e308}, {"n": 2**1100},
                                   {"note": "x", "loss": 0.5}, {"ok": True, "loss": 0.5}, {"loss": None}])
def test_odd_rows_are_recorded_without_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 cells: dict[str, Any]) -> None:
    """An int past float range beside a float (their sum raises), finite floats whose sum overflows, text, a bool,
    a None: each row is written, nothing is reported, and the rows after it are caught up as ever."""
    sl = StepLogger(None, tmp_path, console=False, dump_rows=100)
    for i in range(5):
        sl.record({"step": i, **cells})
    sl.close()
    assert "failed" not in capsys.readouterr().err and sl._lost == 0
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 5
    assert [r["step"] for r in sl._recent] == list(range(5))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("between", ["nothing", "dump"])
def test_rows_mixing_record_and_log_say_each_alert_at_the_row_the_feed_says_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, between: str) -> None:
    """record() and log() on one logger (and the dump read mid-run): each alert is said at the row where the alert
    feed, given every row as it came, says it: a row log() gave the feed does not wait for record()'s batch, and
    rows record() left waiting are batched by the time they came, not the time they were caught up."""
    now = [0.0]
    monkeypatch.setattr(backlog, "monotonic", lambda: now[0])
    monkeypatch.setattr(alertfeed, "monotonic", lambda: now[0])
    rows = _rows(300)
    rnd = random.Random(seed)
    shown = [rnd.random() < 0.3 for _ in rows]
    feed = alertfeed.AlertFeed(AlertEngine())
    want: list[tuple[int, str]] = []
    for i, row in enumerate(rows):
        now[0] = 0.05 * i  # (40 rows in BATCH_S: the feed's clock ends its batches)
        want += [(i, a.message_line()) for a in feed.add(i, row, 1000.0 + i)]
    want += [(len(rows), a.message_line()) for a in feed.drain()]
    said: list[tuple[int, str]] = []
    at = [0]
    monkeypatch.setattr(StepLogger, "_emit", lambda self, text, level="INFO": said.append((at[0], text))
                        if level != "INFO" else None)
    sl = StepLogger(None, tmp_path, console=False)
    for i, row in enumerate(rows):
        now[0] = 0.05 * i
        at[0] = i
        (sl.log if shown[i] else sl.record)(row)
        if between == "dump" and i % 25 == 24:
            sl.dump()
    at[0] = len(rows)
    sl.close()
    assert len(want) >= 3 and said == want


@pytest.mark.parametrize("read", ["legend", "dump", "write_table"])
def test_a_waiting_row_that_fails_its_catch_up_raises_nothing_from_what_reads_the_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], read: str) -> None:
    """legend(), dump() and write_table() mid-run catch up with the waiting rows: a row whose work raises there is
    reported once, as record() reports it, and never raised into the training loop."""
    sl = _failing_at_step_3(tmp_path, monkeypatch)
    for i in range(6):
        sl.record({"step": i, "loss": 0.5})  # (rows 1-5 wait: plain numbers, well inside the batch)
    getattr(sl, read)()
    assert "a bug" in capsys.readouterr().err
    sl.close()
    assert [r["step"] for r in sl._recent] == [0, 1, 2, 4, 5]


def _fed_logger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[StepLogger, list[int]]:
    """A logger of every row in its dump, and the steps its alert feed is given, in order."""
    sl = StepLogger([Col("step", 5, "step", "d"), Col("loss", 7, "loss", "+.3f")], tmp_path, console=False,
                    dump_rows=100)
    fed: list[int] = []
    add = alertfeed.AlertFeed.add
    monkeypatch.setattr(alertfeed.AlertFeed, "add", lambda self, step, row, *a: fed.append(step) or add(
        self, step, row, *a))
    return sl, fed


def test_the_dump_read_by_a_signal_handler_during_a_catch_up_leaves_the_rows_in_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A handler (SIGUSR1: print the dump) that runs while record() catches up reads the rows seen so far; it does
    not catch up with the later rows before the one in progress (the dump rows and the alert engine's rows stay in
    the run's order)."""
    real = backlog.kept
    dumps: list[str] = []

    def kept(view: dict[str, Any]) -> dict[str, Any]:
        if view.get("step") == 5 and not dumps:
            dumps.append(sl.dump())  # (as a signal handler would, between two of this row's steps)
        return real(view)

    monkeypatch.setattr(backlog, "kept", kept)
    sl, fed = _fed_logger(tmp_path, monkeypatch)
    for i in range(10):
        sl.record({"step": i, "loss": 0.5 if i < 9 else math.nan})  # (the NaN row catches up inside record())
    sl.close()
    assert dumps and [r["step"] for r in sl._recent] == list(range(10)) and fed == list(range(10))


@pytest.mark.parametrize("read", ["dump", "legend", "write_table"])
def test_a_row_a_signal_handler_logs_during_a_readers_catch_up_comes_after_the_waiting_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read: str) -> None:
    """A handler (SIGUSR1: log an event row) that runs while dump(), legend() or write_table() catches up with the
    rows record() left waiting: its row is logged after them (the dump rows and the alert engine's rows stay in the
    run's order, as a row logged from inside log() does)."""
    real = backlog.kept
    reading: list[bool] = []

    def kept(view: dict[str, Any]) -> dict[str, Any]:
        if view.get("step") == 2 and reading == [True]:
            reading.append(False)
            sl.record({"step": 100, "loss": 0.5})  # (as a signal handler would, between two of this row's steps)
        return real(view)

    monkeypatch.setattr(backlog, "kept", kept)
    sl, fed = _fed_logger(tmp_path, monkeypatch)
    for i in range(5):
        sl.record({"step": i, "loss": 0.5})  # (they wait for their batch)
    reading.append(True)
    getattr(sl, read)()
    sl.close()
    assert reading == [True, False]
    assert [r["step"] for r in sl._recent] == [0, 1, 2, 3, 4, 100] and fed == [0, 1, 2, 3, 4, 100]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_reading_the_dump_says_none_of_the_parents_waiting_alerts(tmp_path: Path) -> None:
    """A child forked while recorded rows wait for their batch (a spike among them), their time bound past, sees
    them in its dump and says no alert of them, closing or not: the parent says the spike, once."""
    script = textwrap.dedent(f"""
        import os, random, time
        from steptable import Col, StepLogger
        from steptable.logger import alertfeed
        StepLogger._emit = lambda self, text, level="INFO": print(level, text, flush=True)
        alertfeed.BATCH_S = 0.5  # (the batch's time bound, shorter: it is past when the child reads the dump)
        sl = StepLogger([Col("step", 5, "step", "d"), Col("loss", 7, "loss", "+.3f")], run_dir={str(tmp_path)!r},
                        console=False)
        rnd = random.Random(3)
        for step in range(50):
            sl.record({{"step": step, "loss": 9.0 if step == 45 else 0.5 + rnd.gauss(0, 0.01)}})
        time.sleep(0.6)
        pid = os.fork()
        if pid == 0:
            print("child dump", "49" in sl.dump(), flush=True)
            sl.close()
            os._exit(0)
        os.waitpid(pid, 0)
        sl.close()
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "child dump True" in proc.stdout
    assert sum("step 45 loss" in line for line in proc.stdout.splitlines()) == 1, proc.stdout


def test_a_signal_handlers_close_then_os_exit_describes_the_columns_fitted_to_the_waiting_rows(
        tmp_path: Path) -> None:
    """SIGTERM while a row is logged, its handler ``sl.close(); os._exit(0)``: the description written then gives
    the widths of the columns declared without one fitted to every row record() left waiting (as a close between
    rows does), not to the rows before them."""
    script = SIGTERM_IN_A_READ + textwrap.dedent(f"""
        from steptable import Col, StepLogger
        sl = StepLogger([Col("step"), Col("loss"), Col("kl")], run_dir={str(tmp_path)!r}, console=False)

        def on_term(signum, frame):
            sl.close()
            os._exit(0)

        signal.signal(signal.SIGTERM, on_term)
        for step in range(10):
            sl.record({{"step": step, "loss": 123456.789 if step == 6 else 0.5, "kl": 0.01}})
        sl.record({{"step": 10, "loss": Read(0.5), "kl": 0.01}})
        raise SystemExit(3)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    info = json.loads((tmp_path / "steptable.json").read_text())
    widths = {c["key"]: c["width"] for c in info["columns"]}
    assert info["closed"] is not None and widths["loss"] == len("123457") and widths["step"] == 4
