"""Line-level JSON parsing: the tolerant per-line decoder, non-finite values, flattening. Pure.

The fast columnar path is :mod:`steptable.ingest.readers.fastpath`; this module is its fallback, line by line,
for a chunk that the fast path cannot take (a malformed line, a new key, a type change).

msgspec rejects what Python's ``json.dumps`` writes for non-finite floats (bare ``NaN``, ``Infinity``,
``-Infinity``), numbers beyond the double range (``1e999``) and invalid UTF-8. Rather than handing such lines to a
slower parser, the offending tokens are rewritten *outside strings* (:mod:`steptable.ingest.jsonfix`) to quoted
sentinels (``"NaN"``...) that the value normaliser here turns back into floats.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from steptable.ingest.jsonfix import (
    BOM,
    INF_NUMBER,
    has_nonfinite,
    quote_bignums,
    quote_nonfinite,
    replace_lone_surrogates,
)
from steptable.table.stepkeys import STEP_KEYS as STEP_KEYS
from steptable.table.stepkeys import step_key_among

#: strings read as non-finite floats wherever a value is expected (also what steptable.ingest.jsonfix writes)
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
