"""steptable.logger.writer: RunWriter appends strict JSON rows and never raises into the loop: which rows an
outage keeps (by count and by bytes) and what it says, a row cut short, Ctrl-C with rows queued, FIFOs, rotation,
deleted, moved or unreadable files."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from steptable import StepLogger
from steptable.logger import rowjson, writer
from steptable.logger.writer import RunWriter, encode_row
from steptable.table.jsonvalues import jsonable
from tests.helpers import repoint, run_cli
from tests.logger.helpers import EMA_COLS, SIGNED_LOSS_COLS, Clock, jsonl_steps, opens_non_blocking, strict_loads

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def _steps(data: bytes) -> list[int]:
    return [json.loads(line)["step"] for line in data.decode().splitlines()]


class _Disk:
    """writer's open(): files opened for appending on a disk that can be ``full`` (ENOSPC), have only ``free`` bytes
    left (a short write, then ENOSPC), or get a Ctrl-C right after the next write (``interrupt``). Reads can be
    refused (``readable``), as for a file with mode -w-."""

    def __init__(self) -> None:
        self.full, self.free, self.interrupt, self.readable = False, 1 << 30, False, True

    def open(self, path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "r" in mode and not self.readable:
            raise PermissionError(13, "Permission denied", str(path))
        fh = open(path, mode, *args, **kwargs)  # handed to the writer, which closes it
        return _Disk.Append(fh, self) if "a" in mode else fh

    class Append:
        def __init__(self, fh: Any, disk: _Disk) -> None:
            self.fh, self.disk = fh, disk

        def fileno(self) -> int:
            fd: int = self.fh.fileno()
            return fd

        def close(self) -> None:
            self.fh.close()

        def write(self, data: bytes) -> int:
            if self.disk.full or self.disk.free <= 0:
                raise OSError(28, "No space left on device")
            n: int = self.fh.write(data[: self.disk.free])
            self.disk.free -= n
            if self.disk.interrupt:
                self.disk.interrupt = False
                raise KeyboardInterrupt
            return n


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> _Disk:
    d = _Disk()
    monkeypatch.setattr(writer, "open", d.open, raising=False)
    return d


def test_an_outage_keeps_the_newest_100000_rows_and_close_says_how_many_went(monkeypatch: pytest.MonkeyPatch) -> None:
    """100 000 rows are kept for retry: the 100 001st drops exactly one, the oldest, and close() says both numbers."""

    def refuse(self: RunWriter) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RunWriter, "_open", refuse)
    warned: list[str] = []
    w = RunWriter("/nonexistent/metrics.jsonl", warned.append)
    for step in range(100_001):
        w.write({"step": step})
    assert (w.pending, w.dropped) == (100_000, 1)
    w.close()
    assert "100000 row(s) could not be written" in warned[-1] and "1 oldest row(s) dropped" in warned[-1]


def test_an_outage_drops_the_oldest_rows_and_the_rest_arrive_in_order(tmp_path: Path, disk: _Disk,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer, "MAX_PENDING", 3)
    warned: list[str] = []
    w = RunWriter(tmp_path / "metrics.jsonl", warned.append)
    disk.full = True
    for step in range(6):
        assert w.write({"step": step}) is False
    disk.full = False
    assert w.write({"step": 6}) is True
    w.close()
    assert _steps((tmp_path / "metrics.jsonl").read_bytes()) == [4, 5, 6]
    assert warned[-1].endswith("works again; late rows written, 4 oldest row(s) dropped while it failed")


def test_an_outage_keeps_the_newest_rows_that_fit_the_byte_budget(tmp_path: Path, disk: _Disk,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of very different sizes: what survives is the newest rows whose bytes fit the budget, counted exactly
    (the budget here is one byte short of the last four rows: three are kept)."""
    rows = [{"step": s, "x": "x" * n} for s, n in enumerate([5, 200, 40, 1, 90, 3, 150, 7, 60, 2])]
    sizes = [len(encode_row(r)) for r in rows]
    monkeypatch.setattr(writer, "MAX_PENDING_BYTES", sum(sizes[-4:]) - 1)
    w = RunWriter(tmp_path / "metrics.jsonl", lambda _: None)
    disk.full = True
    for row in rows:
        w.write(row)
    disk.full = False
    w.close()
    assert _steps((tmp_path / "metrics.jsonl").read_bytes()) == [7, 8, 9] and w.dropped == 7


