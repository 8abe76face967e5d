"""steptable.app.alerting: the alert thread reads only the rows each run gains (from the resume point after a
resume), survives a failing run, and says each alert, crash and end of a run once, in order, whether or not it saw
the rows."""

from __future__ import annotations

import math
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger
from steptable.alerts.replaced import read_replaced
from steptable.app.alerting import AlertScanner
from steptable.app.messages import AlertsFound, FeedProblem
from steptable.app.session import Session
from steptable.ingest import Follower, Parsed
from tests.alerts.helpers import loss_rows, reward_rows, write_finished_run
from tests.app.helpers import app_rows, manual_app, scan_rounds, sync, write_rows
from tests.helpers import spy_whole_copies
from tests.logger.helpers import logged_run, raising

SIZE = (160, 44)
COLS = [Col("step", 5, "step", "d"), Col("loss", 7, "loss", ".3f"), Col("gn", 7, "gn", ".3f")]


def _crashed_run(run: Path) -> None:
    """NaNs at steps 10 and 15, then a RuntimeError after step 39."""
    with pytest.raises(RuntimeError), StepLogger(COLS, run_dir=run, console=False, alerts=False) as sl:
        for s in range(40):
            sl.log({"step": s, "loss": math.nan if s == 10 else 1 / (s + 1), "gn": math.nan if s == 15 else 1.0})
        raise RuntimeError("CUDA out of memory")


def _scan(root: Path, scans: int = 1) -> tuple[Session, list[str]]:
    """Every run scanned (each time by a new scanner: as after a reset, from the top); the alerts as the app takes
    them, and the lines posted, in order."""
    f = Follower([root])
    f.scan()
    posted: list[Any] = []
    for _ in range(scans):
        scanner = AlertScanner(lambda: f.stores, posted.append)
        for rid in sorted(f.stores):
            scanner.scan(rid, f.stores[rid])
    session = Session()
    for m in posted:
        assert isinstance(m, AlertsFound)
        session.add_alerts(m.run, m.alerts, m.closed)
    return session, [a.line() for m in posted for a in m.alerts]


def test_a_crash_is_the_newest_event_after_the_rows_alerts(tmp_path: Path) -> None:
    """The end alert comes after the rows' alerts of the same scan: the crash is the status bar's newest event,
    not hidden behind the NaNs."""
    _crashed_run(tmp_path / "crash")
    session, lines = _scan(tmp_path)
    assert lines[-1] == "E step 39 run ended with RuntimeError" and len(lines) == 3
    assert session.events(recent=1)[0].text == "step 39 run ended with RuntimeError"


def test_a_run_closed_after_its_rows_were_scanned_is_told_once(tmp_path: Path) -> None:
    f = Follower([tmp_path])
    sl = StepLogger(COLS, run_dir=tmp_path / "r", console=False, alerts=False)
    for s in range(5):
        sl.log({"step": s, "loss": 0.5, "gn": 1.0})
    f.scan()
    posted: list[Any] = []
    scanner = AlertScanner(lambda: f.stores, posted.append)
    (rid,) = f.stores
    assert scanner.scan(rid, f.stores[rid]) == []
    sl.__exit__(RuntimeError, RuntimeError("boom"), None)  # no new row: the scan has only the end to say
    f.scan()
    assert [a.line() for a in scanner.scan(rid, f.stores[rid])] == ["E step 4 run ended with RuntimeError"]
    assert scanner.scan(rid, f.stores[rid]) == []
    assert len(posted) == 1 and posted[0].closed is not None


@pytest.mark.anyio
async def test_a_resumed_run_that_dies_again_at_the_same_step_is_told_again(tmp_path: Path) -> None:
    """Resumed from step 3, the run dies at step 4 again, of the same exception: the app says the second crash
    too, and counts 2."""
    run = tmp_path / "crash"

    def crash(steps: range) -> None:
        with pytest.raises(RuntimeError), StepLogger(COLS, run_dir=run, console=False, alerts=False) as sl:
            for s in steps:
                sl.log({"step": s, "loss": 1 / (s + 1), "gn": 1.0})
            raise RuntimeError("CUDA out of memory")

    crash(range(5))
    app, follower, _ = manual_app(tmp_path, now=time.time())
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        assert app.session.counts == {"E": 1}
        crash(range(3, 5))
        await sync(pilot, follower)
        await sync(pilot, follower)
        assert app.session.counts == {"E": 2}
        assert [e.text for e in app.session.alerts] == ["step 4 run ended with RuntimeError"] * 2


