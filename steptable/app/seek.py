"""Seeking: the next / previous step with an alert, or with a non-finite value (NaN, inf) in a shown column, from the
step at the top of the table in front; every shown table goes there (the jump's way: following pauses)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from steptable.app.tables import Tables
    from steptable.app.widgets.grid import StepGrid


def nearest(steps: Iterable[int], here: int, forward: bool) -> int | None:
    """The first of ``steps`` after ``here`` (``forward``), else the last before it; None when there is none."""
    if forward:
        return min((s for s in steps if s > here), default=None)
    return max((s for s in steps if s < here), default=None)


def nonfinite_steps(grid: StepGrid) -> list[int]:
    """The steps of ``grid``'s rows with a NaN or an infinity in one of its numeric columns."""
    store = grid.store
    if store is None:
        return []
    n = min(grid.rows, len(store))
    rows: set[int] = set()
    for c in grid.cols[1:]:
        for i, v in enumerate(store.cells_between(c.key, 0, n)):
            if isinstance(v, float) and not math.isfinite(v):
                rows.add(i)
    return [store.step_at(i) for i in rows]


class Seek:
    """Owned by the app, which hands it the seeking keys; ``tables``: the tables it moves."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self._last: tuple[int, int, int] | None = None  # (grid id, its top row after the seek, the step sought)

    def here(self, grid: StepGrid) -> int | None:
        """The step the table in front is at: the one sought last while the table has not moved since (a step near
        the end cannot come to the top), else its top row's."""
        if grid.store is None or not grid.rows:
            return None
        if self._last is not None and self._last[:2] == (id(grid), grid.top_index):
            return self._last[2]
        return grid.store.step_at(min(grid.top_index, grid.rows - 1))

    def alert(self, forward: bool) -> str | None:
        """Go to the next (previous) step with an alert of a shown run; the reason when there is none."""
        session = self.tables.app.session
        shown = set(session.visible())
        steps = (e.step for e in session.alerts if e.step is not None and e.run in shown)
        return self._go(steps, forward, "alert")

    def nonfinite(self, forward: bool) -> str | None:
        """Go to the next (previous) step with a NaN or inf in a shown table's columns; the reason when none."""
        return self._go((s for g in self.tables.grids() for s in nonfinite_steps(g)), forward, "NaN or inf")

    def _go(self, steps: Iterable[int], forward: bool, what: str) -> str | None:
        grid = self.tables.focused_grid()
        here = self.here(grid) if grid is not None else None
        if grid is None or here is None:
            return "no rows yet"
        step = nearest(steps, here, forward)
        if step is None:
            return f"no {what} {'after' if forward else 'before'} step {here}"
        self.tables.jump_to_step(step)
        self._last = (id(grid), grid.top_index, step)
        return None
