"""How ``steptable tail -f`` ends: stop signals however many and whenever, a reader that left, a closed pipe.
Real subprocesses and real signals: each test waits for a line the command prints before signalling it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

from tests.cli.helpers import STOP_SIGNALS, finish, start_follow
from tests.helpers import write_rows
from tests.ingest.helpers import loss_line

NAN = float("nan")


def _stop(p: subprocess.Popen[str], sig: int, barrage: bool) -> None:
    """Two signals back to back, or (barrage) one after another until the process has ended."""
    p.send_signal(sig)
    p.send_signal(sig)
    while barrage and p.poll() is None:
        p.send_signal(sig)  # (a no-op once it has ended)


def _read_into(stream: IO[str], into: list[str]) -> None:
    into.append(stream.read())


def _nan_run(root: Path) -> Path:
    path = root / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": NAN if s == 3 else 1.0} for s in range(5)])
    return path


@pytest.mark.parametrize("name", STOP_SIGNALS)
def test_stop_signals_however_many_keep_the_alert_status(tmp_path: Path, name: str) -> None:
    """coreutils `timeout` sends TERM to the child and then to its process group, and users press Ctrl-C twice: the
    status stays 1 after an error alert (not 143, nor a death by SIGINT or HUP). Two signals as `timeout` sends
    them, and signals sent without a pause until the process is gone: later ones land at every point of the ending
    (in its cleanup, after the command returned)."""
    sig = getattr(signal, name)
    _nan_run(tmp_path)
    for barrage in (False, True, False, True, True, True):
        p = start_follow("--alerts-only", str(tmp_path))
        assert p.stdout is not None
        line = p.stdout.readline()  # the alert: the watch is up
        _stop(p, sig, barrage)
        _, err = finish(p)
        assert "step 3 loss non-finite" in line, (line, err)
        assert p.returncode == 1 and "Traceback" not in err and "Exception" not in err, (name, barrage, err)


def test_a_stop_while_rows_are_printed_keeps_the_status_and_whole_lines(tmp_path: Path) -> None:
    """TERM after TERM while the first view of a long run is being written: status 0, no traceback, and the output ends
    on a whole row (the stop is not an exception raised wherever the main thread is, mid-line included)."""
    path = tmp_path / "long" / "metrics.jsonl"
    path.parent.mkdir()
    with open(path, "w") as f:
        f.writelines(f'{{"step": {s}, "loss": 0.5, "reward": {s}}}\n' for s in range(100_000))
    for _ in range(3):
        p = start_follow("-n", "0", "--format", "jsonl", str(tmp_path))
        assert p.stdout is not None and p.stderr is not None
        first = p.stdout.readline()  # printing has begun
        rest: list[str] = []
        reader = threading.Thread(target=_read_into, args=(p.stdout, rest))  # a reader keeping up, as a pipe has
        reader.start()
        _stop(p, signal.SIGTERM, barrage=True)
        reader.join()
        err = p.stderr.read()
        assert p.returncode == 0 and "Traceback" not in err and "Fatal" not in err, (p.returncode, err)
        lines = (first + "".join(rest)).splitlines(keepends=True)
        steps = [json.loads(x)["step"] for x in lines]  # every line a whole row
        assert lines[-1].endswith("\n") and steps == list(range(len(steps)))


def test_a_reader_that_left_ends_the_watch_with_the_alert_status(tmp_path: Path) -> None:
    """`steptable tail -f --alerts-only | head -1`: the next alert finds the pipe closed; the watch ends quietly and
    still says that an error alert fired (status 1, not 0)."""
    path = _nan_run(tmp_path)
    p = start_follow("--alerts-only", str(tmp_path))
    assert p.stdout is not None and p.stderr is not None
    line = p.stdout.readline()
    p.stdout.close()  # the reader leaves
    write_rows(path, [{"step": s, "loss": 1.0, "grad_norm": NAN} for s in range(5, 8)])  # another alert to write
    rc = p.wait(timeout=60)
    err = p.stderr.read()
    assert "step 3 loss non-finite" in line
    assert rc == 1 and "Traceback" not in err and "Exception" not in err, (rc, err)


def test_follow_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    # `steptable tail -f logs/ | head`: the write that hits the closed pipe happens in the follower thread; it died
    # with a traceback after a bogus "file notification failed (BrokenPipeError)" note.
    import subprocess
    import sys

    path = tmp_path / "arm" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(loss_line(i) for i in range(3)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "steptable", "tail", "-f", "--poll", "0.05", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        for _ in range(4):  # the header and three rows: the first emit (in the main thread) is done
            proc.stdout.readline()
        time.sleep(0.5)
        proc.stdout.close()
        for i in range(3, 60):
            with open(path, "ab") as fh:
                fh.write(loss_line(i) * 50)
            time.sleep(0.05)
            if proc.poll() is not None:
                break
        rc = proc.wait(timeout=15)
    finally:
        proc.kill()
    err = proc.stderr.read().decode()
    assert "Traceback" not in err and "notification failed" not in err, err
    assert rc == 0


def test_sigterm_ends_follow_with_the_alert_status(tmp_path: Path) -> None:
    import signal

    write_rows(
        tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": float("nan") if s == 3 else 1.0} for s in range(5)]
    )
    p = subprocess.Popen(
        [sys.executable, "-m", "steptable", "tail", "-f", "--alerts-only", "--poll", "0.05", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert p.stdout is not None
    line = p.stdout.readline()  # the alert: the follower is up
    p.send_signal(signal.SIGTERM)
    rest, err = p.communicate(timeout=20)
    assert "step 3 loss non-finite" in line and p.returncode == 1, (line, rest, err)