def test_the_same_close_read_again_is_counted_once(tmp_path: Path) -> None:
    """A file read again from the top (a reset) says its end alert again, for the same close: counted once."""
    _crashed_run(tmp_path / "crash")
    session, lines = _scan(tmp_path, scans=2)
    assert len(lines) == 6 and session.counts == {"E": 3}


def test_a_scan_stopped_midway_does_not_say_how_the_run_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped after its first chunk (the app quitting), the scan says that chunk's alerts, not the run's end (it
    belongs after the rows not fed)."""
    import steptable.app.alerting as alerting

    _crashed_run(tmp_path / "crash")
    f = Follower([tmp_path])
    f.scan()
    posted: list[Any] = []
    (rid,) = f.stores
    monkeypatch.setattr(alerting, "CHUNK", 20)
    stop = threading.Event()
    stop.set()
    AlertScanner(lambda: f.stores, posted.append).scan(rid, f.stores[rid], stop)
    assert [a.line() for m in posted for a in m.alerts] == ["E step 10 loss non-finite (NaN) after 10 finite steps",
                                                           "E step 15 gn non-finite (NaN) after 15 finite steps"]


def test_the_app_after_a_restart_from_step_0_says_no_collapse(tmp_path: Path) -> None:
    path = write_finished_run(tmp_path)
    f = Follower([tmp_path])
    f.scan()
    posted: list[Any] = []
    scanner = AlertScanner(lambda: f.stores, posted.append)
    write_rows(path, [])

    def rounds() -> Any:
        yield set(f.stores)
        write_rows(path, reward_rows(range(30), 0.2, 2))
        f.scan()
        yield set(f.stores)

    scan_rounds(scanner, rounds())
    said = [a.line() for m in posted if isinstance(m, AlertsFound) for a in m.alerts]
    assert not any("collapse" in line for line in said), said


def test_the_alert_thread_reads_only_the_new_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, app_rows(0, 300))
    f = Follower([tmp_path])
    f.scan()
    posted: list[Any] = []
    scanner = AlertScanner(lambda: f.stores, posted.append)
    (rid,) = f.stores
    assert scanner.scan(rid, f.stores[rid]) == []
    whole = spy_whole_copies(monkeypatch)
    write_rows(path, app_rows(300, 303, loss=math.nan))
    f.scan()
    found = scanner.scan(rid, f.stores[rid])
    assert whole == []
    # the new rows, and only they, with their own steps: one non-finite alert at the first of them
    assert [(a.step, a.column, a.kind) for a in found] == [(300, "loss", "nonfinite")]
    write_rows(path, app_rows(303, 305))
    f.scan()
    assert scanner.scan(rid, f.stores[rid]) == [] and whole == []


def test_the_alert_thread_after_a_resume_feeds_from_the_resume_point(tmp_path: Path) -> None:
    """A resumed run rewrites steps already fed: those are fed again (with the ranged copies, the offsets must
    still point at the right rows)."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, app_rows(0, 200))
    f = Follower([tmp_path])
    f.scan()
    scanner = AlertScanner(lambda: f.stores, lambda m: None)
    (rid,) = f.stores
    scanner.scan(rid, f.stores[rid])
    write_rows(path, app_rows(150, 160, loss=math.inf))  # resumed from a checkpoint at 150, then diverged
    f.scan()
    found = scanner.scan(rid, f.stores[rid])
    assert [(a.step, a.kind) for a in found] == [(150, "nonfinite")]


