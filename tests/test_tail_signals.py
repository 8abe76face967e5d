"""`steptable tail -f`: how a watch ends (stop signals however many and whenever, a reader that left, nothing ever
readable) and what it prints of a run that appears while it follows. Real subprocesses and real signals: each test
waits for a line the command printed, then acts; none waits for a time."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest

from steptable.cli.main import _parser
from steptable.cli.tailout import Tail
from steptable.ingest import Follower
from tests.helpers import write_rows

NAN = float("nan")
STOP_SIGNALS = [s for s in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, s)]


def _default_signals() -> None:
    """In the child before exec: a test run under nohup or as a background job must still test the handlers (a
    signal ignored at the start stays ignored, on purpose)."""
    for name in STOP_SIGNALS:
        signal.signal(getattr(signal, name), signal.SIG_DFL)


def _start(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "steptable", "tail", "-f", "--poll", "0.05", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=_default_signals,
    )  # fmt: skip


def _stop(p: subprocess.Popen[str], sig: int, barrage: bool) -> None:
    """Two signals back to back, or (barrage) one after another until the process has ended."""
    p.send_signal(sig)
    p.send_signal(sig)
    while barrage and p.poll() is None:
        p.send_signal(sig)  # (a no-op once it has ended)


def _read_into(stream: IO[str], into: list[str]) -> None:
    into.append(stream.read())


def _finish(p: subprocess.Popen[str]) -> tuple[str, str]:
    """The rest of stdout and stderr, then the exit. (Not communicate(): it reads the pipes underneath the text
    streams, and would miss what a readline() already took into their buffers.)"""
    assert p.stdout is not None and p.stderr is not None
    out = p.stdout.read()
    err = p.stderr.read()  # (a few lines: it cannot fill the pipe while stdout is read)
    p.wait(timeout=60)
    return out, err


def _nan_run(root: Path) -> Path:
    path = root / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": NAN if s == 3 else 1.0} for s in range(5)])
    return path


@pytest.mark.parametrize("name", STOP_SIGNALS)
def test_stop_signals_however_many_keep_the_alert_status(tmp_path: Path, name: str) -> None:
    """coreutils `timeout` sends TERM to the child and then to its process group, and users press Ctrl-C twice: the
    status stays 1 after an error alert (it was 143, or a death by SIGINT, about a third of the time; HUP killed
    it). Two signals as `timeout` sends them, and signals sent without a pause until the process is gone: later
    ones land at every point of the ending (in its cleanup, after the command returned)."""
    sig = getattr(signal, name)
    _nan_run(tmp_path)
    for barrage in (False, True, False, True, True, True):
        p = _start("--alerts-only", str(tmp_path))
        assert p.stdout is not None
        line = p.stdout.readline()  # the alert: the watch is up
        _stop(p, sig, barrage)
        _, err = _finish(p)
        assert "step 3 loss non-finite" in line, (line, err)
        assert p.returncode == 1 and "Traceback" not in err and "Exception" not in err, (name, barrage, err)


def test_a_stop_while_rows_are_printed_keeps_the_status_and_whole_lines(tmp_path: Path) -> None:
    """TERM after TERM while the first view of a long run is being written: status 0, no traceback, and the output ends
    on a whole row (the stop was an exception raised wherever the main thread was, mid-line included)."""
    path = tmp_path / "long" / "metrics.jsonl"
    path.parent.mkdir()
    with open(path, "w") as f:
        f.writelines(f'{{"step": {s}, "loss": 0.5, "reward": {s}}}\n' for s in range(100_000))
    for _ in range(3):
        p = _start("-n", "0", "--format", "jsonl", str(tmp_path))
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
    still says that an error alert fired (it said 0)."""
    path = _nan_run(tmp_path)
    p = _start("--alerts-only", str(tmp_path))
    assert p.stdout is not None and p.stderr is not None
    line = p.stdout.readline()
    p.stdout.close()  # the reader leaves
    write_rows(path, [{"step": s, "loss": 1.0, "grad_norm": NAN} for s in range(5, 8)])  # another alert to write
    rc = p.wait(timeout=60)
    err = p.stderr.read()
    assert "step 3 loss non-finite" in line
    assert rc == 1 and "Traceback" not in err and "Exception" not in err, (rc, err)


def test_a_watch_of_nothing_readable_ends_with_status_2(tmp_path: Path) -> None:
    """As the one-shot read says: lines that are not metrics must not pass a CI gate as "no alerts" (it was 0)."""
    bad = tmp_path / "bad" / "metrics.jsonl"
    bad.parent.mkdir()
    bad.write_text('hello world\nnot json\n{"a": \n')
    p = _start("--alerts-only", str(bad))
    assert p.stderr is not None
    first = p.stderr.readline()  # the first bad line: the file was read
    p.send_signal(signal.SIGTERM)
    _, err = _finish(p)
    assert "malformed" in first
    assert p.returncode == 2 and f"no readable rows in {bad}" in err, (p.returncode, err)


