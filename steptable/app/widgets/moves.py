"""Moves: which way each cell of a table's directed columns moved (steptable.table.direction), worked out once a
cell and kept, with the column values it was worked out from: a line is drawn again on every sideways scroll,
resize and column-cursor move, and the cells below a cell read the same values again."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from steptable.table.columns import Col
from steptable.table.direction import RECENT, SHORT, direction
from steptable.table.formatting import to_float

#: the rows before a cell that its move is measured against
BEFORE = SHORT - 1 + RECENT
#: values and moves kept before all are dropped (a scroll through a long run would keep every cell it passed)
LIMIT = 200_000


class Moves:
    def __init__(self) -> None:
        self._values: dict[str, dict[int, float]] = {}  # key -> row -> its value as a float (nan: none)
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
            col.pop(i, None)
            self._moves.pop((key, i), None)

    def move(self, c: Col, i: int, row: Callable[[int], Mapping[str, Any]]) -> int:
        """+1 / -1 / 0: how row ``i``'s cell of column ``c`` (which has a better direction) moved; ``row``: a row's
        values by index (the rows before ``i`` are read)."""
        hit = self._moves.get((c.key, i))
        if hit is not None:
            return hit
        if self._size > LIMIT:
            self.forget()
        col = self._values.setdefault(c.key, {})
        lo = max(0, i - BEFORE)
        for k in [k for k in range(lo, i + 1) if k not in col]:
            col[k] = to_float(row(k).get(c.key))
            self._size += 1
        before = [v for v in map(col.__getitem__, range(lo, i)) if v - v == 0]  # finite (nan - nan is nan)
        out = self._moves[(c.key, i)] = direction(c.better, col[i], before)
        self._size += 1
        return out
