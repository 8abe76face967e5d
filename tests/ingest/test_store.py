"""steptable.ingest.store: RunStore placement (append, merge, late rows, out of order), cells, wall times,
memory shape, ranged reads, bad lines kept, generations."""

from __future__ import annotations

import json
import math
import sys
import threading
from array import array
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.replaced import read_replaced
from steptable.ingest import Follower, RunStore, load
from steptable.ingest.parse import MISSING
from steptable.ingest.parsed import Parsed
from tests.helpers import grpo_rows, write_rows
from tests.ingest.helpers import add_rows, add_untimed, followed, only, timed_rows, write_jsonl
from tests.trainer_logs import tinker_evaluation_row, tinker_iteration_row


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


def test_same_step_on_neighbouring_lines_merges_first_value_kept() -> None:
    """Lines of one step add the keys the step lacks; a cell one of them wrote is never overwritten by another."""
    s = RunStore("r", "r")
    add_rows(s, [{"step": 0, "loss": 1.0}, {"step": 0, "test/acc": 0.5}, {"step": 1, "loss": 2.0},
                 {"step": 1, "loss": 2.5, "lr": 0.1}])
    assert list(s.steps) == [0, 1] and s.resumes == []
    assert s.row(0) == {"step": 0, "loss": 1.0, "test/acc": 0.5}
    assert s.row(1) == {"step": 1, "loss": 2.0, "lr": 0.1}
    add_rows(s, [{"step": 1, "test/acc": 0.7}])  # a later batch merges into the last row too
    assert s.row(1)["test/acc"] == 0.7 and len(s) == 2


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


def test_the_key_cap_notice_names_the_file_not_a_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cap on distinct keys is the file's, not a line's: its notice reads ``path: more than ...`` (a line number
    would point at a line that is not the one that crossed it)."""
    from steptable.ingest import store, table

    monkeypatch.setattr(table, "MAX_KEYS", 50)
    monkeypatch.setattr(store, "MAX_KEYS", 50)
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, [{"step": i, "loss": 0.5, f"sample/{i}": 1.0} for i in range(100)])
    fol, _ = followed(tmp_path)
    assert len(fol.errors) == 1 and fol.errors[0].startswith(f"{path}: more than 50 distinct keys"), fol.errors


@pytest.mark.parametrize(("arm", "why"), [("", "empty"), (3, "not a name")])
def test_an_arm_cell_that_is_not_a_name_leaves_the_directorys(tmp_path: Path, arm: Any, why: str) -> None:
    """A row's own "arm" names the run's arm only when it is a non-empty string; else the directory names it."""
    write_rows(tmp_path / "seed0" / "metrics.jsonl", [{**r, "arm": arm} for r in grpo_rows(range(3))])
    _, store = followed(tmp_path)
    assert store.arm == "seed0", why


def test_bad_lines_keep_the_first_1000_and_the_newest_100(tmp_path: Path) -> None:
    """A file of 1,001 unreadable lines: the app lists the first 1,000, the newest 100 and the count of all."""
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_text("{not json\n" * 1001 + json.dumps({"step": 0, "loss": 1.0}) + "\n")
    _, store = followed(tmp_path)
    kept, newest, total = store.bad_lines()
    assert total == 1001 and [b.lineno for b in (kept[0], kept[-1])] == [1, 1000] and len(kept) == 1000
    assert len(newest) == 100 and [b.lineno for b in (newest[0], newest[-1])] == [902, 1001]


def test_a_late_row_repeating_half_the_stored_rows_metrics_among_new_ones_is_merged(tmp_path: Path) -> None:
    """A late row at step 5 (after step 7's) with 2 of the row's 4 metrics and 3 eval scores: not half of its own
    keys, not more than half of the row's: an evaluation filling the row in, not a restart dropping steps 6-7."""
    path = tmp_path / "run" / "metrics.jsonl"
    rows = grpo_rows(range(8))
    write_rows(path, rows)
    write_rows(path, [{"step": 5, "loss": 0.1, "reward": 0.9, "eval/acc": 0.4, "eval/len": 312.0, "eval/kl": 0.02}])
    _, store = followed(tmp_path)
    assert store.resumes == [] and list(store.steps) == list(range(8))
    assert store.value(5, "eval/acc") == 0.4 and store.value(5, "loss") == pytest.approx(rows[5]["loss"])


def test_a_store_that_takes_a_deleted_runs_place_goes_past_its_generation_and_version() -> None:
    """The Follower hands the new store of a run whose file was deleted and written again the old one's generation
    and version: it goes past both, so a reader that knows the run by its id starts it over."""
    old = RunStore("run", "/nonexistent/metrics.jsonl", on_resume=read_replaced)
    old.reset()
    new = RunStore("run", "/nonexistent/metrics.jsonl", on_resume=read_replaced)
    new.succeed(old.generation, old.version)
    assert new.generation > old.generation and new.version > old.version


def test_ranged_accessors_copy_only_the_rows_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, timed_rows(0, 10))
    f = Follower([tmp_path])
    f.scan()
    st = f.stores["a/metrics.jsonl"]
    assert list(st.steps_between(7)) == [7, 8, 9] and list(st.steps_between(2, 4)) == [2, 3]
    assert list(st.wall_times_between(-2)) == [1.7e9 + 8, 1.7e9 + 9] and list(st.wall_times_between(10)) == []
    assert list(st.steps_between()) == list(st.steps) and list(st.wall_times_between()) == list(st.wall_times)


