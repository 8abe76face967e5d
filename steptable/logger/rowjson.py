"""A row as its JSONL line: strict JSON (RFC 8259), one line with its newline, the same text whichever path writes it
(msgspec in C for a plain row, the stdlib's escaping for the rest). A NaN is ``null``; an infinity is ``1e999`` /
``-1e999``, a number past the double range that strict parsers read back as one (Python's json, ours), so a diverged
loss is read back as ``inf``, not as a missing value."""

from __future__ import annotations

import math
from collections.abc import Mapping
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

import msgspec

from steptable.table.jsonvalues import jsonable


def encode_row(record: Mapping[str, Any]) -> bytes:
    """One strict-JSON line (with its newline). A dict of text keys and plain values (floats, ints below
    ``2**1000``, text, bools, None) with no infinity is encoded by msgspec, in C: the same values as
    :func:`json_line`'s line, a float's exponent spelt without its padding (``1e-7``, not ``1e-07``); anything else,
    and text msgspec refuses (a lone surrogate), is :func:`json_line`'s."""
    if type(record) is dict and _TEXT.issuperset(map(type, record)) and _PLAIN.issuperset(
            map(type, record.values())):
        try:
            line = _ENCODE(record)
        except (UnicodeEncodeError, OverflowError, TypeError, ValueError):  # (ValueError: an int of 4300 digits)
            pass
        else:  # (an int of 2**1000 or more, which json_line writes as a float, has 302 digits: a long line only)
            if (len(line) < _BIG_DIGITS or all(-_BIG < v < _BIG for v in record.values() if type(v) is int)) and (
                    b"null" not in line or (_INF not in (vals := record.values()) and -_INF not in vals)):
                return line + b"\n"  # (msgspec writes an infinity as null: a line without one needs no look)
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
    module's own escaping. Anything else is written from :func:`jsonable`'s copy of the record."""
    parts = []
    for k, v in record.items():
        t = type(v)
        if t is float:
            s = _float(v)
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
    return _json(jsonable(record)) + "\n"


def _float(v: float) -> str:
    if v != v:
        return "null"
    if v == _INF or v == -_INF:
        return "1e999" if v > 0 else "-1e999"
    return float.__repr__(v)


def _json(v: Any) -> str:
    """:func:`jsonable`'s copy as JSON text: ``json.dumps``'s compact text with ``ensure_ascii=False``, an infinity
    as :func:`_float` writes it (jsonable bounds the depth: no recursion limit is met)."""
    t = type(v)
    if t is str:
        return encode_basestring(v)  # type: ignore[no-any-return]
    if t is float:
        return _float(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return int.__repr__(v)
    if v is None:
        return "null"
    if t is list:
        return "[" + ",".join(map(_json, v)) + "]"
    return "{" + ",".join(f"{encode_basestring(k)}:{_json(x)}" for k, x in v.items()) + "}"
