"""``summary``'s alert pass in worker processes (steptable.summary.alertpass): the same text as in one process on
runs whose keys change mid-file, resumed runs, NaN / inf / text cells, a divergence, a stall, directories of several
runs; a worker that dies or hangs costs time, never a result; no worker where forking is unsafe or does not pay."""

from __future__ import annotations

import math
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import forkgate
from steptable.summary import alertpass
from tests.alerts.helpers import random_history
from tests.helpers import run_cli, spy_forks, store_of, write_rows

Cap = pytest.CaptureFixture[str]


def _rows(seed: int, steps: list[int], diverge: int | None = None) -> list[dict[str, Any]]:
    """Rows whose keys change mid-file (reward and entropy arrive late, one key stops), with a text and a bool
    column, NaN and inf cells, a loss spike, an entropy collapse, a clock with a long pause; every column
    non-finite from ``diverge`` on."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for step in steps:
        r: dict[str, Any] = {"step": step, "ts": 1.7e9 + 10 * step + (5000 if step >= 300 else 0),
                             "loss": rng.gauss(1, 0.05) + (20 if step == 250 else 0),
                             "grad_norm": abs(rng.gauss(0.5, 0.05)), "tag": rng.choice(["code", "math"]),
                             "ok": step % 3 == 0}
        r["kl"] = math.nan if step % 97 == 5 else math.inf if step == 333 else abs(rng.gauss(0.05, 0.01))
        if step >= 100:
            r["reward"] = rng.gauss(0.5, 0.05)
            r["entropy"] = rng.gauss(1.0, 0.02) if step < 380 else 0.02
        if step < 150:
            r["early"] = rng.random()
        if diverge is not None and step >= diverge:
            r.update({k: math.nan for k in ("loss", "grad_norm", "kl", "reward", "entropy") if k in r})
        rows.append(r)
    return rows


def _runs(root: Path) -> dict[str, Path]:
    """A run, a resumed run (from step 200 again), a diverged run, and a directory of them with one more."""
    write_rows(root / "plain" / "metrics.jsonl", _rows(0, list(range(500))))
    write_rows(root / "resumed" / "metrics.jsonl", _rows(1, [*range(420), *range(200, 520)]))
    write_rows(root / "diverged" / "metrics.jsonl", _rows(2, list(range(500)), diverge=440))
    write_rows(root / "short" / "metrics.jsonl", _rows(3, list(range(30))))
    return {"plain": root / "plain", "resumed": root / "resumed", "diverged": root / "diverged", "all": root}


def _forks(monkeypatch: pytest.MonkeyPatch, workers: int) -> list[int]:
    """Force ``workers`` worker processes whatever the pass's size and the cores; the pids forked, in order."""
    monkeypatch.setattr(alertpass, "workers_for", lambda cells: workers)
    return spy_forks(monkeypatch)


def _summary(path: Path, capsys: Cap) -> tuple[int, str, str]:
    return run_cli(["summary", str(path)], capsys)


