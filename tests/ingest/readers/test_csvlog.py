"""Review 6 of the readers: steps of a followed file whose step key is not ``step`` (SB3 rewrites its CSV from the top),
comment lines before a CSV header (SB3's monitor.csv), numbers logged as JSON strings."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import Follower, preview_tail
from steptable.ingest.parse import number
from steptable.ingest.readers.csvlog import CsvParser, cell
from steptable.ingest.readers.jsonl import JsonlParser
from steptable.ingest.store import RunStore
from tests.helpers import run_cli
from tests.ingest.helpers import NOT_NUMBERS, NUMBERS, check_steps, follower_store
from tests.trainer_logs import write_sb3_monitor

# --- 1. steps of a followed file whose step key is another ------------------------------------------------------


class Sb3Csv:
    """stable_baselines3.common.logger.CSVOutputFormat.write: a key not seen before rewrites the file from the top,
    the older rows getting empty cells for it."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(path, "w+")  # kept open across writes, as SB3 does
        self.keys: list[str] = []

    def write(self, kv: dict[str, Any]) -> None:
        extra = sorted(k for k in kv if k not in self.keys)
        if extra:
            self.keys.extend(extra)
            self.f.seek(0)
            lines = self.f.readlines()
            self.f.seek(0)
            self.f.write(",".join(self.keys) + "\n")
            for line in lines[1:]:
                self.f.write(line[:-1] + "," * len(extra) + "\n")
        self.f.write(",".join("" if kv.get(k) is None else str(kv[k]) for k in self.keys) + "\n")
        self.f.flush()


@pytest.mark.parametrize("step_key", ["time/total_timesteps", "global_step", "_step", None])
def test_a_followed_csv_rewritten_from_the_top_keeps_its_steps(tmp_path: Path, step_key: str | None) -> None:
    """SB3's start-up: train/* appears at iteration 2, rollout/* at 4, each rewriting the file (the step column
    read nan after every rewrite: the copied rows carried the ``step`` the store shows, which became a real key)."""
    path = tmp_path / "PPO_1" / "progress.csv"
    writer = Sb3Csv(path)
    fo = Follower([tmp_path])
    want: list[int] = []
    for it in range(1, 9):
        kv: dict[str, Any] = {"time/fps": 1500 + it, "time/iterations": it}
        if step_key is not None:
            kv[step_key] = 2048 * it
        if it >= 2:
            kv["train/loss"] = 5.0 - it / 10
        if it >= 4:
            kv["rollout/ep_rew_mean"] = 20.0 + it
        writer.write(kv)
        fo.scan()
        want.append(2048 * it if step_key is not None else it - 1)
        store = follower_store(fo)
        check_steps(store, want)
    writer.f.close()
    assert store.generation == 0 and list(store.column("time/fps")) == [1500.0 + it for it in range(1, 9)]
    assert list(store.column("rollout/ep_rew_mean"))[3:] == [24.0, 25.0, 26.0, 27.0, 28.0]


