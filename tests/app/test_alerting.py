"""Review of the watch app's per-trainer groups and end alerts: the focused table's lit column is the one p pins and
the chart shows; a run's end alert is its newest event; a resumed run that dies again is told again; a run that
comes or grows keys detects only its own schema again."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import steptable.schemafiles.resolve
import steptable.schemas.registry
from steptable import Col, StepLogger
from steptable.app.alerting import AlertScanner
from steptable.app.messages import AlertsFound
from steptable.app.session import Session
from steptable.app.widgets.arm import ArmPanel
from steptable.app.widgets.panels import ChartPanel
from steptable.ingest import Follower
from tests.app.helpers import manual_app, sync
from tests.trainer_logs import write_tinker, write_verl

SIZE = (160, 44)
COLS = [Col("step", 5, "step", "d"), Col("loss", 7, "loss", ".3f"), Col("gn", 7, "gn", ".3f")]


def _keys(panel: ArmPanel) -> list[str]:
    return [c.key for c in panel.grid.cols]


def _two_trainers(root: Path) -> tuple[Any, Any]:
    """A verl run and a tinker run under ``root``, and the app (not started) with its follower."""
    write_verl(root / "verl" / "qwen.jsonl", steps=8)
    write_tinker(root / "tinker" / "llama", steps=8)
    app, follower, _ = manual_app(root, now=time.time())
    return app, follower


def _first_and_other(app: Any) -> tuple[ArmPanel, ArmPanel]:
    """The arm whose table has the picked column (and the focus, as the app starts), and the other trainer's."""
    a, b = app.query(ArmPanel)
    return (a, b) if app.session.selected in _keys(a) else (b, a)


@pytest.mark.anyio
async def test_p_and_the_chart_take_the_focused_tables_lit_column(tmp_path: Path) -> None:
    """Focused, the verl table lit its critic/score/mean, but p pinned tinker's progress/done_frac (the column
    picked last, in the other table) and the chart showed the tinker run."""
    app, follower = _two_trainers(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        first, other = _first_and_other(app)
        lit = other.grid.selected
        assert lit in _keys(other) and lit not in _keys(first)
        await pilot.press("c")
        chart = app.query_one(ChartPanel)
        other.grid.focus()  # (the chart open: it follows the focus, not only the next key)
        await pilot.pause()
        assert (app.session.selected, chart.key) == (lit, lit)
        assert [label for label, _, _ in chart.arms] == [other.label]
        await pilot.press("p")
        assert app.session.pins == [lit] and _keys(other)[1] == lit
        assert first.grid.selected in _keys(first)  # the first table keeps its own


@pytest.mark.anyio
@pytest.mark.parametrize("in_legend", [False, True])
async def test_hiding_the_arms_with_the_picked_column_moves_it_to_a_visible_table(
    tmp_path: Path, in_legend: bool
) -> None:
    """The tinker arm hidden, the chart said "pick a column" and showed no run beside the verl table's lit one
    (``in_legend``: the focus in the legend, not in the table hidden, so it stays there)."""
    app, follower = _two_trainers(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        first, other = _first_and_other(app)
        await pilot.press("c")
        if in_legend:
            await pilot.press("l")
            app.query_one("#legend-box").focus()
            await pilot.pause()
        await pilot.press(str(list(app.panels).index(first.run_id) + 1))  # hide the arm with the picked column
        await pilot.pause()
        chart = app.query_one(ChartPanel)
        assert chart.key == other.grid.selected and chart.key in _keys(other)
        assert [label for label, _, _ in chart.arms] == [other.label]
        assert not in_legend or app.focused is app.query_one("#legend-box")


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
    """The end alert was posted before the rows' alerts of the same scan: the status bar's newest three were the
    NaNs, and the crash hid behind them."""
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
    """Resumed from step 3, the run died at step 4 again, of the same exception: the app's alert said the first
    crash, and the count stayed 1."""
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


def _count(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_runs_arriving_one_by_one_are_each_detected_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run that came (or any run's keys growing) detected every run's schema again: 60 runs arriving one by
    one, 1,830 detections (3.6 s of the app's handlers against 1.9 s before groups)."""
    for i in range(8):
        write_verl(tmp_path / "sweep" / f"lr{i}.jsonl", steps=4, seed=i)
    write_tinker(tmp_path / "tinker" / "run", steps=4)
    detected = _count(monkeypatch, steptable.schemafiles.resolve, "detect")
    looked = _count(monkeypatch, steptable.schemafiles.resolve, "unused_files")
    fol = Follower([tmp_path])
    fol.scan()
    session = Session()
    made = 0
    for rid in sorted(fol.stores):
        before = [g.layout for g in session.groups]
        session.update(rid, fol.stores[rid])
        made += any(all(g.layout is not b for b in before) for g in session.groups)
    assert len(detected) == 9 and [g.schema.name for g in session.groups] == ["verl", "tinker"]
    # the steptable.toml files looked for once a layout made; not again for each arm that joins one as it is
    assert len(looked) == made < 9
    path = tmp_path / "sweep" / "lr0.jsonl"
    with open(path, "a") as f:
        f.write(json.dumps({"step": 5, "data": {"actor/new_metric": 1.0}}) + "\n")
    fol.scan()
    assert session.update("sweep/lr0.jsonl", fol.stores["sweep/lr0.jsonl"])  # a key more: that run only
    assert len(detected) == 10 and "actor/new_metric" in [c.key for c in session.columns("sweep/lr0.jsonl")[0]]


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
    assert [a.line() for m in posted for a in m.alerts] == ["E step 10 loss non-finite (nan) after 10 finite steps",
                                                           "E step 15 gn non-finite (nan) after 15 finite steps"]
