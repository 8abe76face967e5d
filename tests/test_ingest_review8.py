"""Review 8 (readers): an ``arm`` that is not a name, a reader's bug on one chunk, CSV cells holding newlines."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger
from steptable.ingest.files.follow import load
from tests.helpers import run_cli

COLS = [Col("step", 5, "step", "d"), Col("rew", 6, "rew")]


# --- an arm that is not a name ----------------------------------------------------------------------------------


def test_a_list_under_arm_is_a_cell_not_the_end_of_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One row whose ``arm`` was a list raised TypeError (unhashable) on every read of the file: summary showed no
    rows and failed, tail -f and watch showed none."""
    run = tmp_path / "b3" / "routeA"
    with StepLogger(COLS, run_dir=run, arm="routeA", console=False, alerts=False) as sl:
        for step in range(100):
            row: dict[str, Any] = {"step": step, "rew": 0.5}
            if step == 60:
                row["arm"] = ["left", "right"]
            sl.log(row)
    rc, out, err = run_cli(["summary", str(tmp_path / "b3")], capsys)
    assert rc == 0 and "steps 0-99" in out and "internal error" not in err


# --- CSV: a quoted cell holding newlines ------------------------------------------------------------------------


def _csv_rows(out: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(line).items() if k not in ("run", "arm")} for line in out.splitlines()]


def test_a_quoted_newline_in_a_csv_cell_keeps_the_rows_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """csv.writer quotes a text with a newline; the line after it was read as a row of its own and merged into the
    step before it (step 3 showed train_loss .4). A line separator the csv module keeps in a cell (U+2028) did the
    same."""
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerows([["step", "train_loss", "note", "acc"], [1, 0.9, "a", 0.1], [2, 0.8, "multi\nline\n", 0.2],
                     [3, 0.7, 'say ""hi""\r\nbye', 0.3], [4, 0.6, "x\u2028y", 0.4], [5, 0.5, "b", 0.5]])
    rc, out, err = run_cli(["tail", str(path), "--format", "jsonl", "-n", "0"], capsys)
    assert rc == 0 and not err
    assert _csv_rows(out) == [
        {"step": 1, "train_loss": 0.9, "note": "a", "acc": 0.1},
        {"step": 2, "train_loss": 0.8, "note": "multi\nline\n", "acc": 0.2},
        {"step": 3, "train_loss": 0.7, "note": 'say ""hi""\nbye', "acc": 0.3},
        {"step": 4, "train_loss": 0.6, "note": "x\u2028y", "acc": 0.4},
        {"step": 5, "train_loss": 0.5, "note": "b", "acc": 0.5},
    ]


def test_a_quote_left_open_at_the_end_of_a_file_costs_its_line_in_a_one_shot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the rows after a stray quote were held for its closing quote: a one-shot read ended with them unshown, unsaid
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    path.write_text('step,loss,note\n0,1.0,ok\n1,0.9,"open quote\n2,0.8,x\n3,0.7,y\n', encoding="utf-8")
    rc, out, err = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0 and [line.split()[0] for line in out.splitlines()[1:]] == ["0", "2", "3"], out
    assert "metrics.csv:3: quote not closed by the end of the file" in err, err
    (store,) = load([tmp_path]).values()
    assert list(store.steps) == [0, 2, 3] and store.bad_count == 1


def test_a_csv_read_once_in_the_middle_of_a_multiline_cell_makes_no_rows_of_its_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the end-of-read flush read the held lines of a record still being written as rows: "42" became step 42
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["step", "loss", "sample"])
    for s in range(1, 5):
        w.writerow([s, 1 / s, f"answer {s}:\n42\nthe end"])
    text = buf.getvalue()
    cut = text[: text.index("answer 4:\n42\n") + len("answer 4:\n42\n")]
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    path.write_text(cut, encoding="utf-8")
    rc, out, err = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0 and [line.split()[0] for line in out.splitlines()[1:]] == ["1", "2", "3"], out
    assert "quote" not in err, err  # a record being written is not a bad line
