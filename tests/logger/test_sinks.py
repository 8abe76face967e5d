"""steptable.logger.sinks: the console and file sinks under what a real run does to them: stdout a pipe
(nohup, sbatch, ``| tee``), a Ctrl-C that lands inside tqdm, a progress bar on stderr, the log directory deleted,
a forked worker, a stdout that fails for a moment."""

from __future__ import annotations

import errno
import io
import os
import shutil
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from loguru import logger
from tqdm import tqdm

import steptable.logger.sinks as st_sinks
from steptable import StepLogger, setup_logging
from steptable.logger.sinks import encodable
from tests.logger.helpers import EMA_COLS, SIGNED_LOSS_COLS, jsonl_steps


class FakeOut:
    """A stdout that keeps what is written to it; ``hook(self, text)`` runs first at each write and may raise."""

    encoding = "utf-8"

    def __init__(self, hook: Callable[[FakeOut, str], None] | None = None) -> None:
        self.lines: list[str] = []
        self.calls = 0
        self.hook = hook

    def write(self, text: str) -> int:
        self.calls += 1
        if self.hook is not None:
            self.hook(self, text)
        self.lines.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # (buffering is what is tested)


def test_a_row_reaches_a_piped_stdout_while_the_run_goes_on(tmp_path: Path) -> None:
    """Held in Python's 8 KB buffer, a slow loop's rows reached a pipe or file hours late, and never on a SIGKILL.
    The child logs a row, says so on stderr, and waits: the row is in the pipe by then."""
    code = textwrap.dedent(
        """
        import sys
        from steptable import Col, StepLogger, setup_logging
        setup_logging("pipe", log_dir=sys.argv[1])
        sl = StepLogger([Col("step", 4, "step", "d", "step")], run_dir=sys.argv[2], alerts=False)
        sl.log({"step": 7})
        sys.stderr.write("logged\\n"); sys.stderr.flush()
        sys.stdin.readline()
        sl.close()
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "logs"), str(tmp_path / "arm")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        told: list[bytes] = []
        for line in iter(proc.stderr.readline, b""):
            told.append(line)
            if line == b"logged\n":
                break
        os.set_blocking(proc.stdout.fileno(), False)
        try:
            early = os.read(proc.stdout.fileno(), 1 << 16)
        except BlockingIOError:  # nothing in the pipe
            early = b""
    finally:
        proc.stdin.close()
        proc.wait(60)
    assert b"logged\n" in told, told
    assert b"I    7\n" in early, early


def test_ctrl_c_inside_tqdm_write_is_not_swallowed(tmp_path: Path) -> None:
    """A Ctrl-C landing in tqdm's lock comes out of tqdm.write as RuntimeError('cannot release un-acquired lock'):
    it is raised as the Ctrl-C, not taken for a dead stdout (which would silence the console for good while
    training goes on)."""
    code = textwrap.dedent(
        """
        import sys
        from tqdm import tqdm
        from steptable import Col, StepLogger, setup_logging
        setup_logging("kbi", log_dir=sys.argv[1], colour=False)
        lock = tqdm.get_lock()

        class Once:  # the KeyboardInterrupt arrives while tqdm.write takes its (last) lock
            def __init__(self, real):
                self.real, self.armed = real, False
            def acquire(self, *a, **k):
                if self.armed:
                    self.armed = False
                    raise KeyboardInterrupt
                return self.real.acquire(*a, **k)
            def release(self):
                return self.real.release()

        trap = Once(lock.locks[-1])
        lock.locks[-1] = trap
        sl = StepLogger([Col("step", 4, "step", "d", "step")], run_dir=sys.argv[2], alerts=False, header_every=0)
        sl.log({"step": 0})
        trap.armed = True
        try:
            sl.log({"step": 1})
            print("swallowed", file=sys.stderr)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
        sl.log({"step": 2})  # (a trainer that saves a checkpoint on Ctrl-C and logs on): the console still works
        sl.close()
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "logs"), str(tmp_path / "arm")],
                          capture_output=True, text=True, timeout=60, env=_env())
    assert "interrupted" in proc.stderr and "swallowed" not in proc.stderr, proc.stderr
    assert "I    0\n" in proc.stdout and "I    2\n" in proc.stdout, proc.stdout


