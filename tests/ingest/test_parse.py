"""Line decoding, non-finite literals, flattening, the typed fast path against the tolerant path."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from steptable.ingest.parse import (
    MISSING,
    LineError,
    decode_line,
    fix_chunk,
    flatten,
    quote_bignums,
    quote_nonfinite,
    step_of,
)
from steptable.ingest.readers.console import parse_console_line
from steptable.ingest.readers.jsonl import JsonlParser
from steptable.ingest.store import RunStore
from tests.ingest.helpers import feed_chunks


def test_bare_nonfinite_literals_outside_strings_only() -> None:
    line = b'{"a": NaN, "b": Infinity, "c": -Infinity, "s": "NaN and Infinity", "d": [NaN, 1]}'
    obj = decode_line(line)
    assert obj is not None
    row = flatten(obj)
    assert math.isnan(row["a"]) and row["b"] == math.inf and row["c"] == -math.inf
    assert row["s"] == "NaN and Infinity"  # text inside a string is never touched
    assert quote_nonfinite(b'{"s": "x\\" NaN", "a": NaN}') == b'{"s": "x\\" NaN", "a": "NaN"}'


def test_nan_strings_and_null_are_values() -> None:
    obj = decode_line(b'{"a": "nan", "b": "inf", "c": null, "d": "-Infinity", "e": "hold"}')
    assert obj is not None
    row = flatten(obj)
    assert math.isnan(row["a"]) and row["b"] == math.inf and row["c"] is None and row["d"] == -math.inf
    assert row["e"] == "hold"


def test_number_out_of_range_reads_as_inf_with_warning() -> None:
    warnings: list[str] = []
    obj = decode_line(b'{"a": 1e999, "b": -2.5E+400, "c": 1e-999, "s": "x1e999"}', warnings.append)
    assert obj is not None
    row = flatten(obj)
    # (the out-of-range repair stays out of strings)
    assert row["a"] == math.inf and row["b"] == -math.inf and row["c"] == 0.0 and row["s"] == "x1e999"
    assert warnings == ["number out of range read as inf (row kept)"]
    assert quote_bignums(b"[1e308]") == b"[1e308]"


def test_invalid_utf8_replaced_and_bom_stripped() -> None:
    warnings: list[str] = []
    obj = decode_line(b'\xef\xbb\xbf{"a": 1, "s": "ab\xffc"}\r', warnings.append)
    assert obj == {"a": 1, "s": "ab\ufffdc"}
    assert len(warnings) == 2


@pytest.mark.parametrize(("line", "reason"), [
    (b'{"a": 1', "malformed JSON"),
    (b"[1, 2]", "not a JSON object (list)"),
    (b"3", "not a JSON object (int)"),
    (b'"text"', "not a JSON object (str)"),
])
def test_lines_without_a_row(line: bytes, reason: str) -> None:
    with pytest.raises(LineError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        decode_line(line)


def test_blank_line_is_no_row() -> None:
    assert decode_line(b"   \r") is None


def test_flatten_nested_and_verl_envelope() -> None:
    row = flatten({"step": 3, "data": {"actor/pg_loss": 0.5, "critic": {"score": {"mean": 1}}},
                   "kl": 2.0, "eval": {"acc": [[1, 2], [3, 4]]}, "gt_s": [3, 8], "flag": True})
    assert row == {"step": 3, "actor/pg_loss": 0.5, "critic/score/mean": 1, "kl": 2.0,
                   "eval/acc": [[1, 2], [3, 4]], "gt_s": (3, 8), "flag": True}


def test_fix_chunk_rewrites_only_lines_with_tokens() -> None:
    chunk = b'\xef\xbb\xbf{"a": 1}\n{"a": NaN, "b": NaN}\n{"s": "NaN"}\n\xef\xbb\xbf{"a": Infinity}\n'
    assert fix_chunk(chunk) == b'{"a": 1}\n{"a": "NaN", "b": "NaN"}\n{"s": "NaN"}\n{"a": "Infinity"}\n'


def test_step_of() -> None:
    assert [step_of(v) for v in (3, 4.0, "5", 2.5, True, None, "x")] == [3, 4, 5, None, None, None, None]


def test_console_line_values() -> None:
    row = parse_console_line("critic/kl:0.001 - actor/entropy_loss:nan - mfu/actor:np.float64(0.25) - n:3 - x:abc")
    assert row is not None
    assert row["critic/kl"] == 0.001 and math.isnan(row["actor/entropy_loss"]) and row["mfu/actor"] == 0.25
    assert row["n"] == 3 and row["x"] == "abc"


# --- the typed fast path gives what the tolerant path gives ---------------------------------------------------


def _rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for s in range(n):
        r: dict[str, Any] = {"step": s, "loss": rng.random(), "n": rng.randrange(100), "phase": "a",
                             "data": {"x/y": rng.random()}}
        if s % 7 == 3:
            r["loss"] = None
        if s % 11 == 5:
            r["loss"] = float("nan")
        if s % 5 == 1:
            del r["n"]
        rows.append(r)
    return rows


def _dump(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _same(a: RunStore, b: RunStore) -> None:
    assert a.keys == b.keys and list(a.steps) == list(b.steps)
    for i in range(len(a)):
        ra, rb = a.row(i), b.row(i)
        assert ra.keys() == rb.keys()
        for k in ra:
            va, vb = ra[k], rb[k]
            assert (isinstance(va, float) and math.isnan(va) and math.isnan(vb)) or (va == vb and type(va) is type(vb))


def test_fast_path_matches_tolerant_path() -> None:
    rows = _rows(300)
    data = _dump(rows)
    lines = data.splitlines(keepends=True)
    chunks = [b"".join(lines[i : i + 20]) for i in range(0, len(lines), 20)]
    fast, parser = feed_chunks(chunks)
    assert parser.fast_chunks >= 10  # the fast path did run
    slow = RunStore("r", "r.jsonl")
    p2 = JsonlParser("r.jsonl")
    for i, ln in enumerate(lines):
        slow.add(p2._tolerant(ln, i + 1))
    _same(fast, slow)
    assert fast.is_integer("n") and fast.value(1, "n") is None and isinstance(fast.value(0, "n"), int)
    assert fast.value(3, "loss") is not None and math.isnan(fast.value(3, "loss"))
    assert fast.column("phase")[5] == "a" and fast.value(0, "x/y") == rows[0]["data"]["x/y"]


def test_fast_path_falls_back_on_new_key_type_change_and_bad_line() -> None:
    rows = _rows(60)
    rows[45]["new"] = 1.5
    rows[50]["loss"] = True  # a bool where numbers were: the column becomes a list
    data = _dump(rows).replace(b'{"step": 55,', b'{"step": 55, oops')
    lines = data.splitlines(keepends=True)
    chunks = [b"".join(lines[i : i + 10]) for i in range(0, len(lines), 10)]
    store, _ = feed_chunks(chunks)
    assert [b.lineno for b in store.bad] == [56]
    assert list(store.steps) == [s for s in range(60) if s != 55]
    assert store.value(store.index_of_step(45), "new") == 1.5 and store.value(0, "new") is None
    assert not store.is_numeric("loss") and store.value(store.index_of_step(50), "loss") is True
    assert store.value(0, "loss") == rows[0]["loss"]


def test_missing_is_not_nan() -> None:
    assert MISSING is not None and repr(MISSING) == "MISSING"


def _chunks(rows: list[dict[str, Any]], size: int) -> list[bytes]:
    lines = _dump(rows).splitlines(keepends=True)
    return [b"".join(lines[i : i + size]) for i in range(0, len(lines), size)]


def test_fast_path_nested_step_and_verl_envelope() -> None:
    rows = [{"training": {"global_step": 10 * s}, "data": {"actor/pg_loss": s / 10, "perf": {"mfu": 0.5}}}
            for s in range(80)]
    store, parser = feed_chunks(_chunks(rows, 10))
    assert parser.fast_chunks >= 6 and parser.step_key == "training/global_step"
    assert list(store.steps) == [10 * s for s in range(80)]
    assert store.keys == ["training/global_step", "actor/pg_loss", "perf/mfu"]
    assert store.value(79, "actor/pg_loss") == 7.9


def test_fast_path_resume_and_merge_in_later_chunks() -> None:
    rows = [{"step": s, "loss": float(s), "lr": 0.1} for s in range(50)]
    rows += [{"step": s, "loss": 100.0 + s, "lr": 0.2} for s in range(30, 60)]  # resumed at 30
    rows.insert(20, {"step": 19, "test/acc": 0.5, "lr": 0.1})  # a late eval row, next to its step
    store, parser = feed_chunks(_chunks(rows, 10))
    assert parser.fast_chunks >= 4 and store.resumes == [30]
    assert list(store.steps) == list(range(60)) and store.value(30, "loss") == 130.0
    assert store.row(19) == {"step": 19, "loss": 19.0, "lr": 0.1, "test/acc": 0.5}


def test_nan_heavy_chunks_are_rewritten_before_decoding() -> None:
    data = b"".join(b'{"step": %d, "a": NaN, "b": -Infinity, "s": "x NaN"}\n' % s for s in range(100))
    lines = data.splitlines(keepends=True)
    store, parser = feed_chunks([b"".join(lines[i : i + 10]) for i in range(0, 100, 10)])
    assert parser.fast_chunks == 9 and parser._fix_first
    assert math.isnan(store.value(99, "a")) and store.value(99, "b") == -math.inf and store.value(99, "s") == "x NaN"


def test_console_metrics_end_at_a_carriage_return() -> None:
    """A progress bar redrawn over the metrics line (tqdm writes ``\\r``) is not part of the last value; a metrics
    line drawn after a bar on the same line is still found; CRLF endings read as LF."""
    from steptable.ingest.readers.console import ConsoleParser

    chunk = (b"step:1 - loss:0.5 - acc:0.25\r 40%|####      | 4/10 [00:04<00:06]\n"
             b" 50%|#####     | 5/10\rstep:2 - loss:0.4 - acc:0.5\r\n")
    parsed = ConsoleParser("x").parse(chunk)
    assert parsed.steps == [1, 2]
    assert parsed.rows == [{"step": 1, "loss": 0.5, "acc": 0.25}, {"step": 2, "loss": 0.4, "acc": 0.5}]


def test_console_hyperlinks_and_colours_are_not_part_of_keys() -> None:
    """A coloured log whose keys are OSC 8 hyperlinks (ended by ESC \\ or BEL): the keys read as their text; an
    unterminated OSC does not swallow the next line."""
    from steptable.ingest.readers.console import ConsoleParser

    chunk = (b"step:1 - \x1b]8;;http://x\x1b\\loss\x1b]8;;\x1b\\:0.5 - \x1b]8;;http://y\x07acc\x1b]8;;\x07:0.25"
             b" - \x1b[31mkl\x1b[0m:0.1\n\x1b]0;title\nstep:2 - loss:0.4\n")
    parsed = ConsoleParser("x").parse(chunk)
    assert parsed.rows == [{"step": 1, "loss": 0.5, "acc": 0.25, "kl": 0.1}, {"step": 2, "loss": 0.4}]
