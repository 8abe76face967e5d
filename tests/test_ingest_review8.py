"""Review 8 (readers): an ``arm`` that is not a name, a reader's bug on one chunk, CSV cells holding newlines."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import steptable.ingest.readers.csvlog as csvlog
from steptable import Col, StepLogger
from steptable.ingest import Follower
from steptable.ingest.files.follow import load
from steptable.ingest.files.tail import BLOCK
from steptable.ingest.readers.csvlog import CsvParser, ends_quoted
from steptable.ingest.readers.jsonl import JsonlParser
from tests.helpers import run_cli, write_rows

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


@pytest.mark.parametrize("odd", [["a", "b"], {"name": "b"}, 3, 1.5, True, None, math.nan])
def test_an_arm_that_is_not_a_string_keeps_its_row_in_the_files_own_run(tmp_path: Path, odd: Any) -> None:
    """Two StepLoggers' arms share a file (split by their descriptions); a row naming no arm by a string stays with
    the file's first arm, whatever its ``arm`` holds, and the other arm's rows still go to it."""
    for arm in ("A", "B"):
        with StepLogger(COLS, run_dir=tmp_path / "r", arm=arm, console=False, alerts=False) as sl:
            sl.log({"step": 0, "rew": 0.1})
    rows = [{"step": 1, "rew": 0.2, "arm": odd}, {"step": 1, "rew": 0.3, "arm": "B"}]
    write_rows(tmp_path / "r" / "metrics.jsonl", rows)
    f = Follower([tmp_path])
    f.scan()
    assert not f.errors
    steps = {run: list(s.steps) for run, s in f.stores.items()}
    assert steps == {"r/metrics.jsonl": [0, 1], "r/metrics.jsonl#B": [0, 1]}
    assert f.stores["r/metrics.jsonl#B"].value(1, "rew") == 0.3


# --- a reader's bug on one chunk --------------------------------------------------------------------------------


def _failing_on(monkeypatch: pytest.MonkeyPatch, marker: bytes) -> None:
    """JsonlParser raises on any chunk that holds ``marker`` (a bug of ours met by one row)."""
    parse = JsonlParser.parse

    def buggy(self: JsonlParser, chunk: bytes, lineno: Any) -> Any:
        if marker in chunk:
            raise KeyError("reader bug")
        return parse(self, chunk, lineno)

    monkeypatch.setattr(JsonlParser, "parse", buggy)


def test_a_bug_on_one_chunk_costs_that_chunk_not_the_rest_of_a_one_shot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tail has read past a chunk the parser failed on; a one-shot read has no next poll, so the rows after it
    were never read (summary of a 600 KB file showed its first 256 KiB)."""
    path = tmp_path / "r" / "metrics.jsonl"
    pad = "x" * 80
    write_rows(path, [{"step": s, "rew": 0.5, "pad": pad} for s in range(6000)])
    write_rows(path, [{"step": 6000, "rew": 0.5, "pad": "boom"}])  # in the third block of 256 KiB, of four
    write_rows(path, [{"step": s, "rew": 0.5, "pad": pad} for s in range(6001, 9000)])
    _failing_on(monkeypatch, b'"boom"')
    f = Follower([tmp_path])
    f.scan()
    lost = sorted(set(range(9000)) - set(f.stores["r/metrics.jsonl"].steps))
    assert 6000 in lost and lost == list(range(lost[0], lost[-1] + 1))  # one run of rows: the failing chunk's
    assert len(lost) * len(json.dumps({"step": 6000, "rew": 0.5, "pad": pad})) < BLOCK and lost[-1] < 8999
    assert f.errors == [f"{path}: internal error (KeyError: 'reader bug')"]


def test_a_bug_on_the_last_unfinished_line_does_not_end_a_one_shot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``finish()`` (the last line, without its newline) raised out of the command: a traceback, no summary."""
    good, cut = tmp_path / "a" / "metrics.jsonl", tmp_path / "b" / "metrics.jsonl"
    write_rows(good, [{"step": 0, "rew": 0.5}])
    write_rows(cut, [{"step": 0, "rew": 0.5}])
    with open(cut, "a") as fh:
        fh.write(json.dumps({"step": 1, "rew": "boom"}))
    _failing_on(monkeypatch, b'"boom"')
    stores = load([tmp_path])
    assert list(stores["a/metrics.jsonl"].steps) == [0] and list(stores["b/metrics.jsonl"].steps) == [0]


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


def test_a_csv_record_cut_by_a_read_is_joined_with_its_rest(tmp_path: Path) -> None:
    """Followed live, the rest of a record whose quoted cell holds a newline may come in a later read."""
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    path.write_text('step,loss,note,acc\n1,0.9,a,0.1\n2,0.8,"multi\n')
    f = Follower([tmp_path])
    f.scan()
    store = f.stores["r/metrics.csv"]
    assert list(store.steps) == [1]
    with open(path, "a") as fh:
        fh.write('line",0.2\n3,0.7,b,0.3\n')
    f.scan()
    assert list(store.steps) == [1, 2, 3] and not store.bad
    assert [store.value(1, k) for k in ("loss", "note", "acc")] == [0.8, "multi\nline", 0.2]


def test_a_stray_quote_costs_its_line_not_the_rows_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A quote that is never closed holds at most MAX_RECORD_LINES lines; then its line is a bad line and the lines
    after it are rows again (also when they came in later reads)."""
    monkeypatch.setattr(csvlog, "MAX_RECORD_LINES", 4)
    p = CsvParser("m.csv")
    first = p.parse(b'step,loss,note\n0,0.5,"stray\n1,0.4,a\n', 1)
    assert first.steps == [] and not first.bad
    rest = p.parse(b"2,0.3,b\n3,0.2,c\n4,0.1,d\n", 4)
    assert rest.steps == [1, 2, 3, 4] and [r["loss"] for r in rest.rows or []] == [0.4, 0.3, 0.2, 0.1]
    assert [str(b) for b in rest.bad] == ["m.csv:2: quote not closed within 4 lines: line skipped"]


@given(st.text(alphabet='a,"', max_size=16), st.booleans())
def test_ends_quoted_reads_quotes_as_the_csv_module_does(line: str, quoted: bool) -> None:
    text = ('"' if quoted else "") + line
    swallowed = len(list(csv.reader(io.StringIO(text + "\nX\n")))) == 1 and text != ""  # the next line joined it
    assert ends_quoted(line, quoted) == swallowed


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


def test_rows_after_a_stray_quote_are_shown_live_after_a_few_lines() -> None:
    # tail -f showed nothing after a stray quote until 100 more lines came (and said nothing)
    p = CsvParser("m.csv")
    first = p.parse(b'step,loss,note\n1,0.5,ok\n2,0.4,"quoted start\n', 1)
    assert first.steps == [1]
    got = [p.parse(f"{s},0.{s},ok\n".encode(), s) for s in range(3, 8)]
    assert [st for g in got for st in g.steps] == [3, 4, 5, 6, 7]
    assert [str(b) for g in got for b in g.bad] == ["m.csv:3: quote not closed within 4 lines: line skipped"]
    # a real cell with newlines is still one cell
    q = CsvParser("q.csv")
    rows = q.parse(b'step,loss,note\n1,0.5,"a\n2,0.4,b\n3,0.3,c\nend"\n4,0.2,ok\n', 1)
    assert rows.steps == [1, 4] and rows.rows is not None and rows.rows[0]["note"] == "a\n2,0.4,b\n3,0.3,c\nend"
