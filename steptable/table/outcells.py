"""What ``steptable tail`` writes in each machine format, cell by cell: CSV cells inert for a terminal and for a
spreadsheet, JSON lines inert for a terminal. Text from the logs is untrusted; numbers stay exact."""

from __future__ import annotations

import json
import re
from typing import Any

from steptable.table.formatting import INVISIBLE, NAN, numeric_pair, sanitize


def csv_cell(v: Any) -> Any:
    """A cell of a row as a CSV cell: a key not logged (None) empty, a logged NaN ``NaN`` (inf / -inf as Python
    writes them), a fraction n/d, lists and dicts as JSON, text inert."""
    if isinstance(v, float) and v != v:
        return NAN
    if numeric_pair(v):
        return f"{v[0]}/{v[1]}"
    if isinstance(v, (tuple, list, dict)):
        return sanitize(json.dumps(v, default=str, ensure_ascii=False))
    if isinstance(v, str):
        return csv_text(v)
    return "" if v is None else v


# A spreadsheet opening the CSV runs a cell that starts with one of these as a formula ("=cmd|' /C calc'!A0",
# "@SUM(...)"): such text gets a leading "'" (OWASP's CSV-injection rule), unless it is a number ("-0.5", "+inf").
# OWASP's TAB and CR are a space and nothing after sanitize: leading spaces are looked past, as a spreadsheet may.
_FORMULA_START = ("=", "+", "-", "@")


def csv_text(text: str) -> str:
    """Text from the files as a CSV cell: inert for a terminal, and for a spreadsheet."""
    text = sanitize(text)
    head = text.lstrip(" ")
    if head.startswith(_FORMULA_START) and not _is_number(head):
        return "'" + text
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# JSON escapes C0 controls, but not C1 ones (U+009B is CSI), bidi overrides, invisible format characters or the
# line separators U+2028/2029 (str.splitlines() breaks a row on them): those may only occur inside JSON strings,
# where a \uXXXX escape is the same text, so escaping them keeps the row exact and the terminal safe.
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f\u2028\u2029{INVISIBLE}]")


def _json_escape(m: re.Match[str]) -> str:
    cp = ord(m.group())
    if cp > 0xFFFF:  # a tag character: JSON writes it as a surrogate pair
        cp -= 0x10000
        return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"
    return f"\\u{cp:04x}"


def inert_json(text: str) -> str:
    """JSON text (a row, an alert) with the characters a terminal acts on escaped (see above)."""
    return _JSON_UNSAFE.sub(_json_escape, text)
