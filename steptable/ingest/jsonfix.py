"""Byte-level repairs of JSON text that msgspec refuses, made before decoding. Pure.

msgspec rejects what Python's ``json.dumps`` writes for non-finite floats (bare ``NaN``, ``Infinity``,
``-Infinity``), numbers beyond the double range (``1e999``), integers beyond its own range, escapes of lone UTF-16
surrogates and a BOM at a line's start. The functions here rewrite such tokens *outside
strings* to quoted sentinels (``"NaN"``, ``"Infinity"``, ``"-Infinity"``) that the value normaliser
(:func:`steptable.ingest.parse.norm_value`) turns back into floats, a lone surrogate escape to ``\\ufffd`` and strip
BOMs. Each returns its input itself (the same object) when it found nothing to repair, and text inside JSON strings
is never changed. Only data that holds the bytes of a token pays for a rewrite (:func:`find_token` is the test).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Final

#: a UTF-8 byte order mark (stripped at a line's start)
BOM: Final = b"\xef\xbb\xbf"

#: ``1e999``: an infinity as strict JSON spells it (our own row writer does): read as ``Infinity`` without a word
INF_NUMBER: Final = b"1e999"
NONFINITE_TOKENS: Final = (b"NaN", b"Infinity", INF_NUMBER)
#: a JSON string, closed or running to the end (an unclosed one must not make the scan start again at each quote
#: inside it); unrolled so that each byte is looked at once
_STRING: Final = rb'"[^"\\]*(?:\\.[^"\\]*)*"?'
_TOKEN_OR_STRING: Final = re.compile(_STRING + rb"|(-?Infinity|NaN|(?<![\w.+-])-?1e999(?![\w.]))", re.DOTALL)
#: a number; the look-behind keeps a match from starting inside a run of digits (each start would rescan the run)
_NUMBER_OR_STRING: Final = re.compile(_STRING + rb"|(?<![\w.+-])(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)", re.DOTALL)
#: msgspec decodes integers in [-2**63, 2**64 - 1]: one of fewer digits than 2**64 is in range
_INT_DIGITS: Final = 20


def _quote_token(m: re.Match[bytes]) -> bytes:
    tok = m.group(1)
    if tok is None:
        return m.group(0)
    return b'"' + tok.replace(INF_NUMBER, b"Infinity") + b'"'


def _big_to_sentinel(m: re.Match[bytes]) -> bytes:
    tok = m.group(1)
    if tok is None:
        return m.group(0)
    integer = b"." not in tok and b"e" not in tok and b"E" not in tok
    if integer and len(tok.lstrip(b"-")) < _INT_DIGITS:
        return tok
    if integer and len(tok) <= _INT_DIGITS + 1 and -(2**63) <= int(tok) <= 2**64 - 1:
        return tok
    value = float(tok)  # (float() reads any number of digits; int() stops at 4,300)
    if math.isinf(value):
        return b'"-Infinity"' if value < 0 else b'"Infinity"'
    return repr(value).encode() if integer else tok  # an integer past the decoder's range: its float


def _whole_number(data: bytes, i: int) -> bool:
    """Is the ``1e999`` at ``i`` a whole JSON number (not the end of ``21e999`` nor the start of ``1e9990``)?"""
    j = i - 1 if i > 0 and data[i - 1] == 0x2D else i
    return (j == 0 or data[j - 1] in _BEFORE_NUMBER) and (i + 5 == len(data) or data[i + 5] in _AFTER_NUMBER)


_BEFORE_NUMBER: Final = frozenset(b":,[ \t\r\n")
_AFTER_NUMBER: Final = frozenset(b",]} \t\r\n")


def quote_nonfinite(data: bytes, needles: Iterable[bytes] = NONFINITE_TOKENS) -> bytes:
    """Bare ``NaN`` / ``Infinity`` / ``-Infinity`` / ``1e999`` / ``-1e999`` outside strings -> quoted sentinels
    read back as floats (``1e999`` as ``"Infinity"``; another number past the double range is :func:`quote_bignums`').

    Works on one line or a chunk of lines; returns ``data`` itself when nothing changed. Tokens are found with
    ``bytes.find`` (a regex scan costs more than decoding the chunk) and told from text by the parity of the quotes
    before them on their line; a line with backslashes (escaped quotes) is tokenised properly instead."""
    hits: list[int] = []
    for needle in needles:
        i = find_token(data, needle)
        while i >= 0:
            if needle != INF_NUMBER or _whole_number(data, i):
                hits.append(i)
            i = find_token(data, needle, i + len(needle))
    if not hits:
        return data
    hits.sort()
    parts: list[bytes] = []
    pos = skip_to = 0
    le = -1  # the end of the line of the hit before; the parity of its quotes is counted on from ``counted``
    counted = quotes = 0
    for i in hits:
        if i < skip_to:
            continue
        if i > le:  # a new line: found once per line, so many hits on one long line stay linear
            ls = data.rfind(b"\n", 0, i) + 1
            le = data.find(b"\n", i)
            le = len(data) if le < 0 else le
            counted, quotes = ls, 0
            if data.find(b"\\", ls, le) >= 0:  # escapes: tokenise the line's strings properly
                parts += (data[pos:ls], _TOKEN_OR_STRING.sub(_quote_token, data[ls:le]))
                pos = skip_to = le
                continue
        quotes += data.count(b'"', counted, i)
        counted = i
        if quotes % 2:  # inside a string
            continue
        minus = i > 0 and data[i - 1] == 0x2D
        start = i - 1 if minus else i  # "-Infinity"
        if data[i] == 0x31:  # "1e999"
            parts += (data[pos:start], b'"-Infinity"' if minus else b'"Infinity"')
            pos = i + 5
            continue
        end = i + (3 if data[i] == 0x4E else 8)  # "NaN" | "Infinity"
        parts += (data[pos:start], b'"', data[start:end], b'"')
        pos = end
    if not parts:
        return data
    parts.append(data[pos:])
    return b"".join(parts)


def quote_bignums(line: bytes) -> bytes:
    """Numbers beyond the double range (``1e999``) -> ``"Infinity"`` / ``"-Infinity"`` sentinels, and integers beyond
    the decoder's range (a 50,000-digit one too) -> their float: one cell, not a lost row. One scan, strings skipped
    whole, so the time is linear in the line."""
    return _NUMBER_OR_STRING.sub(_big_to_sentinel, line)


def find_token(data: bytes, token: bytes, start: int = 0) -> int:
    """``data.find(token, start)``, but searching for the token's first byte (memchr: ~50x faster here than
    CPython's search for a multi-byte needle) and checking the rest, where that byte is rare in JSON (``N``, ``I``,
    a BOM's); a token that starts with a digit (``1e999``) by ``bytes.find``, a digit being common."""
    if token[:1].isdigit():
        return data.find(token, start)
    first = token[:1]
    i = data.find(first, start)
    while i >= 0 and not data.startswith(token, i):
        i = data.find(first, i + 1)
    return i


# a \uXXXX escape of a UTF-16 surrogate, with the backslashes before it (an even run is an escaped backslash + "u")
_SURROGATE_ESCAPE = re.compile(rb"(?<!\\)(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})")


def replace_lone_surrogates(line: bytes) -> bytes:
    """Escapes of unpaired surrogates (``"\\udcff"``, which Python's json.dumps writes for a string that holds one)
    -> ``"\\ufffd"``; a high surrogate escape followed by a low one is a valid pair and stays."""
    found = [
        (m.end(1) - 1, m.end(), int(m.group(2), 16))
        for m in _SURROGATE_ESCAPE.finditer(line)
        if len(m.group(1)) % 2  # an odd run: the last backslash starts the escape
    ]
    parts: list[bytes] = []
    pos = i = 0
    while i < len(found):
        start, end, cp = found[i]
        if cp < 0xDC00 and i + 1 < len(found) and found[i + 1][0] == end and found[i + 1][2] >= 0xDC00:
            i += 2  # a pair
            continue
        parts += (line[pos:start], b"\\ufffd")
        pos, i = end, i + 1
    return b"".join(parts) + line[pos:] if parts else line


def has_nonfinite(data: bytes) -> bool:
    """Does ``data`` hold the bytes ``NaN`` or ``Infinity`` anywhere (inside strings too)?"""
    return find_token(data, b"NaN") >= 0 or find_token(data, b"Infinity") >= 0


def fix_chunk(chunk: bytes, needles: Iterable[bytes] = NONFINITE_TOKENS) -> bytes:
    """Clean-up before the batch decoders: non-finite literals and BOMs at line starts (``chunk`` if none)."""
    chunk = quote_nonfinite(chunk, needles)
    if find_token(chunk, BOM) >= 0:
        chunk = chunk.removeprefix(BOM).replace(b"\n" + BOM, b"\n")
    return chunk
