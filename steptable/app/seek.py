"""Seeking: the next / previous step with an alert, with a non-finite value (NaN, inf) in a shown column, or where the
lit column changed regime (``steptable.summary.trend.regime_changes``: a stepped schedule's steps), from the step at
the top of the table in front; every shown table goes there (the jump's way: following pauses)."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

from steptable.app.model import change_mark
from steptable.table.formatting import sanitize

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


def regime_steps(grid: StepGrid, key: str) -> list[int]:
    """The steps of ``grid``'s rows where column ``key`` changed regime (its finite values read in row order)."""
    from steptable.alerts.engine import cell_float
    from steptable.summary.trend import regime_changes

    store = grid.store
    if store is None:
        return []
    rows, xs = [], []
    for i, v in enumerate(store.cells_between(key, 0, min(grid.rows, len(store)))):
        x = v if type(v) is float else cell_float(v)
        if x is not None and math.isfinite(x):
            rows.append(i)
            xs.append(x)
    return [store.step_at(rows[p]) for p in regime_changes(xs)]


class Seek:
    """Owned by the app, which hands it the seeking keys; ``tables``: the tables it moves."""

    def __init__(self, tables: Tables, shown: Callable[[], Collection[str]] | None = None) -> None:
        """``shown``: the runs whose alerts are sought (the seeds of a group shown as its table of means among
        them); None: the session's runs not hidden."""
        self.tables = tables
        self.shown = shown
        self._last: tuple[int, int, int] | None = None  # (grid id, its top row after the seek, the step sought)
        self._regimes: dict[int, tuple[object, list[int]]] = {}  # by grid id: (what they were read from, steps)

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
        shown = set(self.shown() if self.shown is not None else session.visible())
        steps = (e.step for e in session.alerts if e.step is not None and e.run in shown)
        return self._go(steps, forward, "alert")

    def nonfinite(self, forward: bool) -> str | None:
        """Go to the next (previous) step with a NaN or inf in a shown table's columns; the reason when none."""
        return self._go((s for g in self.tables.grids() for s in nonfinite_steps(g)), forward, "NaN or inf")

    def regime(self, forward: bool) -> str | None:
        """Go to the next (previous) step where the lit column changed regime in a shown table; the reason when
        there is none."""
        key = self.tables.app.session.selected
        grids = [g for g in self.tables.grids() if any(c.key == key for c in g.cols[1:])]
        if key is None or not grids:
            return "no column lit: ◀ ▶ light one"
        steps: list[int] = []
        for g in grids:  # read again only when the rows or the column changed (a long series takes a while)
            seen = (id(g.store), key, g.rows, change_mark(g.store) if g.store is not None else None)
            cached = self._regimes.get(id(g))
            if cached is None or cached[0] != seen:
                cached = self._regimes[id(g)] = (seen, regime_steps(g, key))
            steps += cached[1]
        return self._go(steps, forward, f"regime change of {sanitize(key)}")

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