def test_a_watch_that_never_found_a_run_ends_with_status_2(tmp_path: Path) -> None:
    """Waiting for a run is what -f is for, but a watch that ends without one says so, as the one-shot read does."""
    runs = tmp_path / "runs"
    p = _start("--alerts-only", str(runs))
    assert p.stderr is not None
    assert "no such path (yet)" in p.stderr.readline()  # the handlers are set before this line
    runs.mkdir()  # there now, but no run appears in it
    p.send_signal(signal.SIGTERM)
    _, err = _finish(p)
    assert p.returncode == 2 and f"no metrics files found under {runs}" in err, (p.returncode, err)


def test_a_watch_of_a_file_that_never_got_a_row_ends_with_status_2(tmp_path: Path) -> None:
    """A trainer that made its metrics file and hung before the first row: a watch that ends then checked nothing
    (2), where a one-shot read takes it for a run just started (0, "no rows yet")."""
    from steptable.cli.tail import _status

    empty = tmp_path / "run" / "metrics.jsonl"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    for live, status, said in ((True, 2, "no rows in"), (False, 0, "no rows yet in")):
        argv = ["tail", *(["-f"] if live else []), str(empty)]
        args = _parser().parse_args(argv)
        follower, err = Follower(args.paths), io.StringIO()
        tail = Tail(args, io.StringIO(), err)
        follower.scan()
        tail.emit(follower)
        assert _status(args, follower, tail, err, live=live) == status and f"{said} {empty}" in err.getvalue()


def test_a_run_that_appears_while_following_is_printed_whole_and_the_watch_ends_with_0(tmp_path: Path) -> None:
    """A directory not there at the start; a run of 30 rows appears in it at once, after the first view of a run
    that was there: all 30 are printed (-n 5 is for the runs there at the start; it printed steps 25-29), and
    stopping then is a success."""
    write_rows(tmp_path / "old" / "metrics.jsonl", [{"step": s, "reward": 0.5} for s in range(10)])
    runs = tmp_path / "runs"
    p = _start("-n", "5", "--format", "jsonl", str(tmp_path / "old"), str(runs))
    assert p.stdout is not None
    first = [json.loads(p.stdout.readline())["step"] for _ in range(5)]  # the first view is printed
    staged = tmp_path / "staged"
    write_rows(staged / "late" / "metrics.jsonl", [{"step": s, "reward": 0.5} for s in range(30)])
    os.replace(staged, runs)  # the whole run at once: no partial read can explain a missing row
    steps: list[int] = []
    while not steps or steps[-1] != 29:  # the last row is printed either way: no wait that could hang
        row = json.loads(p.stdout.readline())
        assert row["arm"] == "late", row
        steps.append(row["step"])
    p.send_signal(signal.SIGTERM)
    _, err = _finish(p)
    assert first == [5, 6, 7, 8, 9] and steps == list(range(30))
    assert p.returncode == 0 and "Traceback" not in err, (p.returncode, err)


@pytest.mark.parametrize("fmt", ["text", "jsonl", "csv", "md"])
def test_a_run_found_after_the_start_is_printed_from_its_first_row(tmp_path: Path, fmt: str) -> None:
    """-n is the first view of the runs there at the start; a run found later is new output in full, in every
    format."""
    write_rows(tmp_path / "old" / "metrics.jsonl", [{"step": s, "reward": 5000 + s, "loss": 0.25} for s in range(50)])
    out = io.StringIO()
    follower = Follower([tmp_path])
    tail = Tail(_parser().parse_args(["tail", "-f", "-n", "5", "--format", fmt, str(tmp_path)]), out, io.StringIO())
    follower.scan()
    tail.emit(follower)
    first = out.getvalue()
    assert "5045" in first and "5044" not in first  # the first view: the last 5 rows
    write_rows(tmp_path / "new" / "metrics.jsonl", [{"step": s, "reward": 7000 + s, "loss": 0.25} for s in range(50)])
    follower.scan()
    tail.emit(follower)
    new = out.getvalue()[len(first) :]
    missing = [s for s in range(50) if str(7000 + s) not in new]
    assert missing == [], new


@pytest.mark.parametrize(
    ("cmd", "said"),
    [("tail", ["Exit status: 0", "1 an error alert fired", "2 if no readable row was ever found"]),
     ("summary", ["Exit status: 0", "whatever their alerts say", "2 for a usage error"])],
)
def test_help_states_the_exit_statuses(cmd: str, said: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """An agent or a CI script reads --help to learn what the status means (summary: alerts never change it)."""
    from steptable.cli.main import main

    with pytest.raises(SystemExit) as e:
        main([cmd, "--help"])
    text = " ".join(capsys.readouterr().out.split())  # (argparse wraps lines at the terminal's width)
    assert e.value.code == 0 and all(s in text for s in said), text
