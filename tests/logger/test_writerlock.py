"""One writer per arm: a second live process writing the same arm of a run directory is told once (with the first's
pid) and writes on; another arm, a later process, or one after the holder was killed is not told."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from steptable.table import runinfo
from tests.helpers import readline_within, reap

pytestmark = pytest.mark.skipif(os.name != "posix", reason="flock")

ROOT = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent("""
    import sys
    from steptable.logger.steplogger import StepLogger
    run_dir, arm, first = sys.argv[1], sys.argv[2] or None, int(sys.argv[3])
    log = StepLogger(None, run_dir=run_dir, arm=arm, console=False)
    log.log({"step": first, "loss": 1.0})
    print("logging", flush=True)
    sys.stdin.readline()  # (held open until told to go on)
    for s in range(first + 1, first + 4):
        log.log({"step": s, "loss": 1.0})
    log.close()
""")


def start(run: Path, arm: str = "", first: int = 0) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-c", WRITER, str(run), arm, str(first)], cwd=ROOT, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    try:
        assert p.stdout is not None
        assert readline_within(p.stdout, 60) == "logging\n", p.stderr.read() if p.stderr else ""
    except BaseException:
        reap(p, 1)
        raise
    return p


def later_writer(run: Path) -> str:
    """The stderr of a writer of ``run``'s arm started now (its rows from step 100), run to its close."""
    p = start(run, first=100)
    try:
        return finish(p)
    finally:
        reap(p)


def finish(p: subprocess.Popen[str]) -> str:
    """Let ``p`` write its last rows and close; its stderr."""
    _, err = p.communicate("\n", timeout=60)
    assert p.returncode == 0, err
    return err


def test_a_second_live_writer_of_the_same_arm_is_told_once_and_writes_on(tmp_path: Path) -> None:
    a = start(tmp_path)
    try:
        b = start(tmp_path, first=100)
        try:
            err_b = finish(b)
        finally:
            reap(b)
        err_a = finish(a)
    finally:
        reap(a)
    assert err_b.count("writing this arm's rows") == 1 and f"process {a.pid} " in err_b, err_b
    assert "writing this arm's rows" not in err_a
    steps = [json.loads(x)["step"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert sorted(steps) == [0, 1, 2, 3, 100, 101, 102, 103]  # (both wrote on)


def test_other_arms_and_later_processes_are_not_two_writers(tmp_path: Path) -> None:
    a = start(tmp_path, "a")
    try:
        b = start(tmp_path, "b", first=100)
        try:
            err_b = finish(b)
        finally:
            reap(b)
        err_a = finish(a)
    finally:
        reap(a)
    c = start(tmp_path, "a", first=4)  # a resume after the first closed
    try:
        err_c = finish(c)
    finally:
        reap(c)
    assert "writing this arm's rows" not in err_a + err_b + err_c


def test_the_lock_of_a_killed_writer_is_no_lock(tmp_path: Path) -> None:
    a = start(tmp_path)
    try:
        assert (tmp_path / ".metrics.jsonl.lock").read_text().strip() == str(a.pid)
        a.send_signal(signal.SIGKILL)
        a.wait(30)
    finally:
        reap(a)
    assert "writing this arm's rows" not in later_writer(tmp_path)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_worker_does_not_hold_the_lock_past_close(tmp_path: Path) -> None:
    """A DataLoader worker forked while the logger holds its arm's lock inherits the lock's descriptor, and with it
    the flock: once the logger closes, the lock is free though the worker lives on, so a later writer of the arm
    (a resumed run) is not told of a second writer."""
    from steptable.logger.steplogger import StepLogger

    sl = StepLogger(None, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 1.0})
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: alive until told (its at-fork hooks ran before fork() returned here)
        try:
            os.close(go_w)
            os.write(ready_w, b"1")
            os.read(go_r, 1)
        finally:
            os._exit(0)
    os.close(go_r)
    os.close(ready_w)
    try:
        assert os.read(ready_r, 1) == b"1"
        sl.close()
        assert "writing this arm's rows" not in later_writer(tmp_path)
    finally:
        os.close(go_w)
        os.close(ready_r)
        os.waitpid(pid, 0)


def test_a_file_system_without_locks_is_no_check_not_a_second_writer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """NFS mounted without a lock daemon refuses every flock with ENOLCK ("No locks available"): nobody holds the
    lock, so nothing is said and the rows are not marked as a second writer's."""
    from steptable.logger import writerlock
    from steptable.logger.steplogger import StepLogger

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(writerlock.fcntl, "flock", no_locks)
    sl = StepLogger(None, run_dir=tmp_path, console=False, alerts=False)
    for s in range(3):
        sl.log({"step": s, "loss": 1.0})
    sl.close()
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2] and not any(runinfo.WRITER_KEY in r for r in rows)
    assert "writing this arm's rows" not in capsys.readouterr().err


