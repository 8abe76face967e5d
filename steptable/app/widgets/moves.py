"""Moves: which way each cell of a table's directed columns moved (steptable.table.direction), worked out once a
cell and kept, with the column values it was worked out from: a line is drawn again on every sideways scroll,
resize and column-cursor move, and the cells below a cell read the same values again. A cell not worked out yet
is worked out with the :data:`AHEAD` - 1 below it, in one pass (``directions``): a new screen asks for them next.
A cell's move is measured against the values of the ``BEFORE`` rows before it: a column logged every few rows (an
evaluation) has fewer, and one with fewer than ``MIN_RECENT`` for its recent level is not coloured."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from steptable.table.columns import Col
from steptable.table.direction import BEFORE, directions
from steptable.table.formatting import to_float

#: cells of a column worked out together (as far as the table goes)
AHEAD = 64
#: rows a block of a column's values holds (a window spans at most two)
BLOCK = 256
#: values and moves kept before all are dropped (a scroll through a long run would keep every cell it passed)
LIMIT = 200_000


class Moves:
    def __init__(self) -> None:
        # key -> block of rows -> their values as floats (nan: none; None: not read yet)
        self._values: dict[str, dict[int, list[float | None]]] = {}
        self._moves: dict[tuple[str, int], int] = {}
        self._size = 0

    def forget(self, i: int | None = None) -> None:
        """Row ``i`` changed (None: any row did): its value and its move go (a row changes only as the last one:
        no move below it was worked out from it)."""
        if i is None:
            self._values.clear()
            self._moves.clear()
            self._size = 0
            return
        for key, col in self._values.items():
            block = col.get(i // BLOCK)
            if block is not None:
                block[i % BLOCK] = None
            self._moves.pop((key, i), None)

    def _read(self, col: dict[int, list[float | None]], key: str, lo: int, hi: int,
              row: Callable[[int], Mapping[str, Any]]) -> list[float]:
        """The values of rows ``lo..hi`` (inclusive) of ``key``, read from ``row`` where not yet kept; fewer where
        the table ends first (``row`` raises IndexError past its last row)."""
        out: list[float] = []
        for b in range(lo // BLOCK, hi // BLOCK + 1):
            block = col.get(b)
            if block is None:
                block = col[b] = [None] * BLOCK
                self._size += BLOCK
            base = b * BLOCK
            start, stop = max(lo - base, 0), min(hi - base, BLOCK - 1) + 1
            part = block[start:stop]
            if None in part:
                for k in range(start, stop):
                    if block[k] is None:
                        try:
                            block[k] = to_float(row(base + k).get(key))
                        except IndexError:  # the end of the table
                            out += block[start:k]  # type: ignore[arg-type]  # (no None left in it)
                            return out
                part = block[start:stop]
            out += part  # type: ignore[arg-type]
        return out

    def move(self, c: Col, i: int, row: Callable[[int], Mapping[str, Any]]) -> int:
        """+1 / -1 / 0: how row ``i``'s cell of column ``c`` (which has a better direction) moved; ``row``: a row's
        values by index (the rows before ``i`` are read)."""
        hit = self._moves.get((c.key, i))
        if hit is not None:
            return hit
        if self._size > LIMIT:
            self.forget()
        lo = max(0, i - BEFORE)
        values = self._read(self._values.setdefault(c.key, {}), c.key, lo, i + AHEAD - 1, row)
        found = directions(c.better, values, i - lo)
        for k, d in enumerate(found):
            self._moves[(c.key, i + k)] = d
        self._size += len(found)
        return found[0] if found else 0