def test_arm_field_in_rows_wins(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "logs" / "metrics.jsonl", [{"step": 0, "arm": "routeA", "rew": 0.1}])
    assert only(load(tmp_path / "logs")).arm == "routeA"


def test_a_late_row_fills_the_cells_its_step_lacks_in_another_batch() -> None:
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    add_untimed(s, [{**tinker_iteration_row(t), "val": None} for t in range(7)])
    add_untimed(s, [{**tinker_evaluation_row(4), "val": 0.5, "optim/entropy": None}])
    assert len(s) == 7 and s.resumes == []
    row = s.row(4)
    assert row["time/total"] == 34.0 and row["optim/entropy"] == 0.6  # held: the first value stays
    assert row["time/run_evaluations_parallel"] == 75.0 and row["test/env/all/correct"] == 0.7  # new keys: added
    assert row["val"] == 0.5  # logged as null ("not measured"): filled in
    assert s.rows_edited(1, 10)[4][1] == frozenset(tinker_evaluation_row(4)) - {"step", "time/total"} | {"val"}


def test_a_late_row_with_nothing_to_add_changes_nothing() -> None:
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    add_untimed(s, [tinker_iteration_row(t) for t in range(7)])
    add_untimed(s, [{"step": 3, "time/total": None}])  # (a null: not measured, so no resume; nor does it erase a value)
    assert s.value(3, "time/total") == 33.0 and s.edits_since(0) == [] and s.edit_count == 0 and len(s) == 7


def test_a_row_of_the_last_step_merges_without_overwriting() -> None:
    """In order (verl's validation metrics, an HF eval entry right after its train entry, tinker's synchronous
    loop): a later line of the newest step adds its keys; a key the step's row holds keeps its first value (the
    evaluation's own ``time/total`` is not the iteration's), as for a late row."""
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    add_untimed(s, [tinker_iteration_row(t) for t in range(5)])
    first = s.value(4, "time/total")
    add_untimed(s, [tinker_evaluation_row(4)])  # another batch: placed row by row
    assert s.value(4, "time/total") == first != 75.3 and s.value(4, "test/env/all/reward/total") == 0.75
    # the same batch: merged before it is appended
    add_untimed(s, [tinker_iteration_row(5), {"step": 5, "time/total": 40.0}])
    assert s.value(5, "time/total") == tinker_iteration_row(5)["time/total"] != 40.0
    assert len(s) == 6 and s.resumes == []


def test_an_infinite_value_is_never_overwritten_by_another_line_of_its_step() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": 0, "loss": 1.0}, {"step": 1, "loss": math.inf}, {"step": 1, "loss": 0.3}])
    assert s.value(1, "loss") == math.inf
    add_rows(s, [{"step": 1, "loss": 0.2, "acc": 0.9}])  # a later batch
    assert s.value(1, "loss") == math.inf and s.value(1, "acc") == 0.9


def test_cells_merged_into_an_earlier_row_keep_its_clock(tmp_path: Path) -> None:
    """An eval line for step 20 without a clock of its own keeps row 20's time, not the time it was read (a
    replay would see days of 'stall', and a run's last clock held at the read time would hide its stall)."""
    path = tmp_path / "r" / "metrics.jsonl"
    rows = [{"step": s, "loss": 0.1, "ts": 1.7e9 + 2 * s} for s in range(40)]
    write_rows(path, [*rows, {"step": 20, "eval/acc": 0.5}])
    f = Follower([tmp_path], on_resume=read_replaced)
    f.scan()
    (store,) = f.stores.values()
    assert store.wall_times[20] == 1.7e9 + 40 and store.value(20, "eval/acc") == 0.5


def test_numbers_are_the_cells_of_a_column_of_numbers_without_an_absent_cell(tmp_path: Path) -> None:
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_text("".join(
        f'{{"loss": {["0.5", "null", "NaN", "3"][i % 4]}, "n": {i}, "tag": "a"'
        + (', "eval": 0.25}' if i % 3 == 0 else "}") + "\n" for i in range(12)))
    f = Follower([tmp_path])
    f.scan()
    f.finish()
    (store,) = f.stores.values()
    for key in ("loss", "n"):
        nums = store.numbers(key)
        assert nums is not None
        assert [x if x == x else "nan" for x in nums] == [x if x == x else "nan" for x in store.cells(key)]
    assert store.numbers("eval") is None  # (absent cells: cells() says None there)
    assert store.numbers("tag") is None and store.numbers("nope") is None
    assert store.numbers("step") is None  # (numbered by position: the cells are the row numbers, ints)
    copy, view = store.numbers("loss"), store.numbers("loss", view=True)
    assert copy is not None and view is not None and copy.tobytes() == view.tobytes()
    assert view is store.numbers("loss", view=True) and copy is not store.numbers("loss")  # (the store's own array)
    assert store.numbers("eval", view=True) is None and store.numbers("step", view=True) is None