def test_a_stdout_raising_something_else_is_reported_once_and_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only a closed or broken stream is gone for good; a RuntimeError (a replaced stdout's, tqdm's) may pass."""
    lines: list[str] = []

    class Hiccup:
        calls = 0

        def write(self, text: str) -> int:
            Hiccup.calls += 1
            if Hiccup.calls in (2, 4):
                raise RuntimeError("busy")
            lines.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", Hiccup())
    setup_logging("hiccup", log_dir=tmp_path / "logs", colour=False)
    for n in range(5):
        logger.info(f"line {n}")
    assert lines == ["I line 0\n", "I line 2\n", "I line 4\n"]
    assert capsys.readouterr().err.count("console output failed (RuntimeError('busy'))") == 1


def test_notices_clear_the_bar_and_reach_the_verbose_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], captured: list[str]
) -> None:
    """steptable's own notices clear a progress bar's text first (not glued after it) and reach the verbose log."""
    path = setup_logging("notices", log_dir=tmp_path / "logs", colour=False)
    bar = tqdm(total=4, desc="train", file=sys.stderr)
    bar.update(1)
    st_sinks.say("steptable: notice one")
    with StepLogger(SIGNED_LOSS_COLS, run_dir=tmp_path / "arm", alerts=False) as sl:
        sl.log({"step": 2.5, "loss": 0.1})  # a fractional step: reported once
    bar.close()
    out, err = capsys.readouterr()
    assert "\rsteptable: notice one\n" in err and "]steptable" not in err, repr(err)
    assert err.count("is not a whole number") == 1
    text = path.read_text()
    assert text.count("| WARNING  | steptable | steptable: notice one\n") == 1
    assert text.count("is not a whole number") == 1
    # not shown a second time by the console sink, nor by another loguru sink (the trainer's own)
    assert "notice one" not in out and "whole number" not in out
    assert not any("notice one" in line or "whole number" in line for line in captured)


def test_a_deleted_log_directory_is_reported_once_and_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    now = [100.0]
    monkeypatch.setattr(st_sinks, "time", types.SimpleNamespace(monotonic=lambda: now[0]), raising=False)
    logs = tmp_path / "logs"
    path = setup_logging("deleted", log_dir=logs, colour=False)
    logger.info("one")
    shutil.rmtree(logs)
    logger.info("two")  # within the second: not looked at yet (it goes to the deleted file)
    now[0] += 1.5
    logger.info("three")
    assert path.exists() and "three" in path.read_text() and "two" not in path.read_text()
    path.unlink()  # again: made again, not reported again
    now[0] += 1.5
    logger.info("four")
    assert path.read_text().count("four") == 1
    assert capsys.readouterr().err.count("was deleted or moved during the run") == 1


def test_a_trainers_own_ctrl_c_handler_that_logs_is_not_cut_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C at a terminal kills `| tee` too: the trainer's ``except KeyboardInterrupt:`` logs "saving a
    checkpoint", the write fails with EPIPE, and the handled Ctrl-C in that error's context is not raised again from
    inside logger.warning: the handler goes on and the checkpoint is saved."""

    class DeadPipe:
        encoding = "utf-8"

        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            pass

    setup_logging("handler", log_dir=tmp_path / "logs", colour=False)
    monkeypatch.setattr(sys, "stdout", DeadPipe())
    saved = False
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        logger.warning("interrupted: saving a checkpoint")
        st_sinks.say("steptable: a notice in the handler")
        saved = True
    assert saved and "console output failed" in capsys.readouterr().err


