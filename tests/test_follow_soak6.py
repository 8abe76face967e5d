"""Long runs (soak6): `tail -f` reads only the new rows of a run, and the Follower forgets runs whose files are gone
(a sweep that deletes old runs) while a rotation, or a run that writes its file again, is still followed."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from steptable.cli.main import _parser
from steptable.cli.tail import Tail
from steptable.ingest import Follower
from tests.helpers import spy_whole_copies, write_rows
from tests.ingest.helpers import FollowerClock, polls_until_gone, timed_rows


@pytest.mark.parametrize("argv", [[], ["--alerts-only"], ["--format", "jsonl"]])
def test_tail_follow_never_copies_a_whole_history_for_new_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """An appended row costs `tail -f` the same with a million rows before it as with ten: it never takes a copy of
    the run's steps, wall times or columns (it did for every run on every emit)."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, timed_rows(0, 50))
    write_rows(tmp_path / "b" / "metrics.jsonl", timed_rows(0, 50))
    out = io.StringIO()
    f = Follower([tmp_path])
    tail = Tail(_parser().parse_args(["tail", "-f", *argv, str(tmp_path)]), out, io.StringIO())
    f.scan()
    tail.emit(f)
    whole = spy_whole_copies(monkeypatch)
    before = out.getvalue()
    write_rows(path, timed_rows(50, 53, loss=float("nan")))  # (a NaN loss: --alerts-only has something to say)
    f.scan()
    tail.emit(f)
    new = out.getvalue()[len(before) :]
    assert whole == []
    if argv == ["--alerts-only"]:
        assert "[a] step 50" in new and "loss" in new
    else:
        assert all(str(s) in new for s in (50, 51, 52)) and "49" not in new


def test_a_run_written_again_after_it_was_forgotten_is_a_run_again(
    tmp_path: Path, follower_clock: FollowerClock
) -> None:
    """A resumed run writes its deleted file again: it is found, and readers that knew the run take it for a reset
    (tail prints it from its first row again, with a note)."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, timed_rows(0, 5))
    write_rows(tmp_path / "b" / "metrics.jsonl", timed_rows(0, 1))
    f = Follower([tmp_path])
    out = io.StringIO()
    tail = Tail(_parser().parse_args(["tail", "-f", "--format", "text", str(tmp_path)]), out, io.StringIO())
    f.scan()
    tail.emit(f)
    old = f.stores["a/metrics.jsonl"]
    shutil.rmtree(tmp_path / "a")
    polls_until_gone(f, follower_clock, "a/metrics.jsonl")
    tail.emit(f)
    assert "a/metrics.jsonl" not in f.stores
    write_rows(path, timed_rows(0, 3, loss=2.0))
    assert "a/metrics.jsonl" in f.scan()
    new = f.stores["a/metrics.jsonl"]
    assert new is not old and list(new.steps) == [0, 1, 2] and new.generation > old.generation
    assert new.version > old.version and list(old.steps) == [0, 1, 2, 3, 4]
    before = len(out.getvalue())
    tail.emit(f)
    printed = out.getvalue()[before:]
    assert "a/metrics.jsonl: file reset" in printed
    assert [ln.split()[0] for ln in printed.splitlines() if ln.split()[0].isdigit()] == ["0", "1", "2"]
    write_rows(path, timed_rows(3, 4, loss=2.0))
    assert f.scan() == {"a/metrics.jsonl"} and list(new.steps) == [0, 1, 2, 3]


def test_tail_alerts_only_says_no_stall_for_a_run_that_was_deleted(
    tmp_path: Path, follower_clock: FollowerClock
) -> None:
    """A deleted run no longer followed is no stalled run."""
    write_rows(tmp_path / "a" / "metrics.jsonl", timed_rows(0, 40))
    write_rows(tmp_path / "b" / "metrics.jsonl", timed_rows(0, 40))
    out = io.StringIO()
    f = Follower([tmp_path])
    tail = Tail(_parser().parse_args(["tail", "-f", "--alerts-only", str(tmp_path)]), out, io.StringIO())
    f.scan()
    tail.emit(f)
    shutil.rmtree(tmp_path / "a")
    changed = polls_until_gone(f, follower_clock, "a/metrics.jsonl")
    if changed:  # (as the follow loop does: emit on a change)
        tail.emit(f)
    tail.check_stalls(1.7e9 + 10_000)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and "[b]" in lines[0] and "stalled" in lines[0], lines
