"""steptable.logger.writer: the file changed between two of the writer's calls, and those calls failing. Each test
forces its interleaving: the os call monkeypatched so the change (or the failure) comes exactly between the two."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from steptable.logger import writer
from steptable.logger.writer import RunWriter
from tests.logger.helpers import Clock


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def _steps(path: Path) -> list[int]:
    return [json.loads(line)["step"] for line in _lines(path) if line]


def _writer(path: Path) -> tuple[RunWriter, list[str]]:
    warned: list[str] = []
    return RunWriter(path, warned.append), warned


def test_a_row_written_after_a_rotation_is_not_written_again_when_the_fstat_after_it_fails(
        tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """At the check after a rotation the row goes to the new file; the fstat that follows the write fails (ESTALE
    from NFS): the row is in the file all the same, so it is not kept for retry (that wrote it a second time)."""
    path, old = tmp_path / "metrics.jsonl", tmp_path / "metrics.jsonl.1"
    w, warned = _writer(path)
    w.write({"step": 0})
    path.rename(old)
    path.touch()  # (logrotate's create)
    clock.advance()
    real_fstat = os.fstat
    wrote: list[int] = []

    def open_watched(*a: Any, **kw: Any) -> Any:
        fh = open(*a, **kw)  # (handed to the writer, which closes it)
        write = fh.write

        def write_then_fail_next_fstat(data: bytes) -> Any:
            n = write(data)
            wrote.append(fh.fileno())
            return n

        fh.write = write_then_fail_next_fstat
        return fh

    def fstat(fd: int) -> os.stat_result:
        if wrote and wrote[-1] == fd:
            wrote.clear()
            raise OSError(errno.ESTALE, "Stale file handle")
        return real_fstat(fd)

    monkeypatch.setattr(writer, "open", open_watched, raising=False)
    monkeypatch.setattr(os, "fstat", fstat)
    w.write({"step": 1})
    monkeypatch.setattr(os, "fstat", real_fstat)
    w.write({"step": 2})
    w.close()
    assert _steps(old) == [0] and _steps(path) == [1, 2]
    assert w.written == 3 and w.moved == 1 and len(warned) == 1 and "moved or replaced" in warned[0]


def test_a_failing_close_of_the_file_is_said(tmp_path: Path) -> None:
    """close(2) of a file on NFS (or under a quota) reports the rows its cache could not write (EIO, EDQUOT): rows
    counted written may not be in the file, and that is said once, not swallowed."""
    path = tmp_path / "metrics.jsonl"
    w, warned = _writer(path)
    w.write({"step": 0})
    fh = w._fh
    assert fh is not None
    close = fh.close

    def close_failing() -> None:
        close()
        raise OSError(errno.EIO, "Input/output error")

    fh.close = close_failing  # type: ignore[method-assign]
    w.close()
    assert len(warned) == 1 and "Input/output error" in warned[0] and str(path) in warned[0]
    assert w._fh is None


def test_a_rotation_between_the_open_and_the_look_at_the_last_line_glues_no_row_to_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash left a partial last line, which the next writer ends before its first row. The file is rotated right
    after that writer opened it: the look at the last line must be at the file opened, or the row is glued to the
    partial line (one bad line: the row lost)."""
    path, old = tmp_path / "metrics.jsonl", tmp_path / "metrics.jsonl.1"
    path.write_bytes(b'{"step": 0}\n{"step": 1, "lo')
    real = writer.open_append

    def open_then_rotate(p: Any) -> int:
        fd = real(p)
        if not old.exists():
            path.rename(old)
            path.write_bytes(b'{"step": 9}\n')  # (a new file at the path that ends its line)
        return fd

    monkeypatch.setattr(writer, "open_append", open_then_rotate)
    w, _ = _writer(path)
    w.write({"step": 2})
    w.close()
    lines = _lines(old)
    assert lines[:2] == [b'{"step": 0}', b'{"step": 1, "lo'] and [json.loads(x)["step"] for x in lines[2:]] == [2]
    assert _steps(path) == [9]


