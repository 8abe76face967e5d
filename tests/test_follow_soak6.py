"""Long runs (soak6): `tail -f` reads only the new rows of a run, and the Follower forgets runs whose files are gone
(a sweep that deletes old runs) while a rotation, or a run that writes its file again, is still followed."""

from __future__ import annotations

import io
import os
import shutil
import types
from pathlib import Path
from typing import Any

import pytest

import steptable.ingest.files.follow as follow_mod
from steptable.cli.main import _parser
from steptable.cli.tail import Tail
from steptable.ingest import Follower
from tests.helpers import spy_whole_copies, write_rows


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(follow_mod, "time", types.SimpleNamespace(monotonic=c.monotonic))
    return c


def rows(start: int, stop: int, loss: float = 1.0) -> list[dict[str, Any]]:
    return [{"step": s, "loss": loss, "ts": 1.7e9 + s} for s in range(start, stop)]


def polls_until_gone(f: Follower, clock: Clock, run: str) -> set[str]:
    """Poll as an idle follower does until ``run`` leaves ``stores``, for at most twice the grace; the runs that
    changed meanwhile."""
    changed: set[str] = set()
    for _ in range(200):
        changed |= f.scan()
        if run not in f.stores:
            break
        clock.t += follow_mod.GONE_AFTER / 100
    return changed


# --- tail -f: only the new rows are read --------------------------------------------------------------------------


def test_ranged_accessors_copy_only_the_rows_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, rows(0, 10))
    f = Follower([tmp_path])
    f.scan()
    st = f.stores["a/metrics.jsonl"]
    assert list(st.steps_between(7)) == [7, 8, 9] and list(st.steps_between(2, 4)) == [2, 3]
    assert list(st.wall_times_between(-2)) == [1.7e9 + 8, 1.7e9 + 9] and list(st.wall_times_between(10)) == []
    assert list(st.steps_between()) == list(st.steps) and list(st.wall_times_between()) == list(st.wall_times)