def test_an_alert_found_again_after_a_reset_is_counted_once(tmp_path: Path) -> None:
    """A file read again from the top (moved away and back, rewritten with the same rows) gives the scanner the same
    alerts again: the session's counts and events list them once."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [*app_rows(0, 60), *app_rows(60, 61, loss=math.nan)])
    f = Follower([tmp_path])
    f.scan()
    (rid,) = f.stores
    session = Session()
    session.update(rid, f.stores[rid])
    for _ in range(2):
        scanner = AlertScanner(lambda: f.stores, lambda m: None)  # (a reset: the engine starts over)
        session.add_alerts(rid, scanner.scan(rid, f.stores[rid]))
    assert session.counts == {"E": 1} and len(session.alerts) == 1


def test_alert_scanner_feeds_edits_resumes_and_late_rows() -> None:
    """Rows inserted among the fed ones (one batch, out of order), merged cells, and two resumes between scans."""
    from steptable.alerts.engine import AlertEngine
    from steptable.app.alerting import AlertScanner
    from steptable.ingest.parsed import Parsed
    from steptable.ingest.store import RunStore

    def loss_rows(steps: list[int], bad: int | None = None, value: float = 1.0) -> Parsed:
        rows = [{"step": t, "loss": math.nan if t == bad else value} for t in steps]
        return Parsed(steps=steps, rows=rows)

    sc = AlertScanner(lambda: {}, lambda _: None)
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    s.add(loss_rows(list(range(0, 40, 2))), now=math.nan)
    assert sc.scan("r", s) == []
    s.add(loss_rows([37, 35, 33], bad=37), now=math.nan)  # a late writer, descending; 37 is a NaN
    assert [(a.step, a.kind) for a in sc.scan("r", s)] == [(37, "nonfinite")]
    replay = AlertEngine()
    assert [a.step for i in range(len(s)) for a in replay.update(s.step_at(i), {"loss": s.value(i, "loss")})] == [37]

    s2 = RunStore("r2", "/nonexistent/metrics.jsonl")
    s2.add(loss_rows(list(range(30))), now=math.nan)
    sc.scan("r2", s2)
    s2.add(loss_rows(list(range(20, 26)), bad=22), now=math.nan)  # resumed at 20 (NaN at 22) ...
    s2.add(loss_rows(list(range(24, 30))), now=math.nan)  # ... and at 24, before the next scan
    assert [(a.step, a.kind) for a in sc.scan("r2", s2)] == [(22, "nonfinite")]


def test_the_alert_thread_survives_a_failing_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from steptable.alerts.engine import AlertEngine

    update = AlertEngine.update

    def boom(self: AlertEngine, step: int, row: dict[str, Any], wall_time: float | None = None) -> Any:
        if step >= 1000:  # run "bad" only
            raise ZeroDivisionError("detector bug")
        return update(self, step, row, wall_time)

    monkeypatch.setattr(AlertEngine, "update", boom)
    write_rows(tmp_path / "bad" / "metrics.jsonl", [{"step": 1000 + s, "loss": 1.0} for s in range(5)])
    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(5)])
    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": 5, "loss": None}])  # a logged NaN: an alert
    f = Follower([tmp_path])
    posted: list[Any] = []
    scanner = AlertScanner(lambda: f.stores, posted.append)
    (bad,) = [r for r in f.scan() if "bad" in r]
    # its next rows (the second round): the engine starts over, fails again, is not told again
    assert scan_rounds(scanner, [set(f.stores), {bad}])
    problems = [m.text for m in posted if isinstance(m, FeedProblem)]
    assert len(problems) == 1 and bad in problems[0] and "ZeroDivisionError: detector bug" in problems[0]
    assert any(isinstance(m, AlertsFound) and "good" in m.run for m in posted)
    assert bad not in scanner._engines


def test_the_watch_app_says_how_a_run_ended_and_alerts_a_crash(tmp_path: Path) -> None:
    from steptable.app.alerting import AlertScanner
    from steptable.app.messages import AlertsFound
    from steptable.ingest import Follower
    from tests.app.helpers import scan_rounds

    with pytest.raises(RuntimeError):
        logged_run(tmp_path / "crash", raising(RuntimeError("CUDA out of memory")), rows=12)
    logged_run(tmp_path / "ok", None, rows=12)
    f = Follower([tmp_path])
    f.scan()
    posted: list[Any] = []
    scan_rounds(AlertScanner(lambda: f.stores, posted.append), [set(f.stores), set(f.stores)])  # again: said once
    ends = [(m.run, a.line()) for m in posted if isinstance(m, AlertsFound) for a in m.alerts if a.kind == "ended"]
    assert [line for _, line in ends] == ["E step 11 run ended with RuntimeError"] and "crash" in ends[0][0]


def test_the_app_says_them_once_whether_or_not_it_saw_the_rows(tmp_path: Path) -> None:
    from steptable.app.alerting import AlertScanner

    rng = random.Random(2)
    crashed, again = loss_rows(range(1100), rng, nan_from=1090), loss_rows(range(1000, 1150), rng)
    # opened after the restart: the replaced rows' alert, said once
    write_rows(tmp_path / "late" / "r" / "metrics.jsonl", crashed + again)
    f = Follower([tmp_path / "late"], on_resume=read_replaced)
    f.scan()
    scanner = AlertScanner(lambda: f.stores, lambda m: None)
    (rid,) = f.stores
    found = scanner.scan(rid, f.stores[rid])
    assert [(a.level, a.step, a.kind) for a in found] == [("E", 1090, "nonfinite")]
    assert "replaced" in found[0].message and scanner.scan(rid, f.stores[rid]) == []
    # open while the run crashed: said when the rows came, not again at the restart
    path = tmp_path / "live" / "r" / "metrics.jsonl"
    write_rows(path, crashed)
    f = Follower([tmp_path / "live"], on_resume=read_replaced)
    f.scan()
    scanner = AlertScanner(lambda: f.stores, lambda m: None)
    (rid,) = f.stores
    assert [(a.step, a.kind) for a in scanner.scan(rid, f.stores[rid])] == [(1090, "nonfinite")]
    write_rows(path, again)
    f.scan()
    assert scanner.scan(rid, f.stores[rid]) == []


def test_the_alert_scan_waits_between_chunks_while_the_user_acts() -> None:
    import threading

    from steptable.app.alerting import CHUNK, AlertScanner
    from steptable.ingest.parsed import Parsed
    from steptable.ingest.store import RunStore

    n = 3 * CHUNK
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    rows = [{"step": t, "loss": math.nan if t == n - 1 else 1.0 + 0.01 * (t % 7)} for t in range(n)]
    s.add(Parsed(steps=list(range(n)), rows=rows), now=math.nan)
    posted: list[Any] = []
    sc = AlertScanner(lambda: {"r": s}, posted.append)
    stop = threading.Event()
    sc.defer(60.0)  # a key was pressed
    th = threading.Thread(target=sc.run, args=(stop,), daemon=True)
    th.start()
    try:
        sc.changed({"r"})
        assert not sc.idle.wait(0.5)  # the first chunk, then it waits
        assert sc._engines["r"].last == CHUNK - 1 and posted == []
        sc.defer(0.0)  # the user stopped acting: the rest is scanned
        assert sc.idle.wait(60)
        assert [a.step for m in posted for a in m.alerts] == [n - 1]
    finally:
        stop.set()
        th.join(5)


@pytest.mark.anyio
async def test_watch_says_a_crash_before_a_resume_once(tmp_path: Path) -> None:
    """A process that died of an error, then one resumed from step 40 that ended well: the watch says the crash at
    the resume (the resumed process's description holds it), once, however many passes read the run."""
    from tests.cli.test_resume import _attempt

    _attempt(tmp_path / "a", range(0, 50), crash=True)
    _attempt(tmp_path / "a", range(40, 60), crash=False)
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test() as pilot:
        await sync(pilot, follower)
        await sync(pilot, follower)
        said = [e for e in app.session.alerts if "resumed at this step" in e.text]
        assert [(e.level, e.step) for e in said] == [("E", 40)], [e.line() for e in app.session.alerts]
