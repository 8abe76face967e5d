"""What a training loop does to its logger that a test of the happy path never does: deleting the run directory,
Ctrl-C in the middle of a write, a full disk under the verbose log, forking a DataLoader worker, updating a logged
tensor in place, a value that cannot be walked."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from steptable import Col, StepLogger
from steptable.logger import writer
from steptable.logger.setup import use_colour
from steptable.logger.sinks import encodable
from steptable.logger.writer import RunWriter, encode_row
from tests.helpers import repoint
from tests.logger.helpers import EMA_COLS, jsonl_steps


def test_run_dir_deleted_mid_run_rows_go_to_a_new_file(tmp_path: Path, captured: list[str]) -> None:
    run = tmp_path / "arm"
    with StepLogger(EMA_COLS, run_dir=run, alerts=False) as sl:
        for step in range(3):
            sl.log({"step": step, "loss": 0.1})
        shutil.rmtree(run)
        for step in range(3, 6):
            sl.log({"step": step, "loss": 0.1})
    assert jsonl_steps(run / "metrics.jsonl") == [3, 4, 5]  # nothing after the deletion is lost
    text = "".join(captured)
    assert text.count("was deleted during the run; rows from this one on") == 1
    assert f"3 of 6 rows (metrics.jsonl was deleted during the run), every column: {run / 'table.txt'}" in text
    assert (run / "table.txt").exists()


class _FileWrapper:
    """A real file handle with another write() (subclasses): what RunWriter uses of a file besides writing."""

    fh: Any

    def fileno(self) -> int:
        fd: int = self.fh.fileno()
        return fd

    def close(self) -> None:
        self.fh.close()


class _Interrupting(_FileWrapper):
    """A file whose write is followed (or preceded) by a KeyboardInterrupt, as when Ctrl-C lands around write(2)."""

    def __init__(self, fh: Any, after: bool) -> None:
        self.fh, self.after, self.armed = fh, after, True

    def write(self, data: bytes) -> int:
        if self.armed and not self.after:
            self.armed = False
            raise KeyboardInterrupt
        n: int = self.fh.write(data)
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt
        return n


@pytest.mark.parametrize("after", [True, False])
def test_ctrl_c_around_a_write_neither_duplicates_nor_loses_the_row(tmp_path: Path, after: bool) -> None:
    w = RunWriter(tmp_path / "metrics.jsonl", lambda _: None)
    w.write({"step": 0})
    w._fh = _Interrupting(w._fh, after)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        w.write({"step": 1})
    w.close()  # what the ``with StepLogger`` exit does next
    assert jsonl_steps(tmp_path / "metrics.jsonl") == [0, 1]


def test_pending_rows_are_capped_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer, "MAX_PENDING_BYTES", 10_000)
    warnings: list[str] = []
    w = RunWriter("/dev/full", warnings.append)
    for step in range(200):
        w.write({"step": step, "completion": "x" * 500})
    assert w.pending < 30 and w.dropped == 200 - w.pending
    w.close()
    assert "oldest row(s) dropped" in warnings[-1]


class _BadIter(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise RuntimeError("cannot iterate")


class _BadClass:
    @property  # type: ignore[misc]
    def __class__(self) -> Any:
        raise RuntimeError("no class")


def test_values_that_cannot_be_walked_keep_the_row(tmp_path: Path) -> None:
    with StepLogger(EMA_COLS, run_dir=tmp_path, alerts=False, console=False) as sl:
        sl.log({"step": 0, "loss": 0.25, "a": _BadIter([1, 2]), "b": _BadClass()})
    row = json.loads((tmp_path / "metrics.jsonl").read_text())
    assert row["loss"] == 0.25 and isinstance(row["a"], str) and isinstance(row["b"], str)


def test_dump_shows_values_as_logged_not_as_updated_in_place(captured: list[str]) -> None:
    ema = np.zeros(())
    sl = StepLogger(EMA_COLS, alerts=False, dump_rows=3)
    for step in range(3):
        ema += 1.5  # the loop keeps one accumulator and updates it in place
        sl.log({"step": step, "loss": 0.5, "ema": ema})
    sl.close()
    dump = "".join(captured).split("end of run")[1]
    assert [line.split()[-1] for line in dump.splitlines()[2:5]] == ["1.5", "3", "4.5"]


def test_close_still_dumps_when_table_txt_cannot_be_written(
    tmp_path: Path, captured: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sl = StepLogger(EMA_COLS, run_dir=tmp_path, alerts=False)
    for step in range(3):
        sl.log({"step": step, "loss": 0.5})

    def full(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sl, "write_table", full)
    sl.close()
    text = "".join(captured)
    assert "end of run: 3 rows" in text and "table.txt" not in text  # no promise of a file that is not there
    assert "writing table.txt failed" in capsys.readouterr().err


def test_log_after_close_is_reported_once(capsys: pytest.CaptureFixture[str]) -> None:
    sl = StepLogger(EMA_COLS, alerts=False, console=False)
    sl.log({"step": 0})
    sl.close()
    assert sl.log({"step": 1}) is None and sl.log({"step": 2}) is None
    assert capsys.readouterr().err.count("called after close()") == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_neither_prints_nor_writes(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import os, sys
        from steptable import Col, StepLogger, setup_logging
        setup_logging("t", log_dir=sys.argv[1])
        sl = StepLogger([Col("step", 4, "step", "d")], run_dir=sys.argv[1] + "/arm", alerts=False)
        sl.log({"step": 0})
        with sl._lock:  # another thread is inside log() when the DataLoader forks
            pid = os.fork()
        if pid == 0:
            sl.log({"step": 99})
            sl.close()
            os._exit(0)
        os.waitpid(pid, 0)
        sl.log({"step": 1})
        sl.close()
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert jsonl_steps(tmp_path / "arm" / "metrics.jsonl") == [0, 1]
    assert proc.stdout.count("end of run") == 1
    # a row or dump line reading 99 (not the tmp path, which may hold "99")
    assert not re.search(r"(?m)^\S?\s*99\s*$", proc.stdout), proc.stdout


def test_verbose_log_on_a_full_disk_is_reported_once(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import os, sys
        from loguru import logger
        from steptable import setup_logging
        path = setup_logging("t", log_dir=sys.argv[1])
        os.replace(path, path.with_suffix(".old"))
        os.symlink("/dev/full", path)
        setup_logging("t", log_dir=sys.argv[1])  # the same run again: the same file, which is now a full disk
        for i in range(50):
            logger.info(f"row {i}")
        sys.stderr.write("DONE\\n")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "DONE" in proc.stderr, proc.stderr
    assert proc.stderr.count("cannot write the verbose log") == 1 and "Traceback" not in proc.stderr
    assert proc.stdout.count("I row") == 50


def test_verbose_log_names_the_callers_line(tmp_path: Path) -> None:
    from steptable import setup_logging

    path = setup_logging("caller", log_dir=tmp_path)
    sl = StepLogger(EMA_COLS, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    sl.close()
    text = path.read_text()
    line = sys._getframe().f_lineno - 3  # the sl.log(...) call above
    # the file by name (a script is "__main__" as a module), and the line of the caller, not of steptable
    assert f"test_logger_failures.py:{line} |" in text and "logger.py:" not in text


def test_console_false_keeps_warnings_off_the_console(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from steptable import setup_logging

    path = setup_logging("quiet", log_dir=tmp_path)
    sl = StepLogger(EMA_COLS, alerts=False, console=False)
    sl._writer = RunWriter("/dev/full", sl._warn)
    sl.log({"step": 0})
    sl.close()
    assert "cannot write /dev/full" not in capsys.readouterr().out  # a TUI owns that terminal
    assert "cannot write /dev/full" in path.read_text()


def test_no_colour_on_a_dumb_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert use_colour(Tty())
    monkeypatch.setenv("TERM", "dumb")
    assert not use_colour(Tty())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_colour(Tty())


def test_encodable_keeps_display_width() -> None:
    assert encodable("a\u4e2db\u00e9c", "ascii") == "a??b?c"
    assert encodable("a\u4e2db", "utf-8") == "a\u4e2db"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_path_to_an_unlinked_file_is_written_once(tmp_path: Path) -> None:
    """/dev/stdout redirected to a deleted file (or /proc/self/fd/N) leads to an inode with no name: that is
    where the user sent the rows, not a deleted run directory."""
    target = tmp_path / "x"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT)
    reader = open(target, "rb")
    target.unlink()
    try:
        w = RunWriter(f"/proc/self/fd/{fd}", lambda _: None)
        for step in range(3):
            w.write({"step": step})
        w.close()
        assert [json.loads(line)["step"] for line in reader.read().splitlines()] == [0, 1, 2]
    finally:
        os.close(fd)
        reader.close()


def test_ctrl_c_with_another_writer_appending_keeps_the_row(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    w = RunWriter(path, lambda _: None)
    w.write({"step": 1})
    with open(path, "ab") as other:  # a second process appends a longer line meanwhile
        other.write(b'{"step": 100, "note": "written by someone else"}\n')
    w._fh = _Interrupting(w._fh, after=False)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        w.write({"step": 2})  # interrupted before anything was written
    w.close()
    assert jsonl_steps(path) == [1, 100, 2]


def test_encodable_keeps_emoji_sequences_at_their_width() -> None:
    from steptable.table.formatting import pad

    for s in ("\u2764\ufe0f", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "a\u4e2db"):
        assert len(encodable(pad(s, 8, "left"), "ascii")) == 8


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_close_returns_when_the_jsonl_is_not_a_regular_file(tmp_path: Path) -> None:
    """metrics.jsonl as a FIFO (or /dev/stdout): rows stream into it, and close() does not try to read it back
    for table.txt (it would block forever, or read /dev/full's endless zeros). Run in a child with a deadline."""
    script = textwrap.dedent(f"""
        import os, threading
        from steptable import Col, StepLogger
        run = {str(tmp_path / "arm")!r}
        os.makedirs(run)
        fifo = os.path.join(run, "metrics.jsonl")
        os.mkfifo(fifo)
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there before the first row
        sl = StepLogger([Col("step", 5, "step", "d", "step")], run_dir=run, console=False)
        for i in range(3):
            sl.log({{"step": i}})
        sl.close()
        got = os.read(rfd, 1 << 16)
        print(got.count(b"\\n"), os.path.exists(os.path.join(run, "table.txt")))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3", "False"]


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


def test_log_called_from_inside_log_writes_each_row_once(tmp_path: Path, captured: list[str]) -> None:
    """A signal handler that logs while the loop is inside log() (here: a value whose __float__ logs): the inner
    row is logged right after the outer one, each written once, none lost, nothing raised."""
    sl = StepLogger(EMA_COLS, run_dir=tmp_path / "arm", alerts=False)

    class Reentrant:
        def __init__(self, step: int) -> None:
            self.step, self.fired = step, False

        def __float__(self) -> float:  # read more than once (JSONL, row): the handler fires on the first
            if not self.fired:
                self.fired = True
                sl.log({"step": -self.step, "loss": 0.0})
                if self.step == 3:
                    sl.close()  # close from inside log(): done once the outer row is
            return 0.5

    for step in range(1, 4):
        sl.log({"step": step, "loss": Reentrant(step)})
    sl.log({"step": 4, "loss": 0.1})  # after close: not recorded
    assert jsonl_steps(tmp_path / "arm" / "metrics.jsonl") == [1, -1, 2, -2, 3, -3]
    text = "".join(captured)
    assert "failed" not in text and "end of run: 6 rows" in text


def test_two_arms_in_one_run_dir_keep_their_own_tables(tmp_path: Path) -> None:
    cols = [Col("step", 5, "step", "d", "s"), Col("loss", 6, "loss", None, "l")]
    a = StepLogger(cols, run_dir=tmp_path, arm="A/x", console=False)
    b = StepLogger(cols, run_dir=tmp_path, arm="B", console=False)
    for i in range(3):
        a.log({"step": i, "loss": 1.0})
        b.log({"step": i, "loss": 2.0})
    a.close()
    b.close()
    (ta,) = [p.read_text() for p in tmp_path.glob("table.A_x-*.txt")]  # (hashed: "A/x" and "A_x" differ)
    tb = (tmp_path / "table.B.txt").read_text()
    assert [line.split()[1] for line in ta.splitlines()[1:]] == ["1"] * 3
    assert [line.split()[1] for line in tb.splitlines()[1:]] == ["2"] * 3
    c = StepLogger(cols, run_dir=tmp_path, arm="A_x", console=False)  # a name reading alike: its own table
    c.log({"step": 0, "loss": 3.0})
    c.close()
    assert (tmp_path / "table.A_x.txt").read_text().splitlines()[1].split() == ["0", "3"]
    assert len(list(tmp_path.glob("table.A_x-*.txt"))) == 1
    alone = StepLogger(cols, run_dir=tmp_path / "solo", arm="C", console=False)
    alone.log({"step": 0, "loss": 3.0})
    alone.close()
    assert (tmp_path / "solo" / "table.txt").exists() and not list((tmp_path / "solo").glob(".*tmp"))


def test_keys_that_read_alike_are_all_kept() -> None:
    """3 and "3", None and "None": every value reaches the JSONL; a row's own arm is kept as it named it."""
    row = json.loads(encode_row({"step": 1, 3: "int", "3": "str", None: 1, "None": 2}))
    assert row == {"step": 1, "3": "int", "3~2": "str", "None": 1, "None~2": 2}


def test_a_row_naming_its_own_arm_keeps_it(tmp_path: Path) -> None:
    sl = StepLogger(EMA_COLS, run_dir=tmp_path, arm="A", console=False, alerts=False)
    sl.log({"step": 0, "arm": "B"})
    sl.log({"step": 1})
    sl.close()
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["arm"] for r in rows] == ["B", "A"]


def test_a_step_past_float_range_keeps_the_row(captured: list[str]) -> None:
    sl = StepLogger(EMA_COLS, console=True)
    line = sl.log({"step": 10**400, "loss": 0.5})
    assert line is not None and "failed" not in "".join(captured)


class _SmallDisk:
    """Files opened for appending on a disk with ``free`` bytes left: a write takes what fits and says how much
    (a short write), and with nothing left fails with ENOSPC, as write(2) does on a full disk."""

    def __init__(self, free: int) -> None:
        self.free = free

    def open(self, path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        fh = open(path, mode, *args, **kwargs)  # handed to the writer, which closes it
        return self._Append(fh, self) if "a" in mode else fh

    class _Append(_FileWrapper):
        def __init__(self, fh: Any, disk: _SmallDisk) -> None:
            self.fh, self.disk = fh, disk

        def write(self, data: bytes) -> int:
            if self.disk.free <= 0:
                raise OSError(28, "No space left on device")
            n: int = self.fh.write(data[: self.disk.free])
            self.disk.free -= n
            return n


def _strict_steps(path: Path) -> list[int]:
    def refuse(name: str) -> None:
        raise ValueError(name)

    return [json.loads(line, parse_constant=refuse)["step"] for line in path.read_bytes().decode().splitlines()]


def test_a_row_cut_by_a_full_disk_is_completed_even_when_rows_are_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = _SmallDisk(free=1_000)
    monkeypatch.setattr(writer, "open", disk.open, raising=False)
    monkeypatch.setattr(writer, "MAX_PENDING", 5)
    w = RunWriter(tmp_path / "metrics.jsonl", lambda _: None)
    for step in range(100):  # the disk fills part-way through a row; 5 rows are kept, the oldest whole ones go
        w.write({"step": step, "note": "x" * 40})
    assert w.dropped > 0
    disk.free = 1 << 20
    for step in range(100, 103):
        w.write({"step": step, "note": "x" * 40})
    w.close()
    steps = _strict_steps(tmp_path / "metrics.jsonl")  # every line whole: the cut row was finished, not dropped
    assert steps == sorted(steps) and steps[-3:] == [100, 101, 102]
    assert len(steps) == 103 - w.dropped


def test_a_row_cut_by_a_full_disk_is_written_whole_to_a_replaced_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = _SmallDisk(free=50)
    monkeypatch.setattr(writer, "open", disk.open, raising=False)
    path = tmp_path / "metrics.jsonl"
    w = RunWriter(path, lambda _: None)
    w.write({"step": 0, "note": "x" * 80})  # cut after 50 bytes
    path.rename(tmp_path / "old.jsonl")  # log rotation moves the file away
    disk.free = 1 << 20
    w.write({"step": 1})
    w.close()
    assert _strict_steps(path) == [0, 1]


def test_resuming_a_file_that_ends_in_a_partial_line_keeps_the_first_new_row(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step":0}\n{"step":1,"lo')  # what a crash leaves
    with StepLogger([Col("step", 5, "step", "d")], run_dir=run, console=False, alerts=False) as sl:
        for step in (2, 3, 4):
            sl.log({"step": step})
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert lines[:2] == ['{"step":0}', '{"step":1,"lo']  # the partial line stays one bad line
    assert [json.loads(line)["step"] for line in lines[2:]] == [2, 3, 4]


def test_a_relative_run_dir_survives_a_chdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    with StepLogger([Col("step", 5, "step", "d")], run_dir="logs/A", console=False, alerts=False) as sl:
        sl.log({"step": 0})
        os.chdir(tmp_path / "elsewhere")
        sl.log({"step": 1})
    run = tmp_path / "logs" / "A"
    assert jsonl_steps(run / "metrics.jsonl") == [0, 1] and (run / "table.txt").exists()
    assert not (tmp_path / "elsewhere" / "logs").exists()


def test_an_int_subclass_prints_its_number_not_its_text() -> None:
    class Sneaky(int):
        def __str__(self) -> str:
            return "\x1b[2J"

        def __format__(self, spec: str) -> str:
            return "\x1b]0;owned\x07"

    cols = [Col("step", 5, "step", "d"), Col("n", 8, "n"), Col("m", 8, "m", "d"), Col("f", 8, "f", ".1f")]
    sl = StepLogger(cols, console=False, alerts=False)
    line = sl.log({"step": 1, "n": Sneaky(5), "m": Sneaky(6), "f": Sneaky(7)})
    assert line is not None and "\x1b" not in line
    assert line.split() == ["1", "5", "6", "7.0"]


def test_numpy_longdouble_is_written_as_a_number() -> None:
    row = json.loads(encode_row({"lr": np.longdouble(3e-4), "x": np.longdouble("inf"), "y": np.float16(0.5)}))
    assert row == {"lr": pytest.approx(3e-4), "x": None, "y": 0.5}


def test_a_metrics_dict_changed_while_it_is_read_loses_no_row(tmp_path: Path) -> None:
    """Another thread (an evaluation callback) may add keys to the loop's metrics dict while log() reads it.
    Made deterministic here: reading one value adds a key, exactly where a thread switch would."""
    shared: dict[str, Any] = {"step": 0, "loss": 0.1}

    class Scalar:  # a 0-d array-like: log() reads it with .item(), as it reads a tensor
        ndim = 0

        def item(self) -> float:
            shared[f"eval/{len(shared)}"] = 0.5
            return 1.0

    with StepLogger(EMA_COLS, run_dir=tmp_path, console=False, alerts=False) as sl:
        for step in range(5):
            shared["step"], shared["ema"] = step, Scalar()
            sl.log(shared)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(5)) and all(r["ema"] == 1.0 for r in rows)


def test_small_arrays_are_written_as_json_lists() -> None:
    row = json.loads(encode_row({"a": np.array([1, 2]), "m": np.array([[1.5, np.nan]]), "big": np.arange(5000.0)}))
    assert row["a"] == [1, 2] and row["m"] == [[1.5, None]]  # they were the text "[1 2]"
    assert isinstance(row["big"], str) and "..." in row["big"]  # a big one stays numpy's short summary


def test_the_dump_sits_under_the_streamed_rows(captured: list[str]) -> None:
    with StepLogger(EMA_COLS, alerts=False) as sl:
        row = sl.log({"step": 1, "loss": 0.5, "ema": 0.25})
    dump = captured[-1].rstrip("\n").splitlines()
    assert dump[0].endswith("end of run: 1 rows") and row is not None
    assert "  " + row in dump[1:]  # two cells in, as the icon and its space put the streamed row: column for column


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_whose_reader_left_never_blocks_the_loop(tmp_path: Path) -> None:
    """metrics.jsonl as a FIFO (someone piping the rows elsewhere): when its reader exits, or before one comes, the
    next row fails and is kept for retry; the loop never waits in open() for a reader."""
    code = textwrap.dedent(
        """
        import os, subprocess, sys, time
        from steptable import Col, StepLogger
        run = sys.argv[1]
        os.makedirs(run)
        os.mkfifo(run + "/metrics.jsonl")
        reader = subprocess.Popen(["head", "-n", "1", run + "/metrics.jsonl"], stdout=subprocess.DEVNULL)
        sl = StepLogger([Col("step", 4, "step", "d")], run_dir=run, console=False, alerts=False)
        step = 0
        while reader.poll() is None and step < 2000:  # until head has its line and is gone (or has not come yet)
            sl.log({"step": step})
            step += 1
            time.sleep(0.01)
        for step in range(step, step + 30):
            sl.log({"step": step})
        sl.close()
        sys.stderr.write("DONE\\n")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "arm")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "DONE" in proc.stderr, proc.stderr
    assert "row(s) kept for retry" in proc.stderr and "could not be written" in proc.stderr


def test_a_fifo_without_a_reader_fails_the_write_at_once(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs")
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    warned: list[str] = []
    w = RunWriter(fifo, warned.append)
    assert w.write({"step": 0}) is False and w.pending == 1  # would block forever in open() before
    assert len(warned) == 1 and "kept for retry" in warned[0]


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
    assert "end of run: 6 rows" in text and "I    5  +0.100" in text, text
    assert capsys.readouterr().err.count("lines are dropped while it fails") == 1


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


def test_console_false_sends_alerts_to_the_verbose_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from steptable import setup_logging

    path = setup_logging("quiet-alerts", log_dir=tmp_path)
    with StepLogger([Col("step", 4, "step", "d"), Col("loss", 6, "loss")], console=False) as sl:
        for step in range(3):
            sl.log({"step": step, "loss": float("nan") if step == 2 else 0.5})
    assert "non-finite" not in capsys.readouterr().out
    text = path.read_text()
    assert "loss non-finite" in text and "   2 " not in text  # the alert, not the rows


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
        import os, sys
        from steptable import Col, StepLogger
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


def test_a_rotated_jsonl_gets_the_rows_after_the_rotation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str],
                                                          captured: list[str]) -> None:
    """logrotate (rename, then create) mid-run: every later row went on into the renamed file, so the path every
    reader follows stayed empty (summary: no rows; table.txt: a header)."""
    sl = StepLogger(EMA_COLS, run_dir=tmp_path, console=False, alerts=False)
    jsonl = tmp_path / "metrics.jsonl"
    for s in range(20):
        if s == 10:
            jsonl.rename(tmp_path / "metrics.jsonl.1")
            jsonl.touch()
        sl.log({"step": s, "loss": 0.5})
    sl.close()
    steps = [json.loads(x)["step"] for x in jsonl.read_text().splitlines()]
    old = [json.loads(x)["step"] for x in (tmp_path / "metrics.jsonl.1").read_text().splitlines()]
    assert old == list(range(10)) and steps == list(range(10, 20))
    told = capsys.readouterr().err + "".join(captured)  # (stderr, or loguru where setup_logging ran before)
    assert told.count("was moved or replaced during the run") == 1


def test_a_moved_run_directory_or_a_repointed_symlink_is_no_rotation(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """run_dir=outputs/latest (a symlink the next launch points at its own run), or the run directory renamed while
    training: the rows go on into the open file (a reopen wrote one run's rows into the next run's file, or split
    the run in two)."""
    a, b = tmp_path / "run-A", tmp_path / "run-B"
    a.mkdir()
    b.mkdir()
    latest = tmp_path / "latest"
    latest.symlink_to(a)
    sl = StepLogger(EMA_COLS, run_dir=latest, console=False, alerts=False)
    for s in range(6):
        if s == 3:
            latest.unlink()
            latest.symlink_to(b)  # the next run started
        sl.log({"step": s, "loss": 0.5})
    sl._writer.close()  # type: ignore[union-attr]
    assert [json.loads(x)["step"] for x in (a / "metrics.jsonl").read_text().splitlines()] == list(range(6))
    assert not (b / "metrics.jsonl").exists()
    moved = StepLogger(EMA_COLS, run_dir=tmp_path / "exp1", console=False, alerts=False)
    for s in range(6):
        if s == 3:
            (tmp_path / "exp1").rename(tmp_path / "exp1_lr1e-6")
        moved.log({"step": s, "loss": 0.5})
    moved._writer.close()  # type: ignore[union-attr]
    rows = (tmp_path / "exp1_lr1e-6" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in rows] == list(range(6)) and not (tmp_path / "exp1").exists()


def test_rows_never_land_in_the_run_a_repointed_link_now_leads_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   captured: list[str],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """run_dir=latest -> run-A; the next launch points latest at run-B and run-A is deleted: the reopen after the
    deletion appended this run's rows to run-B's file. Now they are kept (said once, counted at close)."""
    a, b = tmp_path / "run-A", tmp_path / "run-B"
    a.mkdir()
    b.mkdir()
    (b / "metrics.jsonl").write_text('{"step": 0, "loss": 9.0}\n')
    latest = tmp_path / "latest"
    latest.symlink_to(a)
    sl = StepLogger(EMA_COLS, run_dir=latest, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    repoint(latest, b, a)
    for s in range(1, 4):
        sl.log({"step": s, "loss": 0.5})
    sl.close()
    assert (b / "metrics.jsonl").read_text() == '{"step": 0, "loss": 9.0}\n'
    told = capsys.readouterr().err + "".join(captured)
    assert "another directory than the run's" in told
    # a run directory deleted (no link on the way) is made again, as before
    plain = StepLogger(EMA_COLS, run_dir=tmp_path / "plain", console=False, alerts=False)
    plain.log({"step": 0, "loss": 0.5})
    shutil.rmtree(tmp_path / "plain")
    plain.log({"step": 1, "loss": 0.5})
    plain._writer.close()  # type: ignore[union-attr]
    assert [json.loads(x)["step"] for x in (tmp_path / "plain" / "metrics.jsonl").read_text().splitlines()] == [1]
