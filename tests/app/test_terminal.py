"""``steptable watch`` ends when its terminal goes away: a real pty is closed under it 50 times (a tmux session
killed, a window closed) and each process must be gone within 2 s. Textual's writer thread blocked on the dead pty
in the shutdown's "put the terminal back" writes: processes hung for good, each holding memory and a watch on the
run directory."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import steptable
from steptable.app.terminal import HANGUP_CODE, _GuardedFile, gone
from tests.app.helpers import PtyWatch

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty") or sys.platform == "win32", reason="no ptys here")

ROOT = Path(steptable.__file__).resolve().parent.parent
EXIT_S = 2.0
TRIES = 50
AT_ONCE = 5  # (started together: the 50 tries take ten start-ups' time)
#: a session leader taking the pty as its controlling terminal (so closing it sends HUP), then the watch command
_CTTY = "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.executable, sys.argv[1:])"


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    with (run / "metrics.jsonl").open("w") as f:
        for i in range(300):
            f.write(json.dumps({"step": i, "loss": 1 / (i + 1), "reward": (i % 7) / 7, "grad_norm": 1 + i % 3}) + "\n")
    return tmp_path


class _Watch:
    """One ``steptable watch`` on a fresh pty. ``how``: "hup" (the pty is its controlling terminal: closing it sends
    HUP), "gone" (not its controlling terminal: no signal comes), "term" (no signal from the pty, then a TERM)."""

    def __init__(self, path: Path, how: str) -> None:
        self.how = how
        self.master, slave = os.openpty()
        os.set_inheritable(self.master, False)
        argv = [sys.executable, "-m", "steptable", "watch", str(path)]
        if how == "hup":
            argv = [sys.executable, "-c", _CTTY, *argv]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "32"}
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=path,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.seen = 0
        self.closed_at: float | None = None

    def read(self) -> None:
        try:
            self.seen += len(os.read(self.master, 65536))
        except OSError:
            self.seen = -1

    def close(self) -> None:
        os.close(self.master)
        self.closed_at = time.monotonic()
        if self.how == "term":
            self.proc.send_signal(signal.SIGTERM)


def _batch(path: Path, hows: list[str]) -> list[str]:
    """Start one watch per ``hows``, close each pty once its first screen is drawn (mid-draw: the app is still
    writing), and give each ``EXIT_S`` to end. The failures, in words."""
    watches = [_Watch(path, how) for how in hows]
    failures: list[str] = []
    try:
        deadline = time.monotonic() + 60
        waiting = list(watches)
        while waiting and time.monotonic() < deadline:
            ready, _, _ = select.select([w.master for w in waiting], [], [], 0.5)
            for w in [w for w in waiting if w.master in ready]:
                w.read()
                if w.seen >= 2000 or w.seen < 0:  # (the first frame is a few kB)
                    w.close()
                    waiting.remove(w)
        for w in waiting:
            failures.append(f"{w.how}: no screen drawn within 60 s (saw {w.seen} bytes)")
            w.close()
        for w in watches:
            assert w.closed_at is not None
            try:
                rc = w.proc.wait(timeout=max(0.0, w.closed_at + EXIT_S - time.monotonic()))
            except subprocess.TimeoutExpired:
                failures.append(f"{w.how}: still running {EXIT_S} s after its pty closed")
                continue
            expected = {HANGUP_CODE, 128 + signal.SIGTERM} if w.how == "term" else {HANGUP_CODE}
            if rc not in expected:
                failures.append(f"{w.how}: exit code {rc}, expected one of {sorted(expected)}")
    finally:
        for w in watches:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
    return failures


def test_watch_ends_within_2s_when_its_pty_closes_50_times_of_50(tmp_path: Path) -> None:
    """50 closes: 30 where the kernel sends HUP (tmux kill-session, a closed window), 10 where the pty is not the
    controlling terminal so no signal comes, 10 where a TERM follows the close."""
    path = _run_dir(tmp_path)
    hows = ["hup", "hup", "hup", "gone", "term"] * (TRIES // 5)
    failures: list[str] = []
    for start in range(0, TRIES, AT_ONCE):
        failures += _batch(path, hows[start:start + AT_ONCE])
    assert failures == [], f"{len(failures)} of {TRIES}: {failures}"


def test_a_live_pty_is_put_back_on_term(tmp_path: Path) -> None:
    """The guard drops nothing while the terminal is there: TERM on a live pty still leaves the alternate screen
    and shows the cursor (the writes that put the terminal back)."""
    w = PtyWatch(_run_dir(tmp_path), tmp_path)
    try:
        deadline = time.monotonic() + 60
        while len(w.out) < 2000 and time.monotonic() < deadline:
            w.read(0.5)
        w.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while w.proc.poll() is None and time.monotonic() < deadline:
            w.read(0.05)
        while w.read(0.05):
            pass
    finally:
        code = w.close()
    assert code == 128 + signal.SIGTERM
    assert b"\x1b[?1049h" in w.out
    tail = w.out[w.out.rindex(b"\x1b[?1049h"):]
    assert b"\x1b[?1049l" in tail and b"\x1b[?25h" in tail


class _Recorder:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.written: list[str] = []

    def write(self, text: str) -> int:
        self.written.append(text)
        return os.write(self.fd, text.encode())

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return self.fd


def test_nothing_is_written_to_a_pty_once_it_is_gone() -> None:
    """After the pty closes, the driver's writes are dropped before they reach the file (no write to a dead pty, and
    the writer never blocks nor dies), and the guard says the terminal is gone."""
    master, slave = os.openpty()
    try:
        rec = _Recorder(slave)
        guarded = _GuardedFile(rec, (slave,), threading.Event())  # type: ignore[arg-type]
        guarded.write("before")
        assert os.read(master, 100) == b"before" and not gone(slave)
        os.close(master)
        master = -1
        assert gone(slave)
        for _ in range(100):  # (more than Textual's queue holds)
            assert guarded.write("after") == len("after")
        guarded.flush()
        assert rec.written == ["before"] and guarded.gone.is_set()
    finally:
        if master >= 0:
            os.close(master)
        os.close(slave)


def test_a_write_that_fails_marks_the_terminal_gone() -> None:
    """A hangup between the check and the write (EIO) is taken as the terminal gone, not raised in the writer."""

    class Failing(_Recorder):
        def write(self, text: str) -> int:
            self.written.append(text)
            raise OSError(5, "Input/output error")

    master, slave = os.openpty()
    try:
        rec = Failing(slave)
        guarded = _GuardedFile(rec, (slave,), threading.Event())  # type: ignore[arg-type]
        guarded.write("x")
        guarded.write("y")
        assert rec.written == ["x"] and guarded.gone.is_set()
    finally:
        os.close(master)
        os.close(slave)
