"""steptable.ingest.readers.jsonl: chunks of JSONL lines into Parsed batches: NaN-heavy chunks rewritten
before decoding, JSON strings that look like numbers kept as text."""

from __future__ import annotations

import json
import math
from typing import Any

from steptable.ingest.readers.jsonl import JsonlParser
from steptable.ingest.store import RunStore
from tests.ingest.helpers import feed_chunks


def test_nan_heavy_chunks_are_rewritten_before_decoding() -> None:
    data = b"".join(b'{"step": %d, "a": NaN, "b": -Infinity, "s": "x NaN"}\n' % s for s in range(100))
    lines = data.splitlines(keepends=True)
    store, parser = feed_chunks([b"".join(lines[i : i + 10]) for i in range(0, 100, 10)])
    assert parser.fast_chunks == 9 and parser._fix_first
    assert math.isnan(store.value(99, "a")) and store.value(99, "b") == -math.inf and store.value(99, "s") == "x NaN"


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
    stay as they were written (read as numbers they would show as inf, 1.1, 1.23e18, 4.82e7), whichever parse
    path read the chunk; only the non-finite spellings read as floats."""
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


def test_a_parser_carried_on_parses_as_the_one_that_read_everything() -> None:
    """``state`` is what the next chunk's result depends on (row counts and the last step aside): equal states after
    different histories parse the same chunk alike; ``carry_on`` takes up another parser's end state and counts."""
    import pickle

    def chunk(lo: int, hi: int, **extra: Any) -> bytes:
        return "".join(json.dumps({"step": s, "loss": 1 / (1 + s), **extra}) + "\n" for s in range(lo, hi)).encode()

    nonfinite = b'{"step": 40, "loss": NaN}\n{"step": 41, "loss": Infinity}\n'
    chunks = [chunk(0, 10), chunk(10, 20, kl=0.1), chunk(20, 30), nonfinite, chunk(42, 50, kl=0.2), chunk(50, 60)]
    whole = JsonlParser("m")
    for c in chunks:
        whole.parse(c, 1)
    part = JsonlParser("m")
    for c in chunks[:3]:
        part.parse(c, 1)
    apart = JsonlParser("m")  # (another process, from part's state: its own history, the same state)
    for c in (chunks[0], chunks[1], chunks[2], chunks[2]):
        apart.parse(c, 1)
    assert apart.state() == part.state() and apart.ordinal != part.ordinal
    rows, fast, slow = apart.ordinal, apart.fast_chunks, apart.slow_chunks
    for c in chunks[3:]:
        apart.parse(c, 1)
    state = pickle.loads(pickle.dumps(apart.state()))  # (as it comes through the pipe)
    part.carry_on(state, apart.ordinal - rows, apart.last_step, apart.fast_chunks - fast, apart.slow_chunks - slow)
    assert part.state() == whole.state() and (part.ordinal, part.last_step) == (whole.ordinal, whole.last_step)
    assert (part.fast_chunks, part.slow_chunks) == (whole.fast_chunks, whole.slow_chunks)
    nxt = chunk(60, 70, kl=0.3)
    a, b = whole.parse(nxt, 1), part.parse(nxt, 1)
    assert repr((a.steps, a.cols, a.rows, a.int_keys)) == repr((b.steps, b.cols, b.rows, b.int_keys))
    other = JsonlParser("m")  # the same keys, first seen in another order: another state (the columns' order)
    other.parse(b"".join(json.dumps({"step": s, "kl": 0.1, "loss": 0.5}).encode() + b"\n" for s in range(9)), 1)
    assert sorted(other.state()[1]) == sorted(whole.state()[1]) and other.state()[1] != whole.state()[1]


def test_carry_step_puts_a_row_without_the_step_in_the_last_steps_row_unreported() -> None:
    rows = [{"ev": 1}, {"s": 10, "a": 1}, {"ev": 2}, {"s": 20, "a": 2}, {"s": None, "ev": 3}]
    carried = JsonlParser("m.jsonl", step_keys=("s",), carry_step=True).parse(_lines(rows), 1)
    assert list(carried.steps) == [0, 10, 10, 20, 21]  # (before any step: its position; a null is no carry)
    assert [b.reason.split(":")[0] for b in carried.bad] == ["step 's' missing"]
    placed = JsonlParser("m.jsonl", step_keys=("s",)).parse(_lines(rows), 1)
    assert list(placed.steps) == [0, 10, 11, 20, 21] and placed.bad


def test_carry_step_on_the_typed_path_gives_the_tolerant_paths_steps() -> None:
    first = [{"s": 10, "a": 1}, {"ev": 1}, {"s": 20, "a": 2}]
    rows = [{"ev": 2}, {"s": 30, "a": 3}, {"ev": 3}, {"ev": 4}, {"s": 40, "a": 4}]
    fast = JsonlParser("m.jsonl", step_keys=("s",), carry_step=True)
    fast.parse(_lines(first), 1)
    got = fast.parse(_lines(rows), 4)
    assert fast.fast_chunks == 1 and list(got.steps) == [20, 30, 30, 30, 40] and not got.bad
    assert got.cols is not None and list(got.cols["s"]) == [20, 30, 30, 30, 40]
    slow = JsonlParser("m.jsonl", step_keys=("s",), carry_step=True).parse(_lines(first + rows), 1)
    assert list(slow.steps)[3:] == list(got.steps) and not slow.bad
