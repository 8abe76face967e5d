"""The edges of RunWriter: which rows an outage keeps (by count and by bytes) and what it says, a row cut short, a
Ctrl-C with several rows queued, FIFOs, a deleted or unreadable file, a descriptor closed behind its back."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from steptable.logger import writer
from steptable.logger.writer import RunWriter, encode_row, open_append
from steptable.table.jsonvalues import jsonable

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


def test_a_short_write_is_reported_with_how_much_of_the_row_landed(tmp_path: Path, disk: _Disk) -> None:
    warned: list[str] = []
    w = RunWriter(tmp_path / "metrics.jsonl", warned.append)
    row = {"step": 0, "note": "x" * 80}
    disk.free = 50
    assert w.write(row) is False
    assert f"short write (50 of {len(encode_row(row))} bytes)" in warned[0]
    disk.free = 1 << 30
    w.close()
    assert _steps((tmp_path / "metrics.jsonl").read_bytes()) == [0]  # and the rest of it completed the line


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
    monkeypatch.setattr(writer, "jsonable", lambda r: object() if "bad" in r else jsonable(r))
    warned: list[str] = []
    w = RunWriter(tmp_path / "metrics.jsonl", warned.append)
    assert w.write({"step": 0}) is True
    assert w.write({"step": 1, "bad": 1}) is True
    assert w.write({"step": 2, "bad": 1}) is True
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


def _unlinked_between_rows(path: Path) -> tuple[RunWriter, list[str]]:
    """Rows 0 and 1 written to ``path`` with the file unlinked between them; the writer closed, its warnings."""
    warned: list[str] = []
    w = RunWriter(path, warned.append)
    w.write({"step": 0})
    path.unlink()
    assert w.write({"step": 1}) is True
    w.close()
    return w, warned


def test_a_deleted_file_is_reported_as_deleted_not_moved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the rotation check due (it runs once a second), a deleted file is still "deleted": the two warnings tell
    the user different things (the rows before it are gone, versus in the renamed file)."""
    path = tmp_path / "metrics.jsonl"
    w, warned = _unlinked_between_rows(path)
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
    once, in order. (The descriptor must be non-blocking: checked first, so a regression fails instead of hanging.)"""
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        probe = open_append(fifo)
        blocking = os.get_blocking(probe)
        os.close(probe)
        assert not blocking
        regular = open_append(tmp_path / "plain.jsonl")
        assert os.get_blocking(regular)  # (a regular file is made blocking again)
        os.close(regular)
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
def test_rows_go_on_into_a_fifo_that_was_unlinked(tmp_path: Path) -> None:
    """A FIFO removed from the directory still reaches its reader: the rows go on into it, with no "deleted" warning
    and no regular file made in its place."""
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        _, warned = _unlinked_between_rows(fifo)
        assert _steps(os.read(rfd, 1 << 16)) == [0, 1]
        assert warned == [] and not fifo.exists()
    finally:
        os.close(rfd)
