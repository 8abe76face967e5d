"""How a cell of a numeric column becomes a double: the cells such a column may hold, their float values, the
packing of many at once. Pure; shared by the column store and whoever reads a cell as a number.

A numeric cell is an int, a float, None (a logged null: NaN), :data:`~steptable.ingest.parse.MISSING` (an absent
cell: NaN) or a non-finite spelling (``"NaN"``, ``"Infinity"``, ``"-inf"``...: its float). :func:`as_float` reads
one (None for anything else: its column must become a list); :data:`GAPS` maps the non-numbers among them to their
floats in one ``dict.get`` each (what :func:`doubles` packs); an int beyond :data:`EXACT_INT` is not exact as a
double (its column keeps ints in a list).
"""

from __future__ import annotations

import math
import struct
from functools import lru_cache
from typing import Any

from steptable.ingest.parse import MISSING, NONFINITE

NAN = math.nan
#: what a numeric column may receive: numbers, null, absent cells, non-finite spellings (checked per value)
NUMERIC_CELLS = frozenset({int, float, type(None), type(MISSING), str})
#: integers past this are not all exact as doubles: a column that holds one is kept as a list of ints
EXACT_INT = 2**53
#: the gaps of a numeric column as floats (dict.get in C is ~5x faster than a Python test per cell)
GAPS: dict[Any, float] = {None: NAN, MISSING: NAN, "NaN": NAN, "Infinity": math.inf, "-Infinity": -math.inf}


def as_float(v: Any) -> float | None:
    """A numeric cell as a float (NaN for null and absent cells, non-finite spellings read); None when the value is
    not a number (its column must become a list)."""
    t = type(v)
    if t is float:
        return v  # type: ignore[no-any-return]
    if t is int:
        try:
            return float(v)
        except OverflowError:
            return math.inf if v > 0 else -math.inf
    if v is None or v is MISSING:
        return NAN
    if t is str and len(v) <= 9:
        return NONFINITE.get(v.lower())
    return None


@lru_cache(maxsize=64)
def doubles(n: int) -> struct.Struct:
    """A packer of ``n`` doubles (cached: a chunk's columns are of one length)."""
    return struct.Struct(f"{n}d")
