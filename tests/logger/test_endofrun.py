"""steptable.logger.endofrun: the rows of table.txt read back from the JSONL at the end of a run, without a
RunStore of the whole run: the same rows, values and number forms as the readers give, in memory that does not grow
with the cells."""

from __future__ import annotations

import json
import math
import tracemalloc
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger
from steptable.logger import tablefile
from steptable.schemas import noted
from steptable.table import render
from tests.logger.helpers import TABLE_COLS


def _tricky(path: Path) -> None:
    """A crashed run resumed at step 40, an evaluation of an earlier step, a NaN, another arm's rows, an int column
    that later takes a float, a numeric column that later takes text, a bad line."""
    lines: list[Any] = []
    for s in range(60):
        lines.append({"step": s, "arm": "A", "loss": s / 100, "n": s, "tag": s * 1.5 if s < 50 else "x"})
        if s % 7 == 3:
            lines.append({"step": s, "arm": "B", "loss": 9.0})
        if s % 11 == 5:
            lines.append({"step": s - 2, "arm": "A", "acc": 0.5, "eval_loss": 1.0})
    for s in range(40, 70):  # the resume
        lines.append({"step": s, "arm": "A", "loss": float("nan") if s == 45 else -s / 100, "n": s + 0.5 * (s == 69)})
    text = "\n".join(json.dumps(r) for r in lines).replace("NaN", "null")
    path.write_text(text.replace('{"step": 12,', '{"step": 12 oops', 1) + "\n")


@pytest.mark.parametrize("chunk", [1 << 20, 200])
def test_table_txt_shows_the_rows_the_readers_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """Read back in chunks (of a line or two here), placed without a RunStore: the same rows, values and number
    forms as a RunStore of the whole file gives."""
    from steptable.logger import endofrun

    monkeypatch.setattr(endofrun, "_CHUNK", chunk)
    jsonl = tmp_path / "metrics.jsonl"
    _tricky(jsonl)
    out = tablefile.write(TABLE_COLS, jsonl, tmp_path, "A", 0, max_rows=None)
    assert out == tmp_path / "table.A.txt"
    lines = out.read_text().splitlines()
    assert lines[0] == render.header(TABLE_COLS) and lines[1:] == _reader_table(TABLE_COLS, jsonl, "A")
    assert [int(line.split()[0]) for line in lines[1:]] == [s for s in range(70) if s != 12]  # (12: a bad line)


def test_table_txt_is_read_back_in_memory_that_does_not_grow_with_the_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """30k rows x 30 columns: a RunStore of them holds 7 MB of cells; read back in small chunks the table needs a
    few bytes a row (its step and where it comes from)."""
    from steptable.logger import endofrun

    monkeypatch.setattr(endofrun, "_CHUNK", 1 << 15)
    jsonl = tmp_path / "metrics.jsonl"
    keys = [f"m{i}" for i in range(30)]
    with open(jsonl, "w") as f:
        for s in range(30_000):
            f.write(json.dumps({"step": s, **{k: s + i / 7 for i, k in enumerate(keys)}}) + "\n")
    cols = [Col("step", 6, "step", "d"), Col("m0", 8, "m0", ".1f")]
    tracemalloc.start()
    try:
        out = tablefile.write(cols, jsonl, tmp_path, None, 0, max_rows=None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out is not None and len(out.read_text().splitlines()) == 30_001
    assert peak < 4_000_000


def _random_run(rng: Any, path: Path) -> None:
    """Rows as trainers write them, in random order of events: resumes from an earlier step, evaluations of an
    earlier step, other arms' rows, NaN and null cells, a column whose type changes (int, float, text, pair)."""
    lines: list[str] = []
    step = 0
    for _ in range(rng.randint(1, 80)):
        event = rng.random()
        if event < 0.08 and step > 3:
            step = rng.randint(0, step - 1)  # a resume from a checkpoint
        row: dict[str, Any] = {"step": step, "arm": rng.choice("AAAB")}
        for key in rng.sample(["loss", "n", "tag", "acc", "x"], rng.randint(0, 5)):
            row[key] = rng.choice([rng.random(), rng.randint(-5, 5), None, "t", [1, 4], float("nan"), 2**60])
        if event > 0.9 and step:
            row = {"step": rng.randint(0, step), "arm": "A", "acc": rng.random()}  # an evaluation of an earlier step
        else:
            step += rng.choice([1, 1, 1, 2])
        lines.append(json.dumps(row).replace("NaN", "null"))
    if rng.random() < 0.3:
        lines.insert(rng.randint(0, len(lines)), '{"step": oops')
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("seed", range(60))
def test_table_txt_equals_a_whole_file_store_on_random_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             seed: int) -> None:
    """endofrun places rows as RunStore does without holding them: any divergence from the readers (a change to
    RunStore's placement not made there too) shows up here."""
    import random

    from steptable.logger import endofrun

    monkeypatch.setattr(endofrun, "_CHUNK", 300)
    rng = random.Random(seed)
    jsonl = tmp_path / "metrics.jsonl"
    _random_run(rng, jsonl)
    out = tablefile.write(TABLE_COLS, jsonl, tmp_path, "A", 0, max_rows=None)
    assert out is not None
    assert out.read_text().splitlines()[1:] == _reader_table(TABLE_COLS, jsonl, "A")


