"""One writer per arm: a second live process writing the same arm of a run directory is told once (with the first's
pid) and writes on; another arm, a later process, or one after the holder was killed is not told."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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
