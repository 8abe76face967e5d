"""RowCut: a copy of some columns of a range of a table's rows, taken at once, turned into rows a batch at a time.

Why: a reader that prints a long run (``tail -n 0``) needs each row as a dict, but only with the keys it prints, and
never all of them at once: a 100k x 43 run as dicts is half a gigabyte. The cut copies the columns it names (a
memcpy each for numeric ones) while the caller holds the store's lock, and builds rows later, outside it.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

from steptable.ingest.parse import MISSING
from steptable.ingest.parsed import Parsed

if TYPE_CHECKING:
    from steptable.ingest.table import ColumnTable

NAN = math.nan


class RowCut:
    """Rows ``[start, stop)`` of a table restricted to ``keys`` (None: every key), as :meth:`RunStore.row` gives them:
    the keys present in the row, in the table's key order, ints for integer columns, NaN for a logged null, and
    ``step`` first when ``numbered`` (a file without a step key of its own numbers its rows)."""

    def __init__(self, table: ColumnTable, keys: Collection[str] | None, start: int, stop: int, numbered: bool) -> None:
        start, stop, _ = slice(start, stop).indices(len(table))
        self.steps: array[int] = table._steps[start:stop]
        self.numbered = numbered
        # (key, numeric values or object values, presence or None, integer column)
        self.cols: list[tuple[str, Any, bytearray | None, bool]] = []
        for key in table.keys:
            if (keys is not None and key not in keys) or key in table._gone:  # (gone: values left out, none held)
                continue
            pres = table._pres.get(key)
            num = table._num.get(key)
            vals: Any = num[start:stop] if num is not None else table._obj[key][start:stop]
            self.cols.append((key, vals, pres[start:stop] if pres is not None else None,
                              num is not None and key in table._ints))

    def __len__(self) -> int:
        return len(self.steps)

    def rows(self, lo: int = 0, hi: int | None = None) -> list[dict[str, Any]]:
        """Rows ``[lo, hi)`` of the cut (slice rules) as new dicts."""
        lo, hi, _ = slice(lo, hi).indices(len(self.steps))
        out: list[dict[str, Any]] = [{"step": s} for s in self.steps[lo:hi]] if self.numbered else [
            {} for _ in range(hi - lo)]
        for key, vals, pres, ints in self.cols:
            part = vals[lo:hi]
            if type(part) is array:
                cells: Any = [int(v) if math.isfinite(v) else v for v in part] if ints else part
            else:
                cells = [NAN if v is None else v for v in part]  # a present None is a logged null
            if pres is None:
                for row, v in zip(out, cells, strict=True):
                    row[key] = v
            else:
                for row, v, p in zip(out, cells, pres[lo:hi], strict=True):
                    if p:
                        row[key] = v
        return out

    def columns(self, lo: int = 0, hi: int | None = None) -> list[tuple[str, Any, bytearray | None, bool]]:
        """Rows ``[lo, hi)`` column by column, for a reader that writes them without a dict a row: (key, its cells:
        an ``array('d')`` of a numeric column (NaN where absent or null) or a list (None where absent, a logged null
        too), the presence of each cell or None when all are present, whether the column is an integer one)."""
        lo, hi, _ = slice(lo, hi).indices(len(self.steps))
        return [(key, vals[lo:hi], None if pres is None else pres[lo:hi], ints) for key, vals, pres, ints in self.cols]

    def parsed(self, step_key: str | None) -> Parsed:
        """The cut as a chunk to add to another store (``step_key``: its table's), column by column: a numeric
        column's array as it is (NaN a logged null), an integer column's as ints, absent cells MISSING; never a dict
        a row (a 100k-row run as dicts is hundreds of MB)."""
        cols: dict[str, Any] = {}
        for key, vals, pres, ints in self.cols:
            cells: Any = [int(v) if math.isfinite(v) else v for v in vals] if type(vals) is array and ints else vals
            if pres is not None:
                cells = [v if p else MISSING for v, p in zip(cells, pres, strict=True)]
            cols[key] = cells
        return Parsed(steps=self.steps, cols=cols, step_key=step_key)

    def batches(self, size: int) -> Iterator[list[dict[str, Any]]]:
        """The rows, ``size`` at a time."""
        for lo in range(0, len(self.steps), size):
            yield self.rows(lo, lo + size)
