"""A row that lands after later steps' rows (tinker's asynchronous evaluation) fills its step's row in: the values
that row already holds stay. A merge into the last row (in order) and a resume still put the new values in."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from tests.helpers import run_cli, write_rows
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


def test_tinker_s_training_client_step_is_kept_out_of_the_table(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """do_async_training logs ``"training_client/step": i_batch`` with ``step=i_batch``: the step again."""
    _tinker_async(tmp_path / "rl" / "metrics.jsonl")
    rc, out, _ = run_cli(["tail", str(tmp_path), "-n", "2", "--width", "0"], capsys)
    assert rc == 0 and out.split()[0] == "step" and "sec" in out and "training_cli" not in out, out
    rc, out, _ = run_cli(["tail", str(tmp_path), "-n", "1", "--columns", "step,training_client/step"], capsys)
    assert rc == 0 and out.splitlines()[1].split() == ["9", "9"], out