def test_a_lock_file_replaced_between_its_open_and_its_lock_is_not_taken_for_the_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run directory cleaned and a new run started in it between a writer's open of the lock file and its flock:
    the flock the writer gets is on a file no other writer will ever look at, while the new run holds the lock at
    the path. The writer is told of that run, as it is when it finds the lock held."""
    from steptable.logger import writerlock

    jsonl = tmp_path / "metrics.jsonl"
    other = writerlock.WriterLock(jsonl, None)
    lock = writerlock.lock_path(jsonl, None)
    lock.write_text("")  # (a stale lock file of an earlier run)
    real_open = os.open
    replaced: list[bool] = []

    def open_then_replace(path: Any, *a: Any, **kw: Any) -> int:
        fd = real_open(path, *a, **kw)
        if Path(path) == lock and not replaced:
            replaced.append(True)
            lock.unlink()  # (the directory cleaned) and the new run takes the lock in it
            assert other.acquire() is None
        return fd

    monkeypatch.setattr(writerlock.os, "open", open_then_replace)
    mine = writerlock.WriterLock(jsonl, None)
    try:
        told = mine.acquire()
        assert told is not None and "writing this arm's rows" in told and not mine.held
    finally:
        mine.release()
        other.release()


def test_a_run_directory_deleted_and_made_again_by_a_second_run_is_two_writers(tmp_path: Path) -> None:
    """The run directory deleted under a live writer and a new run of the arm started in it: the new run finds the
    lock free (the first's went with the directory), and the first, finding its file deleted, goes on in the new
    run's file. The first takes the lock at the path again then: it is told of the new run, once, and its rows from
    there on are marked as a second writer's."""
    from steptable.logger import writer

    run = tmp_path / "run"
    a = start(run)
    try:
        shutil.rmtree(run)
        time.sleep(writer.CHECK_S)  # (a's next row checks its file)
        b = start(run, first=100)
        try:
            err_a = finish(a)
            err_b = finish(b)
        finally:
            reap(b)
    finally:
        reap(a)
    assert err_a.count("writing this arm's rows") == 1 and f"process {b.pid} " in err_a, err_a
    assert "writing this arm's rows" not in err_b
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert sorted(r["step"] for r in rows) == [1, 2, 3, 100, 101, 102, 103]
    # (the row that found the file deleted was written before the lock was looked at again)
    assert [r["step"] for r in rows if r.get(runinfo.WRITER_KEY) == a.pid] == [2, 3]
    assert not any(runinfo.WRITER_KEY in r for r in rows if r["step"] >= 100)


def test_two_loggers_of_one_process_on_one_arm_are_told_as_such(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Two StepLoggers of this process on one run directory: the notice named this process's own pid as "process N
    is writing ... too", which reads as a stranger; it says another StepLogger of this process."""
    from steptable import StepLogger

    first = StepLogger(run_dir=tmp_path, console=False, alerts=False)
    second = StepLogger(run_dir=tmp_path, console=False, alerts=False)
    first.log({"step": 0, "loss": 1.0})
    second.log({"step": 0, "loss": 2.0})
    first.close()
    second.close()
    err = capsys.readouterr().err
    assert f"another StepLogger of this process ({os.getpid()}) is writing this arm's rows" in err, err
