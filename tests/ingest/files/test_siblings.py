"""The newest write beside a run's file: evidence that the run still writes elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

from steptable.ingest.files.siblings import newest_sibling


def test_the_newest_regular_file_beside_it_not_itself_nor_hidden(tmp_path: Path) -> None:
    rows = tmp_path / "metrics.jsonl"
    rows.write_text("{}\n")
    assert newest_sibling(rows) is None
    for name, t in (("train.log", 1000.0), ("config.json", 2000.0), (".metrics.jsonl.lock", 9000.0)):
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (t, t))
    os.utime(rows, (5000.0, 5000.0))
    (tmp_path / "sub").mkdir()  # (a directory is not a write)
    assert newest_sibling(rows) == 2000.0
    assert newest_sibling(tmp_path / "gone" / "metrics.jsonl") is None  # an unreadable directory: nothing