@pytest.mark.parametrize("argv", [[], ["--alerts-only"], ["--format", "jsonl"]])
def test_tail_follow_never_copies_a_whole_history_for_new_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """An appended row costs `tail -f` the same with a million rows before it as with ten: it never takes a copy of
    the run's steps, wall times or columns (it did for every run on every emit)."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, rows(0, 50))
    write_rows(tmp_path / "b" / "metrics.jsonl", rows(0, 50))
    out = io.StringIO()
    f = Follower([tmp_path])
    tail = Tail(_parser().parse_args(["tail", "-f", *argv, str(tmp_path)]), out, io.StringIO())
    f.scan()
    tail.emit(f)
    whole = spy_whole_copies(monkeypatch)
    before = out.getvalue()
    write_rows(path, rows(50, 53, loss=float("nan")))  # (a NaN loss: --alerts-only has something to say)
    f.scan()
    tail.emit(f)
    new = out.getvalue()[len(before) :]
    assert whole == []
    if argv == ["--alerts-only"]:
        assert "[a] step 50" in new and "loss" in new
    else:
        assert all(str(s) in new for s in (50, 51, 52)) and "49" not in new


# --- the Follower forgets what was deleted --------------------------------------------------------------------------


def test_a_deleted_run_is_forgotten_after_the_grace_and_its_store_stays_readable(tmp_path: Path, clock: Clock) -> None:
    """A sweep deletes old run directories: their runs leave ``stores`` and are no longer polled (every idle tick
    stat'ed every run ever seen), while a reader that holds a store still reads its rows."""
    for name in ("r0", "r1", "r2"):
        write_rows(tmp_path / name / "metrics.jsonl", rows(0, 5))
    f = Follower([tmp_path])
    f.scan()
    held = f.stores["r1/metrics.jsonl"]
    shutil.rmtree(tmp_path / "r1")
    for _ in range(5):  # within the grace (a rotation, a run about to write its file again): still followed
        f.scan()
        clock.t += 1.0
    assert "r1/metrics.jsonl" in f.stores and len(f._sources) == 3
    changed = polls_until_gone(f, clock, "r1/metrics.jsonl")
    assert sorted(f.stores) == ["r0/metrics.jsonl", "r2/metrics.jsonl"] and len(f._sources) == 2
    assert "r1/metrics.jsonl" in changed  # (readers hear of it: tail drops its alert state)
    assert not f._by_file.keys() - {os.path.abspath(tmp_path / n / "metrics.jsonl") for n in ("r0", "r2")}
    assert list(held.steps) == [0, 1, 2, 3, 4] and held.row(4)["loss"] == 1.0 and not os.path.exists(held.path)
    assert f.scan() == set() and f.errors == []


def test_one_late_look_is_not_a_grace_gone_by(tmp_path: Path, clock: Clock) -> None:
    """A follower paused for a minute (a suspended laptop) that finds a file missing once keeps it: the grace is
    counted in polls as well as in seconds."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, rows(0, 3))
    f = Follower([tmp_path])
    f.scan()
    path.unlink()
    f.scan()
    clock.t += 600.0
    f.scan()
    assert "a/metrics.jsonl" in f.stores
    write_rows(path, rows(0, 2))  # the new file, as after a rotation: the same store, reset
    f.scan()
    assert list(f.stores["a/metrics.jsonl"].steps) == [0, 1] and f.stores["a/metrics.jsonl"].generation == 1


def test_a_run_written_again_after_it_was_forgotten_is_a_run_again(tmp_path: Path, clock: Clock) -> None:
    """A resumed run writes its deleted file again: it is found, and readers that knew the run take it for a reset
    (tail prints it from its first row again, with a note)."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, rows(0, 5))
    write_rows(tmp_path / "b" / "metrics.jsonl", rows(0, 1))
    f = Follower([tmp_path])
    out = io.StringIO()
    tail = Tail(_parser().parse_args(["tail", "-f", "--format", "text", str(tmp_path)]), out, io.StringIO())
    f.scan()
    tail.emit(f)
    old = f.stores["a/metrics.jsonl"]
    shutil.rmtree(tmp_path / "a")
    polls_until_gone(f, clock, "a/metrics.jsonl")
    tail.emit(f)
    assert "a/metrics.jsonl" not in f.stores
    write_rows(path, rows(0, 3, loss=2.0))
    assert "a/metrics.jsonl" in f.scan()
    new = f.stores["a/metrics.jsonl"]
    assert new is not old and list(new.steps) == [0, 1, 2] and new.generation > old.generation
    assert new.version > old.version and list(old.steps) == [0, 1, 2, 3, 4]
    before = len(out.getvalue())
    tail.emit(f)
    printed = out.getvalue()[before:]
    assert "a/metrics.jsonl: file reset" in printed
    assert [ln.split()[0] for ln in printed.splitlines() if ln.split()[0].isdigit()] == ["0", "1", "2"]
    write_rows(path, rows(3, 4, loss=2.0))
    assert f.scan() == {"a/metrics.jsonl"} and list(new.steps) == [0, 1, 2, 3]


def test_a_rotation_within_the_grace_keeps_the_run_and_its_store(tmp_path: Path, clock: Clock) -> None:
    """Rename + new file after a few polls: the same store, the renamed file's rows kept (it was read to its end);
    copytruncate: the same store, read again from the new content."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, rows(0, 5))
    f = Follower([tmp_path])
    f.scan()
    store = f.stores["a/metrics.jsonl"]
    os.rename(path, path.with_name("metrics.jsonl.1"))
    for _ in range(5):  # (5 s)
        f.scan()
        clock.t += 1.0
    write_rows(path, rows(5, 7))
    f.scan()
    assert f.stores["a/metrics.jsonl"] is store and list(store.steps) == list(range(7)) and store.generation == 0
    path.write_text("")
    write_rows(path, rows(7, 8))
    clock.t += 600.0  # (missing no more: the grace starts again the next time)
    f.scan()
    assert f.stores["a/metrics.jsonl"] is store and list(store.steps) == [7] and f.errors == []


def test_tail_alerts_only_says_no_stall_for_a_run_that_was_deleted(tmp_path: Path, clock: Clock) -> None:
    """A deleted run no longer followed is no stalled run."""
    write_rows(tmp_path / "a" / "metrics.jsonl", rows(0, 40))
    write_rows(tmp_path / "b" / "metrics.jsonl", rows(0, 40))
    out = io.StringIO()
    f = Follower([tmp_path])
    tail = Tail(_parser().parse_args(["tail", "-f", "--alerts-only", str(tmp_path)]), out, io.StringIO())
    f.scan()
    tail.emit(f)
    shutil.rmtree(tmp_path / "a")
    changed = polls_until_gone(f, clock, "a/metrics.jsonl")
    if changed:  # (as the follow loop does: emit on a change)
        tail.emit(f)
    tail.check_stalls(1.7e9 + 10_000)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and "[b]" in lines[0] and "stalled" in lines[0], lines


def test_files_judged_not_a_run_are_forgotten_when_deleted(tmp_path: Path) -> None:
    for i in range(3):
        write_rows(tmp_path / f"r{i}" / "metrics.jsonl", rows(0, 2))
        (tmp_path / f"r{i}" / "notes.jsonl").write_text('{"text": "no metrics here"}\n')
    f = Follower([tmp_path])
    f.scan()
    assert len(f._rejected) == 3
    shutil.rmtree(tmp_path / "r0")
    f.scan()
    assert sorted(p.parent.name for p in f._rejected) == ["r1", "r2"]
    f.scan()  # (the rest stay judged: not read again)
    assert len(f._rejected) == 2 and sorted(f.stores) == [f"r{i}/metrics.jsonl" for i in range(3)]


# --- store memory: repeated texts --------------------------------------------------------------------------------


def test_a_text_logged_on_every_row_is_stored_once(tmp_path: Path) -> None:
    """A tag column ("code", "math") held a string object per row (about 60 bytes a cell); now a pointer to a shared
    one. Long or many distinct texts are stored as they come, and every value reads back as logged."""
    path = tmp_path / "a" / "metrics.jsonl"
    tags = ["code", "math", None, "code"]
    write_rows(path, [{"step": s, "tag": tags[s % 4], "note": f"sample {s}", "long": "x" * 100 + str(s % 2)}
                      for s in range(600)])
    f = Follower([tmp_path])
    f.scan()  # (the fast path: a whole chunk decoded at once)
    write_rows(path, [{"step": 600, "tag": "code", "extra": 1}, {"step": 601, "tag": ["a", "list"]}])
    f.scan()  # (rows of other shapes: the line-by-line path)
    st = f.stores["a/metrics.jsonl"]
    tag = st.column("tag")
    assert list(tag[:600]) == [tags[s % 4] for s in range(600)] and tag[600] == "code" and tag[601] == ["a", "list"]
    assert len({id(v) for v in tag[:601] if v is not None}) == 2
    note = st.column("note")
    assert list(note[:600]) == [f"sample {s}" for s in range(600)]
    from steptable.ingest.table import SHARED_TEXTS

    assert len(st._texts["note"]) == SHARED_TEXTS  # (bounded: texts past that are kept as they come)
    assert len({id(v) for v in st.column("long")}) > 2 and set(st.column("long")[:600]) == {"x" * 100 + "0",
                                                                                          "x" * 100 + "1"}