def test_a_forked_worker_writes_without_tqdms_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A DataLoader worker forked while a thread holds tqdm's lock writes its first log line without that lock
    (taking it would hang for ever)."""
    out = FakeOut()
    setup_logging("fork", log_dir=tmp_path / "logs", colour=False)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(st_sinks, "_in_child", True)  # as after a fork: the at-fork hook sets it
    monkeypatch.setattr(tqdm, "get_lock", lambda *a, **kw: pytest.fail("tqdm's lock taken in a child"))
    logger.info("from a worker")
    assert out.lines == ["I from a worker\n"]


def test_a_line_cut_by_a_full_pipe_is_not_glued_to_the_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full non-blocking pipe that takes half a row (EAGAIN after 8 characters): the next row starts on a line
    of its own, not glued to the cut one ('I   7202  +0.500I   7722  +0.500')."""
    def full(out: FakeOut, text: str) -> None:
        if out.calls == 2:
            out.lines.append(text[:8])
            raise BlockingIOError(11, "Resource temporarily unavailable", 8)

    out = FakeOut(full)
    setup_logging("full", log_dir=tmp_path / "logs", colour=False)
    monkeypatch.setattr(sys, "stdout", out)
    for n in range(3):
        logger.info(f"row {n} +0.500")
    assert "".join(out.lines).splitlines() == ["I row 0 +0.500", "I row 1 ", "I row 2 +0.500"]


def test_encodable_keeps_display_width() -> None:
    assert encodable("a\u4e2db\u00e9c", "ascii") == "a??b?c"
    assert encodable("a\u4e2db", "utf-8") == "a\u4e2db"


def test_encodable_keeps_emoji_sequences_at_their_width() -> None:
    from steptable.table.formatting import pad

    for s in ("\u2764\ufe0f", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "a\u4e2db"):
        assert len(encodable(pad(s, 8, "left"), "ascii")) == 8


