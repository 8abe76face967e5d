"""Line-level JSON parsing: the tolerant per-line decoder, non-finite literals, flattening. Pure.

The fast columnar path is :mod:`steptable.ingest.readers.fastpath`; this module is its fallback, line by line,
for a chunk that the fast path cannot take (a malformed line, a new key, a type change).

msgspec rejects what Python's ``json.dumps`` writes for non-finite floats (bare ``NaN``, ``Infinity``,
``-Infinity``), numbers beyond the double range (``1e999``) and invalid UTF-8. Rather than handing such lines to a
slower parser, we rewrite the offending tokens *outside strings* to quoted sentinels (``"NaN"``...) that the value
normaliser turns back into floats; only lines that contain the bytes ``NaN`` / ``Infinity`` pay for the rewrite.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from steptable.table.stepkeys import STEP_KEYS as STEP_KEYS
from steptable.table.stepkeys import step_key_among

BOM: Final = b"\xef\xbb\xbf"

#: strings read as non-finite floats wherever a value is expected (also what the rewrite below produces)
NONFINITE: Final[dict[str, float]] = {
    "nan": math.nan, "-nan": math.nan, "+nan": math.nan,
    "inf": math.inf, "+inf": math.inf, "-inf": -math.inf,
    "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf,
}



class _Missing:
    """The marker of an absent cell (distinct from JSON null, which is a present NaN)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"  # (pickled by name: the one marker in every process, tested by ``is``)


MISSING: Final = _Missing()


@dataclass(frozen=True, slots=True)
class BadLine:
    """One reported input problem. ``lineno`` is 1-based; 0 means the whole file (unreadable, vanished...)."""

    path: str
    lineno: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self.reason}" if self.lineno else f"{self.path}: {self.reason}"


class LineError(ValueError):
    """A line that yields no row; the message is the reason reported."""


# --- non-finite and out-of-range tokens -------------------------------------------------------------------------

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


# --- values and flattening --------------------------------------------------------------------------------------


#: a plain decimal number: no leading zeros ("007" is a name), no hex, no "1_000", ASCII digits only (``float``
#: takes all of these)
_NUMBER: Final = re.compile(r"[+-]?(?:0|[1-9][0-9]*|(?=\.[0-9]))(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?", re.ASCII)


def number(text: str, as_float: bool = False) -> int | float | None:
    """The number a CSV cell's text is (an int when it is all digits, unless ``as_float``), or None; surrounding
    whitespace is allowed. Non-finite spellings are the caller's (``NONFINITE``)."""
    num = text.strip()
    if _NUMBER.fullmatch(num) is None:
        return None
    if not as_float and num.lstrip("+-").isdigit():
        try:
            return int(num)
        except ValueError:  # past Python's limit on digits converted to an int
            pass
    return float(num)


def norm_value(v: Any) -> Any:
    """The stored form of a leaf: non-finite strings -> float, ``[n, d]`` int pairs -> tuple; the rest as is. A
    string that looks like a number stays text: JSON says which values are text (a git hash "8e12345", a version
    "1.10", a job id), unlike a CSV cell."""
    t = type(v)
    if t is str:
        if len(v) <= 9:
            f = NONFINITE.get(v.lower())
            if f is not None:
                return f
        return v
    if t is list and len(v) == 2 and type(v[0]) is int and type(v[1]) is int:
        return (v[0], v[1])
    return v


