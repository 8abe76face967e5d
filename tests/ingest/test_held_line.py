"""A JSONL last line without its newline: a follower shows it once it has stayed unchanged for about a second and
parses as a whole row (as a one-shot read does), and replaces it, never duplicates it, when the line is read again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import steptable.ingest.source as source_mod
from steptable.ingest import Follower, RunStore


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(source_mod, "_now", c)
    return c


def line(step: int, **cells: float) -> str:
    return json.dumps({"step": step, "loss": 1.0 / (step + 1), **cells})


def test_an_unended_last_row_is_shown_after_a_quiet_second_then_replaced(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_text("".join(line(s) + "\n" for s in range(30)) + line(30, eval_acc=0.875))  # no final newline
    f = Follower([tmp_path])
    f.scan()
    (store,) = f.stores.values()
    assert len(store) == 30  # just read: it may still be being written
    clock.t += 0.5
    f.scan()
    assert len(store) == 30
    clock.t += 0.6
    assert f.scan() == {store.run}
    assert len(store) == 31 and store.value(30, "eval_acc") == 0.875
    f.scan()  # unchanged: shown once
    assert len(store) == 31 and f.errors == []
    with open(path, "a") as fh:  # the writer ends the line and goes on
        fh.write("\n" + line(31) + "\n")
    f.scan()
    assert list(store.steps) == list(range(32)) and store.value(30, "eval_acc") == 0.875


def quiet_after(tmp_path: Path, clock: Clock, text: str) -> tuple[Follower, RunStore, Path]:
    """``text`` as a run's metrics file, followed, read again after a quiet while: (follower, store, path)."""
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_text(text)
    f = Follower([tmp_path])
    f.scan()
    clock.t += 2
    f.scan()
    (store,) = f.stores.values()
    return f, store, path


def test_a_held_row_whose_line_grows_is_taken_back(tmp_path: Path, clock: Clock) -> None:
    """The held text parsed whole, then more came on its line: the row shown is taken back and the line read again
    as it is now (here no row at all: reported as a bad line), never kept beside the new reading."""
    f, store, path = quiet_after(tmp_path, clock, line(0) + "\n" + '{"step": 1, "loss": 5}')
    assert list(store.steps) == [0, 1] and store.value(1, "loss") == 5
    with open(path, "a") as fh:
        fh.write('0, "x": 1}\n' + line(2) + "\n")
    f.scan()
    assert list(store.steps) == [0, 2] and len(f.errors) == 1 and ":2:" in f.errors[0]


def test_a_held_row_whose_line_ends_is_one_row(tmp_path: Path, clock: Clock) -> None:
    f, store, path = quiet_after(tmp_path, clock, line(0) + "\n" + '{"step": 1, "loss": 5}')
    with open(path, "a") as fh:
        fh.write('\n{"step": 1, "acc": 0.5}\n')  # another line of the same step
    f.scan()
    assert list(store.steps) == [0, 1] and store.row(1) == {"step": 1, "loss": 5, "acc": 0.5}


def test_a_cut_last_line_is_never_shown(tmp_path: Path, clock: Clock) -> None:
    f, store, _ = quiet_after(tmp_path, clock, line(0) + "\n" + '{"step": 1, "loss": 0.')
    clock.t += 5
    f.scan()
    assert list(store.steps) == [0] and f.errors == []
