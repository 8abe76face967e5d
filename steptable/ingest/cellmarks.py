"""What a cell holds, as far as where a row goes is concerned: a measurement or not (the resume test), and the one
byte a row a projected table keeps of a key it leaves out (steptable.ingest.table). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from steptable.ingest.parse import MISSING, norm_value


def measured(v: Any) -> bool:
    """A cell that holds a measurement (not None, not NaN): what the resume test compares. A bare NaN arrives as
    its quoted sentinel ("NaN") where a chunk is handed over as columns: not a measurement either (a late row with
    a NaN, read alone by a live reader, would be taken for a resume and drop every later row)."""
    if type(v) is str and len(v) <= 9:
        v = norm_value(v)
    return v is not None and not (type(v) is float and v != v)


#: a cell of a key the projection leaves out: absent, present but not measured (null, NaN), measured
ABSENT, UNMEASURED, MEASURED = 0, 1, 2


def mark(v: Any) -> int:
    """The mark of one cell (MISSING: absent)."""
    return ABSENT if v is MISSING else MEASURED if measured(v) else UNMEASURED


def marks_of(vals: Sequence[Any]) -> bytes:
    """The marks of a chunk's cells of a left-out key; a column of numbers without a NaN in one C pass."""
    try:
        if (total := sum(vals)) == total:  # (no NaN, no inf - inf; a bool is measured too)
            return bytes([MEASURED]) * len(vals)
    except TypeError:  # None, MISSING, text
        pass
    return bytes(map(mark, vals))