def flatten(obj: dict[str, Any]) -> dict[str, Any]:
    """Nested objects -> ``a/b`` keys. A top-level ``data`` object (verl's envelope) is unwrapped in place."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if type(v) is dict:
            _flatten_into(out, v, "" if k == "data" else k + "/")
        else:
            out[k] = norm_value(v)
    return out


def _flatten_into(out: dict[str, Any], obj: dict[str, Any], prefix: str) -> None:
    for k, v in obj.items():
        if type(v) is dict:
            _flatten_into(out, v, prefix + k + "/")
        else:
            out[prefix + k] = norm_value(v)


#: the range of a stored step (the store keeps steps in an ``array('q')``)
STEP_MIN: Final = -(2**63)
STEP_MAX: Final = 2**63 - 1


def step_of(value: Any) -> int | None:
    """An integer step from a cell, or None (bools, text, non-integral floats and steps beyond int64 are not
    steps: a hostile 1e30 must be one bad line, not an OverflowError that loses the whole run)."""
    t = type(value)
    if t is int:
        step = value
    elif t is float and value.is_integer():
        step = int(value)
    elif t is str and len(value) <= 40:
        text = value.strip()
        digits = text[1:] if text[:1] == "-" else text
        # ASCII digits only: int() also reads "1_0" as 10 and Arabic-Indic or fullwidth digits
        if not (digits.isascii() and digits.isdigit()):
            return None
        step = int(text)
    else:
        return None
    return int(step) if STEP_MIN <= step <= STEP_MAX else None


# --- one line ---------------------------------------------------------------------------------------------------

_DECODER: Final = msgspec.json.Decoder()


#: where a row may start after a cut one: the start of an object; tried at most this many times a line
_OBJECT_START: Final = re.compile(rb'\{\s*"')
_GLUE_TRIES: Final = 8


def _after_cut(line: bytes) -> dict[str, Any] | None:
    """The whole row at the end of ``line`` when the line is a row cut short with another row appended to it (arms
    sharing a file, one of them killed mid-write: ``{"step":10,"rew":0.{"step":10,...}``), else None. The row must
    name a step: a cut row's nested object (``{"a": 1}``) is no row, and a line that only lacks its closing braces
    (``{"step": 3, "eval": {"step": 3, "loss": .9}``: a row cut right after a nested object) is a cut row, unless
    the object names an arm as the rows of a file arms share do."""
    closable = False  # could the line be one row cut right after a nested object?
    for close in (b"}", b"}}", b"}}}"):
        try:
            _DECODER.decode(line + close)
            closable = True
            break
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
            pass
    for n, m in enumerate(_OBJECT_START.finditer(line, 1)):
        if n >= _GLUE_TRIES:
            break
        try:
            obj = _DECODER.decode(line[m.start() :])
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
            continue
        # both readings possible (a row cut after a colon, another appended): the glued one when the object names
        # its arm as the rows of a shared file do (a nested evaluation object does not)
        if type(obj) is dict and step_key_among(obj) is not None and (not closable or "arm" in obj):
            return obj
    return None


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _replace_invalid_utf8(line: bytes, repairs: list[str]) -> bytes:
    repairs.append("invalid UTF-8 replaced with U+FFFD (row kept)")
    return line.decode("utf-8", "replace").encode("utf-8")


def decode_line(line: bytes, warn: Callable[[str], None] | None = None) -> dict[str, Any] | None:
    """Decode one JSONL line (without its newline) to a raw (unflattened) object.

    Returns None for a blank line. Raises :class:`LineError` for a line that yields no row. Rows kept after a repair
    (invalid UTF-8 replaced, a number out of range read as inf, a BOM stripped) are reported through ``warn``, once
    the row is kept: a line refused after a repair gets the refusal alone.
    """
    repairs: list[str] = []
    if line.startswith(BOM):
        line = line[3:]
        repairs.append("UTF-8 BOM stripped (row kept)")
    line = line.strip()
    if line[:1] == b"\0" or line[-1:] == b"\0":
        # NUL runs at a line's ends: a file truncated under a writer that did not open it for appending (logrotate's
        # copytruncate beside verl's open(path, "w"), a shell's >) goes on at its old offset, over a hole of NULs
        line = line.strip(b"\0 \t\r\n")
        repairs.append("NUL bytes around the line removed (row kept)")
    if not line:
        return None
    fixed = False
    for _ in range(6):  # each pass repairs one kind of problem; six kinds at most
        try:
            obj = _DECODER.decode(line)
            break
        except UnicodeDecodeError:
            line = _replace_invalid_utf8(line, repairs)
        except msgspec.ValidationError as e:  # msgspec's word for a number out of range
            repaired = quote_nonfinite(line, (INF_NUMBER,))
            if repaired != line:  # an infinity as strict JSON spells it: nothing repaired
                line = repaired
                continue
            repaired = quote_bignums(line)
            if repaired == line:
                raise LineError(f"invalid JSON ({e})") from None
            line = repaired
            repairs.append("number out of range read as inf (row kept)")
        except RecursionError:
            raise LineError("JSON nested too deeply") from None
        except msgspec.DecodeError as e:
            if not _is_utf8(line):  # (msgspec 0.23 says so with a DecodeError, older ones with UnicodeDecodeError)
                line = _replace_invalid_utf8(line, repairs)
                continue
            if not fixed and has_nonfinite(line):
                line, fixed = quote_nonfinite(line), True
                continue
            if "surrogate" in str(e):
                repaired = replace_lone_surrogates(line)
                if repaired != line:
                    line = repaired
                    repairs.append("unpaired UTF-16 surrogate escape replaced with U+FFFD (row kept)")
                    continue
            glued = _after_cut(line)
            if glued is not None:
                repairs.append("a row cut short (its writer stopped mid-line) ran into this one: the cut part "
                               "dropped (row kept)")
                _tell(repairs, warn)
                return glued
            detail = str(e).removeprefix("JSON is malformed: ")
            raise LineError(f"malformed JSON ({detail})") from None
    else:  # pragma: no cover - every branch above either breaks, raises or changes the line
        raise LineError("undecodable line")
    if type(obj) is not dict:
        raise LineError(f"not a JSON object ({type(obj).__name__})")
    _tell(repairs, warn)
    return obj


def _tell(repairs: list[str], warn: Callable[[str], None] | None) -> None:
    if warn is not None:
        for text in repairs:
            warn(text)
