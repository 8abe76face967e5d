"""A row as its JSONL line: strict JSON (RFC 8259: a non-finite float is ``null``), one line with its newline, the
same text whichever path writes it (msgspec in C for a plain row, the stdlib for the rest)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

import msgspec

from steptable.table.jsonvalues import jsonable


def encode_row(record: Mapping[str, Any]) -> bytes:
    """One strict-JSON line (with its newline). A dict of text keys and plain values (floats, ints below
    ``2**1000``, text, bools, None) is encoded by msgspec, in C: the same values as :func:`json_line`'s line (a
    non-finite float as null), a float's exponent spelt without its padding (``1e-7``, not ``1e-07``); anything
    else, and text msgspec refuses (a lone surrogate), is :func:`json_line`'s."""
    if type(record) is dict and _TEXT.issuperset(map(type, record)) and _PLAIN.issuperset(
            map(type, record.values())):
        try:
            line = _ENCODE(record)
        except (UnicodeEncodeError, OverflowError, TypeError, ValueError):  # (ValueError: an int of 4300 digits)
            pass
        else:  # (an int of 2**1000 or more, which json_line writes as a float, has 302 digits: a long line only)
            if len(line) < _BIG_DIGITS or all(-_BIG < v < _BIG for v in record.values() if type(v) is int):
                return line + b"\n"
    return json_line(record).encode("utf-8", "replace")


_TEXT = frozenset({str})
_PLAIN = frozenset({float, int, str, bool, type(None)})
_ENCODE = msgspec.json.Encoder().encode


_BIG = 2**1000  # jsonable writes an int this large as a float
_BIG_DIGITS = len(str(_BIG))
_INF = math.inf
_KEYS: dict[str, str] = {}  # key -> its JSON text (keys repeat on every row)


def json_line(record: Mapping[str, Any]) -> str:
    """:func:`encode_row`'s line as text (lone surrogates still in it). A record of text keys and plain values
    (floats, ints, text, bools, None) is written here, at a fraction of the cost of :func:`jsonable`'s copy and
    ``json.dumps``, as the same text: a float as ``float.__repr__`` (a non-finite one as null), text as the json
    module's own escaping."""
    parts = []
    for k, v in record.items():
        t = type(v)
        if t is float:
            s = "null" if v != v or v == _INF or v == -_INF else float.__repr__(v)
        elif t is int and -_BIG < v < _BIG:
            s = int.__repr__(v)
        elif t is str:
            s = encode_basestring(v)
        elif v is None:
            s = "null"
        elif t is bool:
            s = "true" if v else "false"
        else:
            break
        if type(k) is not str:
            break
        key = _KEYS.get(k)
        if key is None:
            key = encode_basestring(k)
            if len(_KEYS) < 4096:
                _KEYS[k] = key
        parts.append(f"{key}:{s}")
    else:
        return "{" + ",".join(parts) + "}\n"
    return json.dumps(jsonable(record), allow_nan=False, ensure_ascii=False, separators=(",", ":")) + "\n"
