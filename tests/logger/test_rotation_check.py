"""steptable.logger.writer: whether the path still leads to the open file is checked on a clock (CHECK_S), not at
every row: rows within the interval after a rotation or a deletion go where the rows before them went, the first
row after it to the file at the path; at close, and after a write error, the check is made whatever the clock
says. The counts and the warning once are as a check at a row makes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steptable.logger import writer
from steptable.logger.writer import RunWriter
from tests.logger.helpers import Clock


def _steps(path: Path) -> list[int]:
    return [json.loads(line)["step"] for line in path.read_bytes().splitlines()]


def _writer(path: Path) -> tuple[RunWriter, list[str]]:
    warned: list[str] = []
    return RunWriter(path, warned.append), warned


def test_rows_within_the_interval_after_a_rotation_go_to_the_renamed_file(tmp_path: Path, clock: Clock) -> None:
    path, old = tmp_path / "metrics.jsonl", tmp_path / "metrics.jsonl.1"
    w, warned = _writer(path)
    w.write({"step": 0})
    path.rename(old)
    path.touch()  # (logrotate's create)
    for step in (1, 2, 3):
        clock.advance(writer.CHECK_S / 4)
        w.write({"step": step})
    assert (w.moved, warned) == (0, [])
    clock.advance(writer.CHECK_S / 4)  # (the interval since the open has run out: this row checks)
    for step in (4, 5):
        w.write({"step": step})
    w.close()
    assert _steps(old) == [0, 1, 2, 3] and _steps(path) == [4, 5]
    assert w.moved == 1 and len(warned) == 1 and "was moved or replaced during the run" in warned[0]


def test_rows_within_the_interval_after_a_deletion_go_with_the_deleted_file(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "metrics.jsonl"
    w, warned = _writer(path)
    w.write({"step": 0})
    path.unlink()
    w.write({"step": 1})  # (no check due: written into the deleted file)
    assert not path.exists() and w.deleted == 0
    clock.advance()
    w.write({"step": 2})
    w.write({"step": 3})
    w.close()
    assert _steps(path) == [2, 3]
    assert (w.deleted, w.moved) == (1, 0) and len(warned) == 1 and "was deleted during the run" in warned[0]
    assert "was deleted during the run" in w.why_missing(4)


def test_the_check_is_again_due_an_interval_after_the_last_one(tmp_path: Path, clock: Clock) -> None:
    """The interval runs from the last check, not from the open: a rotation just after a check waits a whole one."""
    path, old = tmp_path / "metrics.jsonl", tmp_path / "old.jsonl"
    w, _ = _writer(path)
    w.write({"step": 0})
    clock.advance()
    w.write({"step": 1})  # (checks: the path leads to the open file)
    path.rename(old)
    clock.advance(writer.CHECK_S / 2)
    w.write({"step": 2})
    clock.advance(writer.CHECK_S / 2)
    w.write({"step": 3})
    w.close()
    assert _steps(old) == [0, 1, 2] and _steps(path) == [3]


@pytest.mark.parametrize("event", ["rotated", "deleted"])
def test_close_checks_and_says_a_rotation_or_deletion_since_the_last_check(tmp_path: Path, clock: Clock,
                                                                           event: str) -> None:
    """The file rotated (or deleted) after the last row, within the interval: close() counts it and says so once,
    naming where the last rows are; nothing is written at the path."""
    path, old = tmp_path / "metrics.jsonl", tmp_path / "metrics.jsonl.1"
    w, warned = _writer(path)
    w.write({"step": 0})
    w.write({"step": 1})
    if event == "rotated":
        path.rename(old)
    else:
        path.unlink()
    w.close()
    assert not path.exists() and w.written == 2
    if event == "rotated":
        assert _steps(old) == [0, 1] and (w.moved, w.deleted) == (1, 0)
        assert len(warned) == 1 and "was moved or replaced during the run" in warned[0] and "moved file" in warned[0]
        assert "moved or replaced" in w.why_missing(2)
    else:
        assert (w.moved, w.deleted) == (0, 1)
        assert len(warned) == 1 and "was deleted during the run" in warned[0] and "went with it" in warned[0]
        assert "was deleted during the run" in w.why_missing(2)


def test_close_says_nothing_where_the_path_still_leads_to_the_open_file(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "metrics.jsonl"
    w, warned = _writer(path)
    w.write({"step": 0})
    w.close()
    assert warned == [] and (w.moved, w.deleted) == (0, 0) and _steps(path) == [0]


def test_a_rotation_during_an_outage_sends_the_next_rows_to_the_path(tmp_path: Path, clock: Clock,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A write error closes the file: the next row opens the file at the path again, whatever the clock says, so a
    rotation made meanwhile does not keep the late rows in the renamed file."""
    path, old = tmp_path / "metrics.jsonl", tmp_path / "metrics.jsonl.1"
    w, warned = _writer(path)
    w.write({"step": 0})
    real_open = writer.open_append
    monkeypatch.setattr(writer, "open_append", lambda p: (_ for _ in ()).throw(OSError(28, "No space left")))
    assert w._fh is not None
    w._fh.close()  # (the descriptor gone: the next write fails and the file is reopened)
    path.rename(old)
    assert w.write({"step": 1}) is False
    monkeypatch.setattr(writer, "open_append", real_open)
    assert w.write({"step": 2}) is True
    w.close()
    assert _steps(old) == [0] and _steps(path) == [1, 2] and "works again" in warned[-1]


def test_a_repointed_link_within_or_after_the_interval_keeps_the_rows_in_the_run(tmp_path: Path,
                                                                                  clock: Clock) -> None:
    """run_dir=latest re-pointed at the next run: no check (within the interval) and a check (after it) alike keep
    the rows in the open file of this run."""
    a, b = tmp_path / "run-A", tmp_path / "run-B"
    a.mkdir()
    b.mkdir()
    latest = tmp_path / "latest"
    latest.symlink_to(a)
    w, warned = _writer(latest / "metrics.jsonl")
    w.write({"step": 0})
    latest.unlink()
    latest.symlink_to(b)
    w.write({"step": 1})
    clock.advance()
    w.write({"step": 2})
    w.close()
    assert _steps(a / "metrics.jsonl") == [0, 1, 2] and not (b / "metrics.jsonl").exists() and warned == []
