"""steptable.ingest.jsonfix: the repairs of JSON text made before decoding."""

from __future__ import annotations

from steptable.ingest.jsonfix import fix_chunk


def test_fix_chunk_rewrites_only_lines_with_tokens() -> None:
    chunk = b'\xef\xbb\xbf{"a": 1}\n{"a": NaN, "b": NaN}\n{"s": "NaN"}\n\xef\xbb\xbf{"a": Infinity}\n'
    assert fix_chunk(chunk) == b'{"a": 1}\n{"a": "NaN", "b": "NaN"}\n{"s": "NaN"}\n{"a": "Infinity"}\n'
