"""steptable.logger.appendfile: a descriptor that appends without stalling the loop (a FIFO's is non-blocking, a
regular file's blocking), and what became of an open file's path (rotated, replaced, deleted; its last newline)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from steptable.logger.appendfile import dir_id, ends_line, moved, open_append, replaced
from tests.logger.helpers import opens_non_blocking


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_opened_non_blocking_and_a_regular_file_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert opens_non_blocking(fifo)
        regular = open_append(tmp_path / "plain.jsonl")
        assert os.get_blocking(regular)  # (a regular file is made blocking again)
        os.close(regular)
    finally:
        os.close(rfd)


def test_a_rotation_is_moved_a_deletion_only_replaced(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    with open(open_append(path), "ab", buffering=0) as fh:
        st = os.fstat(fh.fileno())
        ident, opened_in = (st.st_dev, st.st_ino), dir_id(tmp_path)
        fh.write(b'{"step": 0}')
        assert not moved(path, fh, ident, opened_in) and not replaced(path, st)
        assert not ends_line(path, ident)  # (a partial last line)
        path.rename(tmp_path / "metrics.jsonl.1")
        path.write_bytes(b"")  # the rotation's new file at the path
        assert moved(path, fh, ident, opened_in) and replaced(path, os.fstat(fh.fileno()))
        assert moved(path, fh, ident, None) is False  # (not known where it was opened: no rotation)
    with open(open_append(path), "ab", buffering=0) as fh:
        st = os.fstat(fh.fileno())
        fh.write(b'{"step": 1}\n')
        assert ends_line(path, (st.st_dev, st.st_ino))
        path.unlink()
        gone = os.fstat(fh.fileno())
        assert replaced(path, gone) and not moved(path, fh, (st.st_dev, st.st_ino), dir_id(tmp_path))
