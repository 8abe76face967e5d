"""A tracker's list is a list: read as its text, not as one of steptable's ``(n, d)`` counts.

steptable's own JSONL writes a count of ``n`` out of ``d`` as a two-number list, which the table shows as ``n/d`` and
reads as the ratio (:func:`steptable.table.formatting.numeric_pair`). A list W&B or trackio stores is what was logged
(the learning rates of two parameter groups, ``scheduler.get_last_lr()``; a pair of bounds): no count. Such a value
is its JSON text here, as W&B's and trackio's own views show it, and no number to a summary or an alert.
"""

from __future__ import annotations

import json
from typing import Any

from steptable.ingest.parsed import Parsed

#: what a JSON list is after decoding (a pair of integers is made a tuple: steptable.ingest.parse.norm_value)
_LISTS = (list, tuple)


def lists_as_text(parsed: Parsed) -> Parsed:
    """``parsed`` (changed in place) with each list value its JSON text. The fast path's numeric columns (tuples of
    numbers) hold no list and are not looked at; a list column is, once (what it holds: text, bools, lists)."""
    if parsed.cols is not None:
        for key, col in parsed.cols.items():
            if type(col) is list and any(type(v) in _LISTS for v in col):
                parsed.cols[key] = [_text(v) if type(v) in _LISTS else v for v in col]
    for row in parsed.rows or ():
        for key, v in row.items():
            if type(v) in _LISTS:
                row[key] = _text(v)
    return parsed


def _text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # (a decoded JSON list holds JSON values only; kept safe all the same)
        return str(value)
