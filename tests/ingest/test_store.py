"""RunStore: placement (append, merge, resume, out of order), cells, wall times, memory shape, thread safety."""

from __future__ import annotations

import json
import math
import sys
import threading
from array import array
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.parse import MISSING
from steptable.ingest.parsed import Parsed
from steptable.ingest.store import RunStore
from tests.ingest.helpers import add_rows


def test_append_and_read_api() -> None:
    s = RunStore("run", "run/metrics.jsonl", arm="a")
    add_rows(s, [{"step": 0, "loss": 1.0, "n": 2, "ok": True, "gt": (1, 4)},
                 {"step": 1, "loss": float("nan"), "n": 3, "gt": (2, 4)},
                 {"step": 2, "loss": None, "phase": "eval"}])
    assert len(s) == 3 and list(s.steps) == [0, 1, 2] and s.keys == ["step", "loss", "n", "ok", "gt", "phase"]
    assert s.is_numeric("loss") and s.is_integer("n") and not s.is_numeric("gt") and not s.is_numeric("ok")
    assert s.row(0) == {"step": 0, "loss": 1.0, "n": 2, "ok": True, "gt": (1, 4)}
    assert s.row(2)["step"] == 2 and math.isnan(s.row(2)["loss"]) and "n" not in s.row(2)
    col = s.column("n")
    assert isinstance(col, array) and col[:2].tolist() == [2.0, 3.0] and math.isnan(col[2])
    assert s.column("ok") == [True, None, None] and s.column("gt") == [(1, 4), (2, 4), None]
    assert s.column("absent") == [None, None, None] and s.value(0, "absent") is None
    assert s.value(2, "n") is None and math.isnan(s.value(1, "loss"))
    assert [r["step"] for r in s.rows(1, 10)] == [1, 2]
    assert s.index_of_step(1) == 1 and s.index_of_step(5) == 3 and s.step_at(-1) == 2
    assert s.version == 1 and s.last_update == 1000.0 and list(s.wall_times) == [1000.0] * 3


def test_same_step_on_neighbouring_lines_merges_later_wins() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": 0, "loss": 1.0}, {"step": 0, "test/acc": 0.5}, {"step": 1, "loss": 2.0},
                 {"step": 1, "loss": 2.5, "lr": 0.1}])
    assert list(s.steps) == [0, 1] and s.resumes == []
    assert s.row(0) == {"step": 0, "loss": 1.0, "test/acc": 0.5}
    assert s.row(1) == {"step": 1, "loss": 2.5, "lr": 0.1}
    add_rows(s, [{"step": 1, "test/acc": 0.7}])  # a later batch merges into the last row too
    assert s.row(1)["test/acc"] == 0.7 and len(s) == 2


def test_resume_replaces_rows_from_the_resume_step() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": i, "loss": float(i), "rew": 1.0} for i in range(10)])
    add_rows(s, [{"step": i, "loss": 100.0 + i, "rew": 2.0} for i in range(6, 12)])
    assert list(s.steps) == list(range(12)) and s.resumes == [6]
    assert s.value(5, "loss") == 5.0 and s.value(6, "loss") == 106.0 and s.value(9, "rew") == 2.0


def test_counter_restart_is_a_resume_at_zero() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": i, "loss": 1.0} for i in range(5)])
    add_rows(s, [{"step": i, "loss": 2.0} for i in range(3)])
    assert list(s.steps) == [0, 1, 2] and s.resumes == [0] and s.column("loss").tolist() == [2.0] * 3


def test_late_row_with_other_keys_merges_into_its_step() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": i, "loss": 1.0, "lr": 0.1} for i in range(5)])
    add_rows(s, [{"step": 2, "test/acc": 0.9}])
    assert len(s) == 5 and s.resumes == [] and s.row(2) == {"step": 2, "loss": 1.0, "lr": 0.1, "test/acc": 0.9}


def test_out_of_order_steps_are_sorted() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": 0, "a": 0}, {"step": 2, "a": 2}, {"step": 6, "a": 6}, {"step": 4, "a": 4},
                 {"step": 8, "a": 8}, {"step": 1, "a": 1, "b": "x"}])
    assert list(s.steps) == [0, 1, 2, 4, 6, 8] and s.resumes == []
    assert s.column("a").tolist() == [0, 1, 2, 4, 6, 8] and s.column("b") == [None, "x", None, None, None, None]


def test_numeric_column_turns_into_list_when_text_arrives() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": 0, "x": 1}, {"step": 1}])
    add_rows(s, [{"step": 2, "x": "hold"}])
    assert not s.is_numeric("x") and s.column("x") == [1, None, "hold"]


def test_columns_from_the_fast_path_with_missing_cells() -> None:
    s = RunStore("r", "r")
    s.add(Parsed(steps=(0, 1, 2), cols={"step": (0, 1, 2), "a": (0.5, MISSING, "NaN"), "k": (1, 2, None)},
                 int_keys=frozenset({"step", "k"}), step_key="step"))
    assert s.value(1, "a") is None and math.isnan(s.value(2, "a")) and s.value(0, "a") == 0.5
    assert s.is_integer("k") and s.value(1, "k") == 2 and math.isnan(s.value(2, "k"))