def test_the_byte_budget_is_exact_after_a_cut_row_is_rewritten_whole(tmp_path: Path, disk: _Disk,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A row cut by a full disk, then the file rotated: the row is written whole to the new file, and the bytes kept
    for retry are counted right after it (a later outage keeps as many rows as its budget holds)."""
    path = tmp_path / "metrics.jsonl"
    monkeypatch.setattr(writer, "MAX_PENDING_BYTES", 3 * len(encode_row({"step": 10})))
    w = RunWriter(path, lambda _: None)
    disk.free = 30
    w.write({"step": 0, "note": "x" * 40})  # cut after 30 bytes
    path.rename(tmp_path / "metrics.jsonl.1")
    disk.free = 1 << 30
    assert w.write({"step": 1}) is True
    disk.full = True
    for step in range(10, 15):
        w.write({"step": step})
    disk.full = False
    w.close()
    assert _steps(path.read_bytes()) == [0, 1, 12, 13, 14]


@pytest.mark.parametrize("before", [0, 2])
def test_a_short_write_is_reported_with_how_much_of_the_row_landed(tmp_path: Path, disk: _Disk, before: int) -> None:
    """The row that opens the file, or one written in the steady state (the file open, nothing waiting, no check
    due: its one write): cut by a full disk, reported, completed later."""
    warned: list[str] = []
    w = RunWriter(tmp_path / "metrics.jsonl", warned.append)
    for step in range(-before, 0):
        assert w.write({"step": step}) is True
    row = {"step": 0, "note": "x" * 80}
    disk.free = 50
    assert w.write(row) is False and w.pending == 1
    assert f"short write (50 of {len(encode_row(row))} bytes)" in warned[0]
    disk.free = 1 << 30
    assert w.write({"step": 1}) is True
    w.close()
    assert _steps((tmp_path / "metrics.jsonl").read_bytes()) == [*range(-before, 0), 0, 1]  # the line completed
    assert "works again" in warned[-1] and w.written == before + 2


def test_a_failed_write_in_the_steady_state_keeps_the_row_for_retry(tmp_path: Path, disk: _Disk) -> None:
    warned: list[str] = []
    w = RunWriter(tmp_path / "metrics.jsonl", warned.append)
    assert w.write({"step": 0}) is True
    disk.full = True
    assert w.write({"step": 1}) is False and w.pending == 1 and "kept for retry" in warned[0]
    disk.full = False
    assert w.write({"step": 2}) is True
    w.close()
    assert _steps((tmp_path / "metrics.jsonl").read_bytes()) == [0, 1, 2] and w.written == 3


def test_ctrl_c_after_a_write_with_rows_queued_writes_each_row_once(tmp_path: Path, disk: _Disk) -> None:
    """Rows queued by an outage; the disk recovers and Ctrl-C lands right after the first of them is written: close()
    must not write that one a second time."""
    w = RunWriter(tmp_path / "metrics.jsonl", lambda _: None)
    disk.full = True
    w.write({"step": 0})
    w.write({"step": 1})
    disk.full, disk.interrupt = False, True
    with pytest.raises(KeyboardInterrupt):
        w.write({"step": 2})
    w.close()
    assert _steps((tmp_path / "metrics.jsonl").read_bytes()) == [0, 1, 2]


def test_a_row_that_cannot_be_encoded_is_skipped_with_one_warning(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The last guard (jsonable leaves nothing json.dumps refuses): the row is skipped, said once, and write() still
    answers "nothing pending"."""
    monkeypatch.setattr(rowjson, "jsonable", lambda r: object() if "bad" in r else jsonable(r))
    warned: list[str] = []
    w = RunWriter(tmp_path / "metrics.jsonl", warned.append)
    assert w.write({"step": 0}) is True
    assert w.write({"step": 1, "bad": [1]}) is True  # (a list: the general path, through jsonable)
    assert w.write({"step": 2, "bad": [1]}) is True
    assert w.write({"step": 3}) is True
    w.close()
    assert _steps((tmp_path / "metrics.jsonl").read_bytes()) == [0, 3]
    assert len(warned) == 1 and "a row could not be encoded" in warned[0] and "reported once" in warned[0]


def test_the_run_directory_and_its_missing_parents_are_made(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "exp1" / "seed0" / "metrics.jsonl"
    warned: list[str] = []
    w = RunWriter(path, warned.append)
    assert w.write({"step": 0}) is True
    w.close()
    assert _steps(path.read_bytes()) == [0] and warned == []


def test_a_file_that_cannot_be_read_back_gets_no_blank_line(tmp_path: Path, disk: _Disk) -> None:
    """Resuming into a file whose last byte cannot be read (mode -w-): nothing says its last line is partial, so no
    newline is added (each reopen added an empty line)."""
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"step":0}\n')
    disk.readable = False
    w = RunWriter(path, lambda _: None)
    w.write({"step": 1})
    w.close()
    assert path.read_bytes() == b'{"step":0}\n{"step":1}\n'


def _unlinked_between_rows(path: Path, clock: Clock) -> tuple[RunWriter, list[str]]:
    """Rows 0 and 1 written to ``path`` with the file unlinked between them and the check's interval run out; the
    writer closed, its warnings."""
    warned: list[str] = []
    w = RunWriter(path, warned.append)
    w.write({"step": 0})
    path.unlink()
    clock.advance()
    assert w.write({"step": 1}) is True
    w.close()
    return w, warned


def test_a_deleted_file_is_reported_as_deleted_not_moved(tmp_path: Path, clock: Clock) -> None:
    """With the rotation check due, a deleted file is still "deleted": the two warnings tell the user different
    things (the rows before it are gone, versus in the renamed file)."""
    path = tmp_path / "metrics.jsonl"
    w, warned = _unlinked_between_rows(path, clock)
    assert (w.deleted, w.moved) == (1, 0) and len(warned) == 1 and "was deleted during the run" in warned[0]
    assert _steps(path.read_bytes()) == [1]


def test_a_descriptor_closed_behind_the_writers_back_is_a_failure_not_a_rotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library closing inherited descriptors closed the JSONL's: the write fails and the row is retried on a fresh
    descriptor; nothing was moved, so no "moved or replaced" warning."""
    path = tmp_path / "metrics.jsonl"
    warned: list[str] = []
    w = RunWriter(path, warned.append)
    w.write({"step": 0})
    assert w._fh is not None
    os.close(w._fh.fileno())
    assert w.write({"step": 1}) is False
    assert w.write({"step": 2}) is True
    w.close()
    assert w.moved == 0 and not any("moved" in m for m in warned) and "kept for retry" in warned[0]
    assert _steps(path.read_bytes()) == [0, 1, 2]


@needs_fifo
def test_a_fifo_whose_reader_does_not_read_refuses_rows_instead_of_blocking(tmp_path: Path) -> None:
    """A full pipe fails the write (the rows are kept) and the loop goes on; once the reader reads, every row arrives
    once, in order. (The descriptor must be non-blocking: checked first, so that a blocking one fails the test
    instead of hanging it; steptable.logger.appendfile's test checks it alone.)"""
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert opens_non_blocking(fifo)
        warned: list[str] = []
        w = RunWriter(fifo, warned.append)
        pad = "x" * 1000
        step = 0
        while w.write({"step": step, "pad": pad}):
            step += 1
            assert step < 1000, "the pipe never filled"
        assert w.pending == 1 and "kept for retry" in warned[0]
        got = b""
        while chunk := os.read(rfd, 1 << 16):
            got += chunk
        assert w.write({"step": step + 1, "pad": pad}) is True
        w.close()
        got += os.read(rfd, 1 << 16)
        assert _steps(got) == list(range(step + 2))
    finally:
        os.close(rfd)


@needs_fifo
def test_rows_go_on_into_a_fifo_that_was_unlinked(tmp_path: Path, clock: Clock) -> None:
    """A FIFO removed from the directory still reaches its reader: the rows go on into it, with no "deleted" warning
    and no regular file made in its place."""
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        _, warned = _unlinked_between_rows(fifo, clock)
        assert _steps(os.read(rfd, 1 << 16)) == [0, 1]
        assert warned == [] and not fifo.exists()
    finally:
        os.close(rfd)


ESC_DIR = "run\x1b]0;PWNED\x07\x1b[2J"  # a window title and a screen clear: "run" once made inert


def test_a_write_failure_names_the_directory_a_link_leads_to_inert(
    tmp_path: Path, clock: Clock, captured: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "run-A", tmp_path / ("run-B" + ESC_DIR)
    a.mkdir()
    b.mkdir()
    latest = tmp_path / "latest"
    latest.symlink_to(a)
    sl = StepLogger(SIGNED_LOSS_COLS, run_dir=latest, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    repoint(latest, b, a)
    clock.advance()
    sl.log({"step": 1, "loss": 0.5})
    sl.close()
    told = capsys.readouterr().err + "".join(captured)
    assert f"now leads to {tmp_path}/run-Brun, another directory" in told and "\x1b" not in told


def test_writer_recovers_and_writes_late_rows(tmp_path: Path) -> None:
    from steptable.logger.writer import RunWriter

    target = tmp_path / "blocked"
    target.write_text("a file where the run directory should be")
    warnings: list[str] = []
    w = RunWriter(target / "metrics.jsonl", warnings.append)
    for i in range(5):
        assert w.write({"step": i}) is False
    assert len(warnings) == 1 and w.pending == 5
    target.unlink()
    assert w.write({"step": 5}) is True
    rows = [strict_loads(x) for x in (target / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if isinstance(r, dict)] == list(range(6))
    assert "works again" in warnings[-1]


def test_unserialisable_value_is_stringified(tmp_path: Path) -> None:
    from steptable.logger.writer import RunWriter

    w = RunWriter(tmp_path / "m.jsonl", lambda _: None)
    w.write({"step": 1, "obj": object(), "nested": {"a": (1, math.nan)}})
    row = strict_loads((tmp_path / "m.jsonl").read_text())
    assert isinstance(row, dict) and row["nested"] == {"a": [1, None]} and str(row["obj"]).startswith("<object")


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


def test_a_fifo_without_a_reader_fails_the_write_at_once(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs")
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    warned: list[str] = []
    w = RunWriter(fifo, warned.append)
    assert w.write({"step": 0}) is False and w.pending == 1  # (a blocking open() would wait forever)
    assert len(warned) == 1 and "kept for retry" in warned[0]


def test_a_rotated_jsonl_gets_the_rows_after_the_rotation(tmp_path: Path, clock: Clock,
                                                          capsys: pytest.CaptureFixture[str],
                                                          captured: list[str]) -> None:
    """logrotate (rename, then create) mid-run: the rows after the next check go to the new file at the path every
    reader follows, not on into the renamed file (which would leave summary no rows and table.txt a header); the
    rows written within the check's interval after the rotation went on into the renamed file."""
    sl = StepLogger(EMA_COLS, run_dir=tmp_path, console=False, alerts=False)
    jsonl = tmp_path / "metrics.jsonl"
    for s in range(20):
        if s == 8:
            jsonl.rename(tmp_path / "metrics.jsonl.1")
            jsonl.touch()
            clock.advance(writer.CHECK_S / 2)
        if s == 10:
            clock.advance(writer.CHECK_S / 2)  # (the interval since the last check runs out at this row)
        sl.log({"step": s, "loss": 0.5})
    sl.close()
    steps = [json.loads(x)["step"] for x in jsonl.read_text().splitlines()]
    old = [json.loads(x)["step"] for x in (tmp_path / "metrics.jsonl.1").read_text().splitlines()]
    assert old == list(range(10)) and steps == list(range(10, 20))
    told = capsys.readouterr().err + "".join(captured)  # (stderr, or loguru where setup_logging ran before)
    assert told.count("was moved or replaced during the run") == 1


def test_a_moved_run_directory_or_a_repointed_symlink_is_no_rotation(tmp_path: Path, clock: Clock) -> None:
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
            clock.advance()
        sl.log({"step": s, "loss": 0.5})
    sl._writer.close()  # type: ignore[union-attr]
    assert [json.loads(x)["step"] for x in (a / "metrics.jsonl").read_text().splitlines()] == list(range(6))
    assert not (b / "metrics.jsonl").exists()
    moved = StepLogger(EMA_COLS, run_dir=tmp_path / "exp1", console=False, alerts=False)
    for s in range(6):
        if s == 3:
            (tmp_path / "exp1").rename(tmp_path / "exp1_lr1e-6")
            clock.advance()
        moved.log({"step": s, "loss": 0.5})
    moved._writer.close()  # type: ignore[union-attr]
    rows = (tmp_path / "exp1_lr1e-6" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in rows] == list(range(6)) and not (tmp_path / "exp1").exists()


def test_rows_never_land_in_the_run_a_repointed_link_now_leads_to(tmp_path: Path, clock: Clock,
                                                                   captured: list[str],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """run_dir=latest -> run-A; the next launch points latest at run-B and run-A is deleted: the reopen after the
    deletion does not append this run's rows to run-B's file: they are kept (said once, counted at close)."""
    a, b = tmp_path / "run-A", tmp_path / "run-B"
    a.mkdir()
    b.mkdir()
    (b / "metrics.jsonl").write_text('{"step": 0, "loss": 9.0}\n')
    latest = tmp_path / "latest"
    latest.symlink_to(a)
    sl = StepLogger(EMA_COLS, run_dir=latest, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    repoint(latest, b, a)
    clock.advance()
    for s in range(1, 4):
        sl.log({"step": s, "loss": 0.5})
    sl.close()
    assert (b / "metrics.jsonl").read_text() == '{"step": 0, "loss": 9.0}\n'
    told = capsys.readouterr().err + "".join(captured)
    assert "another directory than the run's" in told
    # a run directory deleted (no link on the way) is made again
    plain = StepLogger(EMA_COLS, run_dir=tmp_path / "plain", console=False, alerts=False)
    plain.log({"step": 0, "loss": 0.5})
    shutil.rmtree(tmp_path / "plain")
    clock.advance()
    plain.log({"step": 1, "loss": 0.5})
    plain._writer.close()  # type: ignore[union-attr]
    assert [json.loads(x)["step"] for x in (tmp_path / "plain" / "metrics.jsonl").read_text().splitlines()] == [1]


def test_a_row_costs_no_stat_within_the_interval_and_one_stat_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    """The steady state: within CHECK_S seconds of the last check a row costs no stat and no fstat; the first row
    at CHECK_S or more after it one stat (and none after the write while the path leads to the open file); the
    file holds every row."""
    path = tmp_path / "metrics.jsonl"
    w = RunWriter(path, lambda _: None)
    w.write({"step": 0})  # (opening the file takes its own fstat calls, and counts as a check)
    calls = {"stat": 0, "fstat": 0}
    stat, fstat = os.stat, os.fstat

    def counted(name: str, f: Any) -> Any:
        def call(*a: Any, **k: Any) -> Any:
            calls[name] += 1
            return f(*a, **k)
        return call

    monkeypatch.setattr(os, "stat", counted("stat", stat))
    monkeypatch.setattr(os, "fstat", counted("fstat", fstat))
    for step in range(1, 11):
        clock.advance(writer.CHECK_S * 3 / 32)  # (ten rows within 30/32 of the interval: steps exact in binary)
        assert w.write({"step": step}) is True
    assert calls == {"stat": 0, "fstat": 0}
    clock.advance(writer.CHECK_S / 16)  # (32/32: due)
    assert w.write({"step": 11}) is True
    assert calls == {"stat": 1, "fstat": 0}
    for step in range(12, 15):
        assert w.write({"step": step}) is True
    assert calls == {"stat": 1, "fstat": 0}
    monkeypatch.undo()
    w.close()
    assert jsonl_steps(path) == list(range(15))


def test_a_row_too_long_for_the_readers_is_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A row whose line is MAX_LINE bytes or more (a whole completion logged as a value) is written, and said once:
    every reader skips it, and the rows around it stay. A line one byte shorter is read and not warned about."""
    from steptable.ingest.files.tail import MAX_LINE

    def row(step: int, size: int) -> dict[str, Any]:
        """A row whose line is ``size`` bytes without its newline."""
        base = len(encode_row({"step": step, "s": ""})) - 1
        return {"step": step, "s": "x" * (size - base)}

    path = tmp_path / "run" / "metrics.jsonl"
    warned: list[str] = []
    w = RunWriter(path, warned.append)
    for r in ({"step": 0, "loss": 1.0}, row(1, MAX_LINE - 1), {"step": 2, "loss": 0.5}):
        w.write(r)
    assert warned == []
    for r in (row(3, MAX_LINE), row(4, 2 * MAX_LINE), {"step": 5, "loss": 0.25}):
        w.write(r)
    w.close()
    assert len(warned) == 1 and "readers skip a line of 8 MiB or more" in warned[0] and "reported once" in warned[0]
    rc, out, err = run_cli(["tail", "-n", "0", "--format", "jsonl", str(path)], capsys)
    assert rc == 0 and [json.loads(line)["step"] for line in out.splitlines()] == [0, 1, 2, 5]
    assert "metrics.jsonl:4: line of 8 MiB or more skipped" in err and "metrics.jsonl:5: line of 8 MiB" in err
