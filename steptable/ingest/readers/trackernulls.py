"""A tracker's null is a value not given: its members taken out of the JSON text before it is read.

W&B (``run.log({"grad_norm": None})``: ``value_json`` ``null``; a NaN is written ``"NaN"``) and trackio (its
``metrics`` object, ``json.dumps``: ``null``; a NaN is ``NaN``) write a metric logged as None as JSON null, and a
NaN apart from it. In steptable's own JSONL null is a present NaN (its logger writes a NaN so), so read as they are
these rows had non-finite cells and an error alert ("grad_norm non-finite (NaN)") for a value never given, as
transformers logs ``grad_norm`` under DeepSpeed. Their null members are taken out: absent cells.
"""

from __future__ import annotations

import re
from typing import Any, Final

#: a member after the first whose value is null: ``,"key": null`` before the next member or the object's end
_LATER: Final = re.compile(rb',\s*"(?:[^"\\\n]|\\.)*"\s*:\s*null\s*(?=[,}])')
#: an object's first member whose value is null (the later ones already gone), with its comma
_FIRST: Final = re.compile(rb'\{\s*"(?:[^"\\\n]|\\.)*"\s*:\s*null\s*(?:,|(?=\}))')


def drop_nulls(text: bytes) -> bytes:
    """``text`` (JSON objects, one a line) without the members whose value is null, at any depth (a string holds
    no unescaped quote: none is taken from inside one). ``text`` itself where it holds no ``null``."""
    if b"null" not in text:
        return text
    return _FIRST.sub(b"{", _LATER.sub(b"", text))


def without_nones(row: dict[str, Any]) -> dict[str, Any]:
    """A decoded row (flattened) without its None cells: what :func:`drop_nulls` makes of its text."""
    return {k: v for k, v in row.items() if v is not None}