def _write(path: Path, kind: str, step_key: str | None, steps: range, scale: float) -> None:
    """Rows of ``steps`` (``loss`` = step x scale) as JSONL or CSV, with ``step_key`` or numbered by position."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{**({step_key: s} if step_key else {}), "loss": s * scale} for s in steps]
    if kind == "jsonl":
        text = "".join(json.dumps(r) + "\n" for r in rows)
    else:
        keys = list(rows[0])
        text = ",".join(keys) + "\n" + "".join(",".join(str(r[k]) for k in keys) + "\n" for r in rows)
    path.write_text(text)


def _append(path: Path, kind: str, step_key: str | None, steps: range, scale: float) -> None:
    lines = [{**({step_key: s} if step_key else {}), "loss": s * scale} for s in steps]
    with open(path, "a") as f:
        for r in lines:
            f.write(json.dumps(r) + "\n" if kind == "jsonl" else ",".join(str(v) for v in r.values()) + "\n")


@pytest.mark.parametrize("how", ["truncated", "replaced"])
@pytest.mark.parametrize("step_key", ["time/total_timesteps", "global_step", "_step", None])
@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_a_followed_file_restarted_or_replaced_keeps_its_steps(
    tmp_path: Path, kind: str, step_key: str | None, how: str
) -> None:
    """A restart that truncates the file, or a new file moved in its place, then appended to: every row keeps its
    step (the CSV's new rows read nan: the rows copied from the re-read file had stored a ``step`` key)."""
    path = tmp_path / "run" / f"{'progress.csv' if kind == 'csv' else 'metrics.jsonl'}"
    _write(path, kind, step_key, range(0, 6), 1.0)
    fo = Follower([tmp_path])
    fo.scan()
    check_steps(follower_store(fo), list(range(6)))
    if how == "truncated":
        _write(path, kind, step_key, range(0, 3), 2.0)
    else:
        other = tmp_path / "next.tmp"
        _write(other, kind, step_key, range(0, 3), 2.0)
        os.replace(other, path)
    fo.scan()
    store = follower_store(fo)
    check_steps(store, [0, 1, 2])
    assert list(store.column("loss")) == [0.0, 2.0, 4.0]
    _append(path, kind, step_key, range(3, 5), 2.0)
    fo.scan()
    check_steps(store, [0, 1, 2, 3, 4])
    assert list(store.column("loss")) == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_sb3_monitor_csv_named_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mon" / "0.monitor.csv"
    write_sb3_monitor(path, 10)
    rc, out, err = run_cli(["tail", str(path), "--format", "jsonl", "-n", "0"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and err == "", err
    assert [r["step"] for r in rows] == list(range(10))
    assert [r["r"] for r in rows] == [10.0 + i for i in range(10)] and rows[3]["l"] == 13 and rows[4]["t"] == 2.0


@pytest.mark.parametrize("head", ["\ufeff", "\ufeff\n\n", "\n  \n", "# written by hand\n\n"])
def test_a_bom_blank_and_comment_lines_before_the_header(tmp_path: Path, head: str) -> None:
    path = tmp_path / "m.csv"
    write_sb3_monitor(path, 3, head)
    parser = CsvParser(str(path))
    parsed = parser.parse(path.read_bytes(), 1)
    assert parser.header == ["r", "l", "t"] and parser.step_key is None and not parsed.bad
    assert list(parsed.steps) == [0, 1, 2] and parsed.rows == [
        {"r": 10.0, "l": 10, "t": 0.0}, {"r": 11.0, "l": 11, "t": 0.5}, {"r": 12.0, "l": 12, "t": 1.0}
    ]


def test_comment_lines_and_header_split_over_chunks(tmp_path: Path) -> None:
    """Followed as it is written: a chunk may end after the comment line, before the header."""
    parser = CsvParser("m.csv")
    assert parser.parse(b'#{"t_start": 1.0}\n', 1).steps == []
    assert parser.parse(b"\n", 2).steps == []
    parsed = parser.parse(b"r,l,t\n1.5,3,0.1\n", 3)
    assert parser.header == ["r", "l", "t"] and parsed.rows == [{"r": 1.5, "l": 3, "t": 0.1}]


def test_a_header_written_as_a_comment_numpy_savetxt(tmp_path: Path) -> None:
    """``np.savetxt(path, a, delimiter=",", header="step,loss")`` writes ``# step,loss``: the rows are numbers, so
    the last comment is the header; a comment followed by a header line stays a comment."""
    parser = CsvParser("a.csv")
    parsed = parser.parse(b"# step,loss\n0.000000000000000000e+00,2.5e-01\n1,0.125\n", 1)
    assert parser.header == ["step", "loss"] and parser.step_key == "step" and not parsed.bad
    assert list(parsed.steps) == [0, 1] and [r["loss"] for r in parsed.rows or []] == [0.25, 0.125]
    parser = CsvParser("b.csv")
    parsed = parser.parse(b"# step,loss\nstep,loss,acc\n3,0.5,0.9\n", 1)
    assert parser.header == ["step", "loss", "acc"] and parsed.rows == [{"step": 3, "loss": 0.5, "acc": 0.9}]
    # a commented header over rows with a text column: the first row is a row, not the header
    parser = CsvParser("c.csv")
    parsed = parser.parse(b"#step,phase,loss\n0,warmup,1.0\n1,main,0.9\n", 1)
    assert parser.header == ["step", "phase", "loss"] and list(parsed.steps) == [0, 1]
    assert [r["phase"] for r in parsed.rows or []] == ["warmup", "main"]


def test_preview_of_a_big_monitor_csv_finds_its_header(tmp_path: Path) -> None:
    """The preview reads the header from the top of the file: past the comment line, not the comment line."""
    path = tmp_path / "0.monitor.csv"
    write_sb3_monitor(path, 2000)
    store = preview_tail(path, max_bytes=1000)
    assert store.meta["preview_offset"] > 0 and len(store) > 10 and not store.bad
    assert store.keys == ["r", "l", "t"] and store.value(len(store) - 1, "l") == 10 + 1999


def test_the_number_rule() -> None:
    """CSV cells: one strict rule for text that is a number (a CSV cell has no type but its text)."""
    for text, want in NUMBERS.items():
        got = number(text)
        assert got == want and type(got) is type(want), text
    for text in NOT_NUMBERS:
        assert number(text) is None, text


def test_csv_cells_read_numbers_by_the_rule() -> None:
    for text in [*NUMBERS, *NOT_NUMBERS]:
        c = cell(text)
        if not text.strip():
            assert c is None
        elif number(text) is not None:
            assert type(c) in (int, float) and c == number(text), text
        else:
            assert c == text, text


def _jsonl_store(chunks: list[bytes]) -> tuple[RunStore, JsonlParser]:
    parser = JsonlParser("m.jsonl")
    store = RunStore("r", "m.jsonl")
    line = 1
    for chunk in chunks:
        store.add(parser.parse(chunk, line), math.nan)
        line += chunk.count(b"\n")
    return store, parser


def _lines(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_json_strings_that_look_like_numbers_stay_text_on_both_paths() -> None:
    """JSON says which values are text: a git hash "8e12345", a version "1.10", a seed past float precision, a job id
    stay as they were written (read as numbers they showed as inf, 1.1, 1.23e18, 4.82e7), whichever parse path
    read the chunk; only the non-finite spellings read as floats."""
    def row(s: int) -> dict[str, Any]:
        return {"step": s, "loss": 1.0 / (s + 1), "commit": "8e12345", "version": "1.10",
                "seed": "1234567890123456789", "job": "48234217", "kl": "NaN" if s == 3 else 0.1}

    first = _lines([row(s) for s in range(0, 50)])
    later = _lines([row(s) for s in range(50, 100)])
    fast, parser = _jsonl_store([first, later])
    assert parser.fast_chunks >= 1  # (the typed path read a chunk)
    slow, _ = _jsonl_store([line + b"\n" for line in (first + later).splitlines()])
    for store in (fast, slow):
        assert [store.value(60, k) for k in ("commit", "version", "seed", "job")] == [
            "8e12345", "1.10", "1234567890123456789", "48234217"]
        assert store.is_numeric("kl") and math.isnan(store.value(3, "kl"))
    for key in fast.keys:
        assert repr(fast.cells(key)) == repr(slow.cells(key)), key


def test_tail_keeps_number_like_text_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps({"step": s, "loss": 0.5, "commit": "8e12345", "version": "1.10"}) + "\n"
                            for s in range(3)))
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "1"], capsys)
    last = json.loads(out.splitlines()[-1])
    assert rc == 0 and last["commit"] == "8e12345" and last["version"] == "1.10"
    rc, out, _ = run_cli(["tail", str(tmp_path), "--width", "0"], capsys)
    assert rc == 0 and "8e12345" in out and "1.10" in out and "inf" not in out


def test_a_dataset_of_number_strings_is_not_taken_for_a_run(tmp_path: Path) -> None:
    """Discovery counts JSON numbers only: a dataset JSONL beside a run whose ids and labels are number strings
    stays a dataset (the store reading such strings as numbers must not make it look like metrics)."""
    run = tmp_path / "logs" / "a" / "metrics.jsonl"
    run.parent.mkdir(parents=True)
    run.write_text("".join(json.dumps({"step": s, "loss": 1 / (s + 1)}) + "\n" for s in range(3)))
    data = tmp_path / "logs" / "a" / "train_split.jsonl"
    data.write_text("".join(json.dumps({"id": str(100 + i), "label": "1", "difficulty": "0.5", "text": "q"}) + "\n"
                            for i in range(20)))
    fo = Follower([tmp_path / "logs"])
    fo.scan()
    assert list(fo.stores) == ["a/metrics.jsonl"]