def _reader_table(cols: list[Col], jsonl: Path, arm: str) -> list[str]:
    """The rows as the readers place them: the file through JsonlParser into a RunStore, chunk by chunk, as a
    follower reads it."""
    from steptable.ingest.parsed import Parsed, cols_to_rows
    from steptable.ingest.readers.jsonl import JsonlParser
    from steptable.ingest.store import RunStore

    store = RunStore("t", jsonl, "jsonl", arm)
    parser = JsonlParser(str(jsonl))
    with open(jsonl, "rb") as src:
        lineno = 1
        while lines := src.readlines(1 << 20):
            parsed = parser.parse(b"".join(lines), lineno)
            lineno += len(lines)
            rows = parsed.rows if parsed.rows is not None else cols_to_rows(parsed.cols or {}, len(parsed.steps))
            keep = [i for i, r in enumerate(rows) if r.get("arm", arm) == arm]
            store.add(Parsed(steps=[parsed.steps[i] for i in keep], rows=[rows[i] for i in keep],
                             step_key=parsed.step_key), math.nan)
    row = render.compile_row(noted(cols, [store]))  # each column's notation as the readers choose it
    return [row(store.row(i)) for i in range(len(store))]


def _sparse_run(path: Path, rows: int) -> None:
    """Each row logs its own few of 150 per-task keys (a task not sampled logs None, which StepLogger leaves out, or
    NaN), then evaluations of earlier steps join their rows and a resume from step rows - 30 replaces the tail (a
    step picks the same tasks each time it is logged, so the resumed rows measure again what the old ones held)."""
    import random

    rng = random.Random(rows)
    tasks = [f"task/{i}/acc" for i in range(150)]
    with open(path, "w") as f:
        for s in [*range(rows), *range(rows - 30, rows + 10)]:
            pick = random.Random(s).random
            picked = [t for t in tasks if pick() < 0.2]
            row: dict[str, Any] = {"step": s, "loss": rng.random()}
            row.update((t, rng.choice([rng.random(), rng.random(), rng.random(), None, math.nan])) for t in picked)
            f.write(json.dumps(row).replace("NaN", "null") + "\n")
            if s % 97 == 50 and s < rows - 30:  # (again after the resume it would be a resume from there)
                f.write(json.dumps({"step": s - 7, "eval/acc": 0.5, "eval/n": s}) + "\n")


def test_rows_that_each_hold_their_own_keys_cost_a_few_bytes_a_row(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Almost every row holds its own set of keys: table.txt still equals the readers' table, and reading it back
    costs a few bytes a row more for them (not a set of its keys per row, 2 KB a row here)."""
    from steptable.logger import endofrun

    monkeypatch.setattr(endofrun, "_CHUNK", 1 << 15)
    cols = [Col("step", 6, "step", "d"), Col("loss", 6, "loss", ".3f"), Col("task/0/acc", 6, "t0", ".3f"),
            Col("task/149/acc", 6, "t149", ".3f"), Col("eval/acc", 6, "eval", ".3f")]

    def peak(rows: int) -> int:
        run = tmp_path / str(rows)
        run.mkdir()
        _sparse_run(run / "metrics.jsonl", rows)
        tracemalloc.start()
        try:
            out = tablefile.write(cols, run / "metrics.jsonl", run, None, 0, max_rows=None)
            _, top = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert out is not None
        lines = out.read_text().splitlines()
        assert lines[1:] == _reader_table(cols, run / "metrics.jsonl", "A")
        assert len(lines) == 1 + rows + 10 and "0.500" in out.read_text()
        return top

    peak(200)  # (what is made once: caches, interned names)
    small, large = peak(1000), peak(5000)
    assert large - small < 200 * 4000


@pytest.mark.parametrize("chunk", [1 << 20, 200])
def test_a_long_run_s_table_holds_its_last_rows_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, captured: list[str], chunk: int
) -> None:
    from steptable.logger import endofrun

    monkeypatch.setattr(endofrun, "_CHUNK", chunk)
    jsonl = tmp_path / "metrics.jsonl"
    _tricky(jsonl)
    done = tablefile.write_table(TABLE_COLS, jsonl, tmp_path, "A", 2, max_rows=25)
    assert done is not None and (done.rows, done.shown) == (69, 25)
    lines = done.path.read_text().splitlines()
    assert lines[0].startswith("# the last 25 of 69 rows; every row: metrics.jsonl")
    header = render.header(TABLE_COLS)
    assert [line for line in lines[1:] if line != header] == _reader_table(TABLE_COLS, jsonl, "A")[-25:]
    assert lines[1] == lines[12] == render.header(TABLE_COLS) and len(lines) == 1 + 25 + 3  # a header every 10 rows

    monkeypatch.setattr(tablefile, "write_table", partial(tablefile.write_table, max_rows=10))
    with StepLogger(TABLE_COLS, run_dir=tmp_path / "run", dump_rows=3, alerts=False) as sl:
        for step in range(300):
            sl.log({"step": step, "loss": 0.25})
    table = (tmp_path / "run" / "table.txt").read_text().splitlines()
    assert table[0].startswith("# the last 10 of 300 rows") and table[-1].split()[:2] == ["299", "0.250"]
    # the console's end of the run: one line that points to the table (the rows are printed above it already)
    end = "".join(captured).split("end of run: 300 rows")[1]
    assert end == f"; the last 10 rows, every column: {tmp_path / 'run' / 'table.txt'}\n"
    dump = sl.dump()
    assert f"the last 10 rows, every column: {tmp_path / 'run' / 'table.txt'}" in dump
    assert [line.split()[0] for line in dump.splitlines()[2:]] == ["297", "298", "299", "the"]  # the last rows only