@pytest.mark.parametrize("workers", [1, 3])
def test_the_same_text_as_one_process(workers: int, tmp_path: Path, capsys: Cap,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(alertpass, "workers_for", lambda cells: 0)
        serial = {name: _summary(p, capsys) for name, p in runs.items()}
    pids = _forks(monkeypatch, workers)
    for name, p in runs.items():
        before = len(pids)
        assert _summary(p, capsys) == serial[name], name
        assert len(pids) > before, name  # (the workers ran: not one process against itself)
    said = "\n".join(out for _, out, _ in serial.values())
    for kind in ("spike", "collapse", "non-finite", "stalled", "resumed 200"):
        assert kind in said  # (alerts of every part, and the resume: not a comparison of empty alert lines)
    assert "also" in serial["diverged"][1]  # (a step's non-finite columns on one line, across parts)


def test_steps_that_do_not_only_go_up_are_scanned_whole_here(tmp_path: Path, capsys: Cap,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a run's steps only go up (what merging its parts asks) is read while the workers work; where they do
    not, its parts are dropped and the run scanned whole in this process: the same text."""
    runs = _runs(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(alertpass, "workers_for", lambda cells: 0)
        serial = {name: _summary(p, capsys) for name, p in runs.items()}
    _forks(monkeypatch, 1)
    monkeypatch.setattr(alertpass.parts, "increasing", lambda steps: False)
    parent, whole = os.getpid(), []
    real = alertpass._scan

    def scan(store: Any, keys: Any, clock: bool, now: Any, merge: bool = True, only: Any = None) -> Any:
        if os.getpid() == parent and merge and keys and only is None:
            whole.append(store.run)
        return real(store, keys, clock, now, merge, only)

    monkeypatch.setattr(alertpass, "_scan", scan)
    for name, p in runs.items():
        assert _summary(p, capsys) == serial[name], name
    assert len(whole) >= 4  # (each run of more than one row, scanned whole here)


def _dies_in_worker(monkeypatch: pytest.MonkeyPatch, act: Callable[[], None]) -> None:
    parent = os.getpid()
    real = alertpass.AlertsAhead._run

    def run(self: alertpass.AlertsAhead, t: int) -> list[Any]:
        if os.getpid() != parent:
            act()
        return real(self, t)

    monkeypatch.setattr(alertpass.AlertsAhead, "_run", run)


def test_a_worker_that_dies(tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(alertpass, "workers_for", lambda cells: 0)
        want = _summary(runs["all"], capsys)
    pids = _forks(monkeypatch, 2)
    _dies_in_worker(monkeypatch, lambda: os._exit(3))
    assert _summary(runs["all"], capsys) == want
    assert len(pids) == 2


def test_a_worker_that_hangs(tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(alertpass, "workers_for", lambda cells: 0)
        want = _summary(runs["all"], capsys)
    _forks(monkeypatch, 1)
    monkeypatch.setattr(forkgate, "WAIT_S", 0.5)
    _dies_in_worker(monkeypatch, lambda: time.sleep(60))
    t = time.monotonic()
    assert _summary(runs["all"], capsys) == want
    assert time.monotonic() - t < 30  # (killed at its deadline, not waited for)


def test_an_exception_in_this_process_ends_the_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from steptable.alerts.replaced import read_replaced
    from steptable.cli.reading import read_runs

    _, stores = read_runs([str(_runs(tmp_path)["all"])], open(os.devnull, "w"), read_replaced)
    pids = _forks(monkeypatch, 2)
    ahead = alertpass.AlertsAhead(stores, time.time())
    assert ahead.workers == 2 and len(pids) == 2
    ahead.close()  # (what `summary` does when its report fails before it reads the alerts)
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped: no process left behind


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="workers are forked")
def test_when_workers_are_started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    active_count = threading.active_count
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # (other tests' threads may still be winding down)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    loadavg = tmp_path / "loadavg"
    monkeypatch.setattr(forkgate, "LOADAVG", str(loadavg))
    loadavg.write_text("2.48 2.09 1.61 1/91 14359\n")  # (this process alone runnable)
    assert alertpass.workers_for(alertpass.MIN_CELLS) == 3
    assert alertpass.workers_for(alertpass.MIN_CELLS - 1) == 0  # a pass too small to pay for a fork
    loadavg.write_text("2.48 2.09 1.61 3/91 14359\n")  # two other processes running: two cores left
    assert alertpass.workers_for(alertpass.MIN_CELLS) == 1
    loadavg.write_text("2.48 2.09 1.61 5/91 14359\n")
    assert alertpass.workers_for(alertpass.MIN_CELLS) == 0
    loadavg.write_text("garbled")  # (or no such file: nothing known of other processes)
    assert alertpass.workers_for(alertpass.MIN_CELLS) == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert alertpass.workers_for(alertpass.MIN_CELLS) == alertpass.MAX_WORKERS
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert alertpass.workers_for(10 * alertpass.MIN_CELLS) == 0  # one core
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(threading, "active_count", active_count)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:  # another thread (the MCP server's): a fork could copy a lock it holds
        assert alertpass.workers_for(10 * alertpass.MIN_CELLS) == 0
    finally:
        stop.set()
        other.join()


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="workers are forked")
def test_no_worker_under_the_mcp_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCP server runs commands in threads: `summary` there stays one process, with the same text."""
    import io

    from steptable.cli.mcpcmd import run_argv

    path = _runs(tmp_path)["plain"]
    pids = spy_forks(monkeypatch)
    monkeypatch.setattr(alertpass, "MIN_CELLS", 0)  # (every pass big enough, every core free)
    monkeypatch.setattr(forkgate, "running_elsewhere", lambda: 0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    texts: list[str] = []

    def call() -> None:
        out = io.StringIO()
        run_argv(["summary", str(path)], out, io.StringIO())
        texts.append(out.getvalue())

    worker = threading.Thread(target=call)
    worker.start()
    worker.join()
    assert texts and "spike" in texts[0] and pids == []
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # (other tests' threads may still be winding down)
    call()  # the same command in this (main, single-threaded) process: workers, the same text
    assert len(pids) > 0 and texts[1] == texts[0]


def test_random_runs_with_workers_say_what_one_scan_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded random runs (steptable.alerts: noisy, flat, stepwise columns, an entropy that collapses and rises,
    NaN / inf / null cells, a divergence, clock pauses; steps that go back or repeat: resumes), read as ``summary``
    reads them, several to a pass: the alerts of a pass with workers are those of one scan a run in this process,
    in the same order."""
    stores = []
    for seed in range(24):
        steps, cols, walls = random_history(seed, steps_go_back=seed % 3 == 0)
        rows = [{"step": s, "ts": walls[i], **{k: c[i] for k, c in cols.items() if c[i] is not None or i % 2}}
                for i, s in enumerate(steps)]
        stores.append(store_of(tmp_path / f"run{seed}" / f"run{seed}.jsonl", rows))
    now = max(s.wall_times[-1] for s in stores) + 100.0
    with monkeypatch.context() as m:
        m.setattr(alertpass, "workers_for", lambda cells: 0)
        serial = alertpass.AlertsAhead(stores, now)
        want = {s.run: serial[s.run] for s in stores}
    pids = _forks(monkeypatch, 2)
    ahead = alertpass.AlertsAhead(stores, now)
    assert {s.run: ahead[s.run] for s in stores} == want
    assert len(pids) == 2 and len(want) == len(stores) and sum(map(len, want.values())) > 100
    assert any(s.resumes for s in stores)  # (steps that went back: resumes, scanned whole here)