def test_a_path_that_cannot_be_looked_at_is_no_rotation(
        tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run directory's search permission taken away mid-run (or the path's stat failing with EIO): the check
    cannot say where the path leads, which is not the file moved away. The rows go on into the open file, which is
    still at the path, and nothing is said (a "moved" notice, the file closed and its path failing to open again,
    the rows kept for retry until close and lost)."""
    path = tmp_path / "metrics.jsonl"
    w, warned = _writer(path)
    w.write({"step": 0})

    def denied(real: Any) -> Any:
        def call(p: Any, *a: Any, **kw: Any) -> Any:
            if Path(p) == path:
                raise PermissionError(errno.EACCES, "Permission denied", str(p))
            return real(p, *a, **kw)
        return call

    monkeypatch.setattr(os, "stat", denied(os.stat))
    monkeypatch.setattr(os, "open", denied(os.open))
    for step in (1, 2, 3):
        clock.advance()
        w.write({"step": step})
    w.close()
    monkeypatch.undo()
    assert _steps(path) == [0, 1, 2, 3]
    assert (warned, w.moved, w.deleted, w.pending) == ([], 0, 0, 0)


def test_a_link_re_pointed_between_its_look_and_the_open_sends_no_row_to_the_other_run(
        tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_dir=latest`` and the run's file deleted: the writer opens the file at the path again, after making
    sure ``latest`` still leads to its run. The next launch re-points ``latest`` to its own run between that look
    and the open: the rows must not go into the other run's file (they are kept, and said, as when the look itself
    finds ``latest`` re-pointed)."""
    a, b, latest = tmp_path / "run-a", tmp_path / "run-b", tmp_path / "latest"
    a.mkdir()
    b.mkdir()
    (b / "metrics.jsonl").write_bytes(b'{"step": 100}\n')
    latest.symlink_to(a)
    w, warned = _writer(latest / "metrics.jsonl")
    w.write({"step": 0})
    (a / "metrics.jsonl").unlink()
    real = writer.open_append

    def re_point_then_open(p: Any) -> int:
        if latest.resolve() == a:
            latest.unlink()
            latest.symlink_to(b)
        return real(p)

    monkeypatch.setattr(writer, "open_append", re_point_then_open)
    clock.advance()
    w.write({"step": 1})
    w.write({"step": 2})
    w.close()
    assert _steps(b / "metrics.jsonl") == [100]
    assert w.pending == 2 and any("another directory than the run's" in x for x in warned)


def test_a_link_re_pointed_right_after_the_open_is_no_rotation(
        tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_dir=latest``: the next launch re-points ``latest`` to its own run right after this run opened its file,
    before the writer noted the directory it was opened in. A re-pointed link is no rotation: the rows go on into
    this run's file, nothing is said, and the other run's file is not touched (the writer took the link's new
    directory for its own, read the other run's file as a rotation of its file, and kept the rows until close)."""
    a, b, latest = tmp_path / "run-a", tmp_path / "run-b", tmp_path / "latest"
    a.mkdir()
    b.mkdir()
    (b / "metrics.jsonl").write_bytes(b'{"step": 100}\n')
    latest.symlink_to(a)
    real_open, real_stat = writer.open_append, os.stat
    opened: list[bool] = []

    def open_append(p: Any) -> int:
        opened.append(True)
        return real_open(p)

    def stat(p: Any, *args: Any, **kw: Any) -> os.stat_result:
        if opened and Path(p) == latest and latest.resolve() == a:  # (the first look after the open)
            latest.unlink()
            latest.symlink_to(b)
        return real_stat(p, *args, **kw)

    monkeypatch.setattr(writer, "open_append", open_append)
    monkeypatch.setattr(os, "stat", stat)
    w, warned = _writer(latest / "metrics.jsonl")
    for step in range(3):
        clock.advance()
        w.write({"step": step})
    w.close()
    assert _steps(a / "metrics.jsonl") == [0, 1, 2] and _steps(b / "metrics.jsonl") == [100]
    assert (warned, w.moved, w.pending) == ([], 0, 0)
