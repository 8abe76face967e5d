"""steptable.ingest.files.regular: a run's file is opened only where it is a regular file, without blocking."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from steptable.ingest.files.regular import open_regular


def test_a_regular_file_is_read_and_anything_else_refused_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_bytes(b'{"step": 1}\n')
    with open_regular(tmp_path / "metrics.jsonl") as f:
        assert f.read() == b'{"step": 1}\n'
    os.mkfifo(tmp_path / "fifo")  # (no writer: a plain open would wait for one for good)
    os.symlink("/dev/zero", tmp_path / "zero")  # (a read would never end)
    (tmp_path / "dir").mkdir()
    for name in ("fifo", "zero", "dir"):
        with pytest.raises(OSError, match="not a regular file"):
            open_regular(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "missing")
