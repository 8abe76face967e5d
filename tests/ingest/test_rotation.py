"""Rotation by rename (logrotate's metrics.jsonl -> metrics.jsonl.1): the reader reads the renamed file to its end
before the new one, and the writer's next row goes to the new file."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from steptable.ingest import Follower
from steptable.logger.writer import RunWriter


def rows(lo: int, hi: int) -> bytes:
    return b"".join(json.dumps({"step": s, "loss": 1 / (s + 1)}).encode() + b"\n" for s in range(lo, hi))


def steps(f: Follower) -> list[int]:
    (store,) = f.stores.values()
    return list(store.steps)


def test_rows_written_to_a_renamed_file_after_the_last_read_are_read(tmp_path: Path) -> None:
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_bytes(rows(0, 10))
    f = Follower([tmp_path])
    f.scan()
    with open(path, "ab") as w:  # a writer that has not noticed the rename yet
        path.rename(path.with_name("metrics.jsonl.1"))
        w.write(rows(10, 15))
    f.scan()  # the path is missing: the renamed file is read on meanwhile
    assert steps(f) == list(range(15))
    with open(path.with_name("metrics.jsonl.1"), "ab") as w:
        w.write(rows(15, 17))
    path.write_bytes(rows(17, 20))
    f.scan()
    assert steps(f) == list(range(20)) and f.errors == []


def test_three_renames_between_two_reads_lose_only_what_left_the_directory(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(rows(0, 5))
    f = Follower([path])
    f.scan()
    with open(path, "ab") as w:
        w.write(rows(5, 8))
    path.rename(tmp_path / "metrics.jsonl.1")
    path.write_bytes(rows(8, 12))
    f.scan()
    assert steps(f) == list(range(12))


def test_the_writer_reopens_on_the_row_after_a_rename(tmp_path: Path) -> None:
    warned: list[str] = []
    path = tmp_path / "metrics.jsonl"
    w = RunWriter(path, warned.append)
    for s in range(3):
        w.write({"step": s})
    os.rename(path, tmp_path / "metrics.jsonl.1")
    w.write({"step": 3})  # (no wait: the very next row)
    w.close()
    assert json.loads(path.read_text()) == {"step": 3}
    assert (tmp_path / "metrics.jsonl.1").read_text().count("\n") == 3 and w.moved == 1 and len(warned) == 1


def test_rows_left_in_a_copytruncate_copy_are_read_and_the_run_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(rows(0, 10))
    f = Follower([path])
    f.scan()
    with open(path, "ab") as w:
        w.write(rows(10, 14))  # not read yet when logrotate copies and truncates
        shutil.copyfile(path, tmp_path / "metrics.jsonl.1")
        os.truncate(path, 0)
        w.write(rows(14, 16))
    f.scan()
    (store,) = f.stores.values()
    assert steps(f) == list(range(16)) and store.generation == 0 and f.errors == []


def test_a_truncation_without_a_copy_is_still_a_reset(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(rows(0, 10))
    (tmp_path / "metrics.jsonl.1").write_bytes(rows(100, 120))  # an older rotation: not a copy of what was read
    f = Follower([path])
    f.scan()
    path.write_bytes(rows(0, 3))  # verl's relaunch truncates and writes from the top
    f.scan()
    assert steps(f) == [0, 1, 2]
