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