def test_a_stdout_that_raises_anything_is_reported_once(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A replaced stdout (a notebook stream torn down, a tee) raising something that is not an OSError: one report,
    then quiet, and the JSONL is complete."""
    from steptable import setup_logging

    setup_logging("raises", log_dir=tmp_path / "logs")
    sl = StepLogger(EMA_COLS, run_dir=tmp_path / "arm", alerts=False)
    sl.log({"step": 0, "loss": 0.1})

    class TornDown:
        def write(self, text: str) -> int:
            raise RuntimeError("stream torn down")

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", TornDown())
    for step in range(1, 6):
        sl.log({"step": step, "loss": 0.1})
    sl.close()
    err = capsys.readouterr().err
    assert err.count("console output failed") == 1 and "Logging error" not in err and "Traceback" not in err
    assert jsonl_steps(tmp_path / "arm" / "metrics.jsonl") == list(range(6))


def test_a_stdout_that_fails_for_a_moment_loses_only_that_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """EAGAIN from a momentarily full non-blocking pipe costs that one line; the console does not go quiet for the
    rest of the run (a closed or broken stdout still does, see the test above)."""
    import errno

    from steptable import setup_logging

    lines: list[str] = []

    class Flaky:
        calls = 0

        def write(self, text: str) -> int:
            Flaky.calls += 1
            if Flaky.calls == 3:
                raise BlockingIOError(errno.EAGAIN, "write could not complete without blocking")
            lines.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", Flaky())
    setup_logging("flaky", log_dir=tmp_path / "logs")
    with StepLogger(EMA_COLS, alerts=False, header_every=0) as sl:
        for step in range(6):
            sl.log({"step": step, "loss": 0.1})
    text = "".join(lines)
    assert "end of run: 6 rows" in text and "I    5 +0.100" in text, text
    assert capsys.readouterr().err.count("lines are dropped while it fails") == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_with_stdout_failing_the_runs_own_file_failing_is_said_on_stderr_and_the_run_ends_well(
        tmp_path: Path) -> None:
    """stdout on a full disk (``> /dev/full``) and then the run directory replaced by a file: the JSONL's failure
    is a warning the console cannot print, so it is said on stderr (it was told only to the dead stdout, while the
    one stderr line said the rows continued in the JSONL). Rows and information lines stay off stderr. The run ends
    with status 0: the lines left in stdout's buffer made Python's last flush fail (status 120, a failed job)."""
    code = textwrap.dedent(
        f"""
        import shutil
        from steptable import StepLogger, setup_logging
        setup_logging("full", log_dir={str(tmp_path / "logs")!r})
        run = {str(tmp_path / "arm")!r}
        with StepLogger(run_dir=run, alerts=False) as lg:
            for step in range(6):
                if step == 3:
                    shutil.rmtree(run)
                    open(run, "w").close()
                lg.log({{"step": step, "loss": 0.5}})
        """
    )
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120, env=_env())
    assert done.returncode == 0, done.stderr
    err = done.stderr.splitlines()
    assert sum("console output failed" in line for line in err) == 1
    assert any(line.startswith("W steptable:") and "metrics.jsonl was deleted" in line for line in err), done.stderr
    assert all(line.startswith(("W steptable:", "steptable:")) for line in err), done.stderr


def test_a_pipe_closed_by_its_reader_leaves_the_runs_exit_status_alone(tmp_path: Path) -> None:
    """``python train.py | head -2``: the rows after the reader left stay in stdout's buffer; the run still ends
    with status 0 (Python's last flush of them set 120)."""
    code = textwrap.dedent(
        f"""
        from steptable import StepLogger, setup_logging
        setup_logging("head", log_dir={str(tmp_path / "logs")!r})
        with StepLogger(run_dir={str(tmp_path / "arm")!r}, alerts=False) as lg:
            for step in range(10_000):  # (more than a pipe's 64 KiB: the writes after the reader left fail)
                lg.log({{"step": step, "loss": 0.5}})
        """
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert child.stdout is not None and child.stderr is not None
    child.stdout.readline()
    child.stdout.close()  # the reader goes, as head does
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 0, err
    assert err.count("console output failed") == 1 and "Exception ignored" not in err, err
    assert jsonl_steps(tmp_path / "arm" / "metrics.jsonl") == list(range(10_000))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_logging_from_a_forked_child_is_reported_once(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import os, sys
        from steptable import Col, StepLogger
        sl = StepLogger([Col("step", 4, "step", "d")], run_dir=sys.argv[1], console=False, alerts=False)
        pid = os.fork()
        if pid == 0:
            for step in range(5):
                sl.log({"step": step})
            sys.stderr.flush()
            os._exit(0)
        os.waitpid(pid, 0)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "arm")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("forked child process") == 1 and not (tmp_path / "arm" / "metrics.jsonl").exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_logging_from_many_forked_children_is_reported_once_in_all(tmp_path: Path) -> None:
    """A DataLoader forks its workers again every epoch (without persistent_workers): each worker logging from
    its dataset said the notice once, 2 workers x 3 epochs 6 times (800 lines in a 100-epoch run of 8 workers)."""
    code = textwrap.dedent(
        """
        import os, sys
        from steptable import Col, StepLogger
        sl = StepLogger([Col("step", 4, "step", "d")], run_dir=sys.argv[1], console=False, alerts=False)
        for epoch in range(3):
            workers = []
            for worker in range(2):
                pid = os.fork()
                if pid == 0:
                    if os.fork() == 0:  # (a worker's own child: a pool inside the dataset)
                        sl.log({"step": 0})
                        os._exit(0)
                    os.wait()
                    for step in range(5):
                        sl.log({"step": step})
                    sys.stderr.flush()
                    os._exit(0)
                workers.append(pid)
            for pid in workers:
                os.waitpid(pid, 0)
            sl.log({"step": epoch})  # the parent's rows go on
        sl.close()
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "arm")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("forked child process") == 1, proc.stderr
    assert jsonl_steps(tmp_path / "arm" / "metrics.jsonl") == [0, 1, 2]


def test_console_false_without_setup_logging_keeps_alerts_off_the_terminal(tmp_path: Path) -> None:
    """`steptable demo`: loggers with console=False under the watch app, no setup_logging. loguru's default
    handler would write their alerts to stderr, over the app's screen."""
    code = textwrap.dedent(
        """
        import sys
        from steptable import Col, StepLogger
        with StepLogger([Col("step", 4, "step", "d"), Col("loss", 6, "loss")], run_dir=sys.argv[1],
                        console=False) as sl:
            for step in range(5):
                sl.log({"step": step, "loss": float("nan") if step > 2 else 0.5})
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "arm")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert len((tmp_path / "arm" / "metrics.jsonl").read_text().splitlines()) == 5


def test_console_false_without_setup_logging_reports_a_write_failure_once_and_short(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import os, sys
        from steptable import Col, StepLogger
        os.makedirs(sys.argv[1])
        os.symlink("/dev/full", os.path.join(sys.argv[1], "metrics.jsonl"))
        with StepLogger([Col("step", 4, "step", "d")], run_dir=sys.argv[1], console=False, alerts=False) as sl:
            for step in range(5):
                sl.log({"step": step})
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "arm")], capture_output=True, text=True,
                          timeout=60)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 0 and proc.stdout == "" and all(line.startswith("steptable: ") for line in lines)
    assert sum("cannot write" in line for line in lines) == 1 and "| WARNING" not in proc.stderr


def test_console_false_without_setup_logging_reports_each_failure_episode(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import itertools, os, sys
        from steptable import Col, StepLogger
        from steptable.logger import writer
        writer.monotonic = itertools.count(0.0, writer.CHECK_S).__next__  # (every row checks the path)
        run = sys.argv[1]
        with StepLogger([Col("step", 4, "step", "d")], run_dir=run, console=False, alerts=False) as sl:
            for step in range(9):
                if step in (3, 7):
                    os.unlink(os.path.join(run, "metrics.jsonl"))
                sl.log({"step": step})
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "arm")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stderr.count("was deleted during the run") == 2, proc.stderr


def _bar_and_lines(write: Callable[[Any, str], None], where: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """Two rows written by ``write`` while a bar on stderr (its text shortened between the rows) and a disabled one
    are live, the rows on stderr too, on stdout, or ``elsewhere``; what stderr and the rows' stream then hold. (One
    live bar: tqdm clears bars in its weak set's order, which differs from one set of bars to the next.)"""
    bars, rows = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", bars)
    monkeypatch.setattr(sys, "stdout", rows if where == "stdout" else io.StringIO())
    out = bars if where == "stderr" else rows
    fmt = "{desc}{n}/{total}"  # (no clock in the text: two runs of this write the same bytes)
    bar = tqdm(total=100, file=bars, bar_format=fmt, desc="a long description ", mininterval=0)
    off = tqdm(total=10, file=bars, disable=True)
    bar.update(5)
    write(out, "I row one\n")
    bar.set_description_str("d ", refresh=False)
    write(out, "I row two\n")
    off.close()
    bar.close()
    return bars.getvalue(), rows.getvalue()


def _tqdms(stream: Any, text: str) -> None:
    with tqdm.external_write_mode(file=stream):
        st_sinks.write_plain(stream, text)


@pytest.mark.parametrize("where", ["stderr", "stdout", "elsewhere"])
def test_rows_between_bars_write_the_bytes_tqdms_external_write_mode_writes(where: str,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-write clear of a bar on the first line leaves what tqdm's clear leaves (its last length reset: the
    redraw of a shorter bar pads nothing); a bar whose status printer is not tqdm's goes through tqdm's clear; a
    stream that is neither the bar's nor a standard one clears nothing, as with tqdm."""
    want = _bar_and_lines(_tqdms, where, monkeypatch)
    assert "I row two" in "".join(want) and "a long description 5/100" in want[0]
    assert ("\rd 5/100\r" in want[0]) == (where != "elsewhere")  # (the redraw after a clear: no padding)
    assert _bar_and_lines(st_sinks.write_between_bars, where, monkeypatch) == want
    monkeypatch.setattr(st_sinks, "_last_len", lambda bar: None)  # (a status printer of another shape)
    assert _bar_and_lines(st_sinks.write_between_bars, where, monkeypatch) == want


def test_a_failing_close_of_the_verbose_log_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """close(2) of a file on NFS (or under a quota) reports the lines its cache could not write (EIO, EDQUOT): the
    verbose log's last lines may be missing, and that is said once, not swallowed."""
    path = tmp_path / "run.log"
    sink = st_sinks.FileSink(path)
    sink.write("one\n")
    fh = sink._fh
    close = fh.close

    def close_failing() -> None:
        close()
        raise OSError(errno.EIO, "Input/output error")

    fh.close = close_failing
    sink.stop()
    err = capsys.readouterr().err
    assert err.count("Input/output error") == 1 and str(path) in err and sink._fh is None
    assert path.read_text() == "one\n"