def test_wall_times_from_rows_and_arm_field() -> None:
    s = RunStore("r", "r", arm="dir")
    add_rows(s, [{"step": 0, "ts": 1.7e9, "arm": "routeA"}, {"step": 1, "ts": 1.7e12 + 5000}, {"step": 2, "ts": 3}])
    assert list(s.wall_times) == [1.7e9, 1.7e9 + 5, 1000.0] and s.arm == "routeA" and s.last_update == 1000.0


def test_bool_is_not_a_number() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": 0, "x": 1.0}, {"step": 1, "x": True}])
    assert s.column("x") == [1.0, True]


def test_reset_bumps_generation() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": 0, "x": 1.0}])
    s.reset()
    assert len(s) == 0 and s.keys == [] and s.generation == 1


def test_storage_is_columnar() -> None:
    """No per-row dicts, no per-cell float objects: numeric cells live in arrays of 8-byte doubles."""
    n, k = 5000, 43
    s = RunStore("r", "r")
    cols: dict[str, Any] = {"step": tuple(range(n))}
    for j in range(k - 1):
        cols[f"m{j}"] = tuple(float(i * j) for i in range(n))
    s.add(Parsed(steps=cols["step"], cols=cols, int_keys=frozenset({"step"}), step_key="step"))
    payload = n * k * 8
    held = sum(sys.getsizeof(a) for a in s._num.values()) + sum(sys.getsizeof(p) for p in s._pres.values())
    assert s._obj == {} and payload <= held <= 1.1 * payload


def test_readers_see_whole_batches() -> None:
    s = RunStore("r", "r")
    stop = threading.Event()
    seen: list[tuple[int, int]] = []

    def read() -> None:
        while not stop.is_set():
            with s.lock:
                seen.append((len(s), len(s.column("b"))))

    t = threading.Thread(target=read)
    t.start()
    for i in range(300):
        add_rows(s, [{"step": 2 * i, "a": 1.0}, {"step": 2 * i + 1, "a": 2.0, "b": 3.0}])
    stop.set()
    t.join()
    assert all(n == m and n % 2 == 0 for n, m in seen)


def test_keys_past_the_cap_are_not_stored_and_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log naming a new key on every row (per-sample metrics) cost rows x keys cells: 10 GB for 30k rows."""
    from steptable.ingest import Follower, store, table

    monkeypatch.setattr(table, "MAX_KEYS", 50)
    monkeypatch.setattr(store, "MAX_KEYS", 50)
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    with open(path, "w") as f:
        for i in range(3000):
            f.write(json.dumps({"step": i, "loss": 0.5, f"sample/{i}": 1.0}) + "\n")
    fol = Follower([tmp_path])
    fol.scan()
    s = fol.stores["run/metrics.jsonl"]
    assert len(s) == 3000 and len(s.keys) == 50 and s.value(2999, "loss") == 0.5
    assert s.keys[:3] == ["step", "loss", "sample/0"] and s.value(0, "sample/0") == 1.0
    assert [e.split(": ", 1)[1][:40] for e in fol.errors] == ["more than 50 distinct keys: keys first s"]
    with open(path, "a") as f:
        f.write(json.dumps({"step": 3000, "loss": 0.25, "sample/x": 1.0}) + "\n")
    fol.scan()
    assert s.value(3000, "loss") == 0.25 and len(fol.errors) == 1  # said once


def test_the_key_cap_notice_names_the_first_key_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from steptable.ingest import store, table

    monkeypatch.setattr(table, "MAX_KEYS", 3)
    monkeypatch.setattr(store, "MAX_KEYS", 3)
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    s.add(Parsed(steps=[0], rows=[{"step": 0, "a": 1.0, "b": 2.0}]), now=math.nan)  # exactly at the cap
    p = Parsed(steps=[1, 2], rows=[{"step": 1, "a": 1.0, "c": 3.0}, {"step": 2, "a": 1.0}])
    s.add(p, now=math.nan)
    assert [b.reason for b in p.bad] == [store._too_many_keys("c")] and "'c'" in p.bad[0].reason


def test_a_late_value_for_a_key_logged_as_null_is_merged_not_a_resume() -> None:
    """StepLogger writes NaN as null ("not measured this step"); an eval thread's late value for that step used to
    read as a resume and drop every row after it."""
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    rows = [{"step": t, "loss": 1 / (t + 1), "val": None} for t in range(100)]
    s.add(Parsed(steps=list(range(100)), rows=rows, step_key="step"), now=math.nan)
    s.add(Parsed(steps=[50], rows=[{"step": 50, "val": 0.7}], step_key="step"), now=math.nan)
    assert len(s) == 100 and s.resumes == [] and s.value(50, "val") == 0.7
    s.add(Parsed(steps=[60], rows=[{"step": 60, "loss": 0.5, "val": 0.1}], step_key="step"), now=math.nan)  # resume
    assert len(s) == 61 and s.resumes == [60]


def test_a_resume_of_rows_that_are_mostly_null_is_still_a_resume() -> None:
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    row = {"a": 1.0, "b": 2.0, "c": 3.0, "w": None, "x": None, "y": None, "z": None}
    s.add(Parsed(steps=list(range(6)), rows=[{"step": t, **row} for t in range(6)], step_key="step"), now=math.nan)
    s.add(Parsed(steps=[3, 4], rows=[{"step": t, **row} for t in (3, 4)], step_key="step"), now=math.nan)
    assert list(s.steps) == [0, 1, 2, 3, 4] and s.resumes == [3]
