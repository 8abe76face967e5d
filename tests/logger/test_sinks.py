"""setup_logging's sinks under what a real run does to them: stdout a pipe (nohup, sbatch, ``| tee``), a Ctrl-C that
lands inside tqdm, a progress bar on stderr, the log directory deleted, a rank learnt after setup_logging."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from loguru import logger
from tqdm import tqdm

import steptable.logger.rank as st_rank
import steptable.logger.sinks as st_sinks
from steptable import StepLogger, setup_logging
from tests.logger.helpers import SIGNED_LOSS_COLS


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


def test_each_console_message_is_flushed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    class Recorder:
        encoding = "utf-8"

        def write(self, text: str) -> int:
            calls.append(f"write {text!r}")
            return len(text)

        def flush(self) -> None:
            calls.append("flush")

    monkeypatch.setattr(sys, "stdout", Recorder())
    setup_logging("flushed", log_dir=tmp_path / "logs", colour=False)
    logger.info("one")
    logger.info("two")
    assert calls == ["write 'I one\\n'", "flush", "write 'I two\\n'", "flush"]


def test_ctrl_c_inside_tqdm_write_is_not_swallowed(tmp_path: Path) -> None:
    """A Ctrl-C landing in tqdm's lock comes out of tqdm.write as RuntimeError('cannot release un-acquired lock'):
    taken for a dead stdout, it silenced the console for good and training went on."""
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
    """steptable's own notices were glued after a progress bar's text and missing from the verbose log."""
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


def test_a_rank_learnt_after_setup_moves_the_console_and_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """torch.multiprocessing.spawn with setup_logging before init_process_group: every worker read rank 0, took
    rank 0's file name and printed its INFO lines."""
    group: list[int | None] = [None]  # no process group yet, and no launcher's variable
    monkeypatch.setattr(st_rank, "known_rank", lambda: group[0])
    monkeypatch.setattr(st_rank, "dist_rank", lambda: group[0])
    path = setup_logging("spawned", log_dir=tmp_path, colour=False)
    logger.info("before init")
    group[0] = 1  # init_process_group
    logger.info("rank one's row")
    logger.warning("rank one's warning")
    out = capsys.readouterr().out
    assert out == "I before init\nW [r1] rank one's warning\n"
    ranked = path.with_name(path.stem + ".rank1.log")
    assert "before init" in path.read_text() and "rank one" not in path.read_text()
    assert "rank one's row" in ranked.read_text() and "rank one's warning" in ranked.read_text()


def test_a_trainers_own_ctrl_c_handler_that_logs_is_not_cut_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C at a terminal kills `| tee` too: the trainer's ``except KeyboardInterrupt:`` logs "saving a
    checkpoint", the write fails with EPIPE, and the handled Ctrl-C in that error's context was raised again from
    inside logger.warning: the checkpoint was never saved."""

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
    """A DataLoader worker forked while a thread held tqdm's lock hung for ever in it at its first log line."""
    out = FakeOut()
    setup_logging("fork", log_dir=tmp_path / "logs", colour=False)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(st_sinks, "_in_child", True)  # as after a fork: the at-fork hook sets it
    monkeypatch.setattr(tqdm, "external_write_mode", lambda *a, **kw: pytest.fail("tqdm's lock taken in a child"))
    logger.info("from a worker")
    assert out.lines == ["I from a worker\n"]


def test_a_known_rank_is_not_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every message re-read four environment variables, twice, for ever in a single-process run (11% of log())."""
    asked: list[int] = []
    monkeypatch.setenv("RANK", "0")
    rank = st_rank.LazyRank()
    monkeypatch.setattr(st_rank, "dist_rank", lambda: asked.append(1))  # (the messages' asking, from here)
    assert [rank() for _ in range(5)] == [0] * 5 and asked == []
    monkeypatch.undo()  # (RANK and dist_rank as they were)
    monkeypatch.delenv("RANK", raising=False)
    rank = st_rank.LazyRank()  # nothing says it yet (spawn, before init_process_group): asked at each message
    monkeypatch.setattr(st_rank, "dist_rank", lambda: asked.append(1))
    assert [rank() for _ in range(3)] == [0] * 3 and len(asked) == 3


def test_a_line_cut_by_a_full_pipe_is_not_glued_to_the_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full non-blocking pipe took half a row (EAGAIN after 8 characters): the next row was glued to the cut one
    ('I   7202  +0.500I   7722  +0.500')."""
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
