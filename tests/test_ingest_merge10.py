"""A row that lands after later steps' rows (tinker's asynchronous evaluation) fills its step's row in: the values
that row already holds stay. A merge into the last row (in order) and a resume still put the new values in."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from steptable.ingest.store import RunStore
from tests.helpers import run_cli, write_rows
from tests.ingest.helpers import add_untimed
from tests.trainer_logs import tinker_evaluation_row, tinker_iteration_row


def _tinker_async(path: Path) -> None:
    rows = [tinker_iteration_row(s) for s in range(7)]
    # lands after iterations 4 and 5: the evaluation takes longer than an iteration
    rows.insert(6, tinker_evaluation_row(4))
    write_rows(path, [*rows, *(tinker_iteration_row(s) for s in range(7, 10))])


def test_tinker_s_late_evaluation_row_keeps_the_iteration_s_time(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _tinker_async(tmp_path / "rl" / "metrics.jsonl")
    rc, out, _ = run_cli(["tail", str(tmp_path), "-n", "0", "--format", "csv", "--columns", "step,sec,test_rew"],
                         capsys)
    assert rc == 0, out
    rows = {r["step"]: r for r in csv.DictReader(io.StringIO(out))}
    assert list(rows) == [str(s) for s in range(10)]
    sec = [float(rows[s]["time/total"]) for s in ("3", "4", "5")]
    assert sec == [33.0, 34.0, 35.0] and float(rows["4"]["test/env/all/reward/total"]) == 0.75  # (not 75.3)


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


def test_a_row_of_the_last_step_still_merges_later_values_winning() -> None:
    """In order (verl's validation metrics, an HF eval entry right after its train entry, tinker's synchronous
    loop): the newest line of the newest step is that step's latest word, as before."""
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    add_untimed(s, [tinker_iteration_row(t) for t in range(5)])
    add_untimed(s, [tinker_evaluation_row(4)])  # another batch: placed row by row
    assert s.value(4, "time/total") == 75.3 and s.value(4, "test/env/all/reward/total") == 0.75
    # the same batch: merged before it is appended
    add_untimed(s, [tinker_iteration_row(5), {"step": 5, "time/total": 40.0}])
    assert s.value(5, "time/total") == 40.0 and len(s) == 6 and s.resumes == []


def test_a_resume_still_replaces_the_rows_it_logs_again() -> None:
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    add_untimed(s, [tinker_iteration_row(t) for t in range(8)])
    add_untimed(s, [{**tinker_iteration_row(t), "time/total": 50.0 + t} for t in range(4, 6)])
    assert list(s.steps) == list(range(6)) and s.resumes == [4]
    assert s.value(4, "time/total") == 54.0 and s.value(5, "time/total") == 55.0 and s.value(3, "time/total") == 33.0


def test_tinker_s_training_client_step_is_kept_out_of_the_table(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """do_async_training logs ``"training_client/step": i_batch`` with ``step=i_batch``: the step again."""
    _tinker_async(tmp_path / "rl" / "metrics.jsonl")
    rc, out, _ = run_cli(["tail", str(tmp_path), "-n", "2", "--width", "0"], capsys)
    assert rc == 0 and out.split()[0] == "step" and "sec" in out and "training_cli" not in out, out
    rc, out, _ = run_cli(["tail", str(tmp_path), "-n", "1", "--columns", "step,training_client/step"], capsys)
    assert rc == 0 and out.splitlines()[1].split() == ["9", "9"], out
