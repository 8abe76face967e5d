"""Rotation by rename (logrotate's metrics.jsonl -> metrics.jsonl.1): the reader reads the renamed file to its end
before the new one, and the writer's next row goes to the new file."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

import steptable.ingest.files.rotated as rotated_mod
from steptable.ingest import Follower
from steptable.ingest.gaps import Gap
from steptable.logger import writer
from steptable.logger.writer import RunWriter
from tests.logger.helpers import Clock


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


def test_the_writer_reopens_on_the_first_row_its_check_is_due_after_a_rename(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(writer, "monotonic", clock)
    warned: list[str] = []
    path = tmp_path / "metrics.jsonl"
    w = RunWriter(path, warned.append)
    for s in range(3):
        w.write({"step": s})
    os.rename(path, tmp_path / "metrics.jsonl.1")
    clock.advance()  # (the writer checks the path CHECK_S after its last check)
    w.write({"step": 3})
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


def test_a_file_made_and_renamed_away_between_two_reads_is_read_and_the_rest_lost_is_a_gap(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(rows(0, 10))
    f = Follower([path])
    f.scan()
    read = path.stat().st_size
    with open(path, "ab") as w:
        w.write(rows(10, 12))  # not read before the file is deleted: gone
    path.unlink()
    path.write_bytes(rows(12, 20))  # the writer makes it again, and it is rotated before any read
    path.rename(tmp_path / "metrics.jsonl.3")
    (tmp_path / "metrics.jsonl.2.gz").write_bytes(gzip.compress(rows(100, 105)))  # compressed: not a continuation
    path.write_bytes(rows(20, 25))
    f.scan()
    (store,) = f.stores.values()
    assert steps(f) == [*range(10), *range(12, 25)]
    assert store.gaps == [Gap(str(path), read, "deleted or replaced", 9, 12)]
    assert [e for e in f.errors if "rows lost" in e] == [f"{path}: {store.gaps[0].message()}"]
    assert "steps 10-11" in f.errors[-1] and f"byte {read}" in f.errors[-1]


def test_a_file_made_between_two_reads_is_read_as_it_was_found_though_rotated_again_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file made at the path and rotated away before any read is found beside it; rotated once more after it was
    found and before it was read (logrotate: ``.3`` -> ``.4``, the file at the path -> ``.3``, a new one made), the
    file found is the one read, not the file now under its old name (the one at the path, read next: its rows were
    read twice)."""
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(rows(0, 10))
    f = Follower([path])
    f.scan()
    # (each made while the first lives: neither gets its inode number, which would read as the same file)
    (tmp_path / "metrics.jsonl.3").write_bytes(rows(12, 20))
    (tmp_path / "new").write_bytes(rows(20, 25))
    os.replace(tmp_path / "new", path)
    real_text = rotated_mod._text

    def judge_then_rotate(head: bytes) -> bool:  # (the file found is judged by its first bytes)
        if head.startswith(b'{"step": 12') and not (tmp_path / "metrics.jsonl.4").exists():
            (tmp_path / "metrics.jsonl.3").rename(tmp_path / "metrics.jsonl.4")
            path.rename(tmp_path / "metrics.jsonl.3")
            path.write_bytes(rows(25, 30))
        return real_text(head)

    monkeypatch.setattr(rotated_mod, "_text", judge_then_rotate)
    f.scan()
    monkeypatch.setattr(rotated_mod, "_text", real_text)
    f.scan()
    assert steps(f) == [*range(10), *range(12, 30)]


def test_a_replaced_file_that_goes_on_past_the_next_step_is_a_gap_a_relaunch_is_not(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(rows(0, 10))
    f = Follower([path])
    f.scan()
    path.write_bytes(rows(0, 3))  # a relaunch from the top: read again, nothing claimed lost
    f.scan()
    new = tmp_path / "new"
    new.write_bytes(rows(9, 12))  # a file renamed over it, going on past step 3: steps 3-8 never read
    os.replace(new, path)
    f.scan()
    (store,) = f.stores.values()
    assert steps(f) == [9, 10, 11]
    assert [(g.after_step, g.before_step, g.steps()) for g in store.gaps] == [(2, 9, "steps 3-8")]


def test_a_gap_of_a_run_logged_every_tenth_step_counts_by_its_stride(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b"".join(json.dumps({"step": s}).encode() + b"\n" for s in range(0, 50, 10)))
    f = Follower([path])
    f.scan()
    with open(path, "r+b") as w:  # truncated and written again before the follower read the rows after 40
        w.truncate(0)
        w.write(b'{"step": 50}\n{"step": 60}\n')
    f.scan()
    (store,) = f.stores.values()
    assert store.gaps == []  # 50 follows 40 by the run's stride: nothing lost
    with open(path, "r+b") as w:
        w.truncate(0)
        w.write(b'{"step": 90}\n')
    f.scan()
    assert [g.steps() for g in store.gaps] == ["the steps after 60 and before 90"]


def test_a_file_named_after_ours_that_is_no_rotation_of_it_is_not_read_as_its_rest(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"step:0 - loss:1\nstep:1 - loss:1\n")
    f = Follower([path])
    f.scan()
    (tmp_path / "train.log.err").write_bytes(b"step:50 - loss:9\n")  # written after the read, but not a rotation
    path.unlink()
    path.write_bytes(b"step:2 - loss:1\n")
    f.scan()
    assert steps(f) == [2]
