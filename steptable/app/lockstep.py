"""Lockstep: the arms' tables move together. When the table with the focus scrolls (any movement key, the mouse
wheel, a jump), every other shown table of the same columns goes to the same step at the top and the same sideways
offset, so that side by side each arm shows the same columns; a table that follows its newest rows makes the others
follow theirs. On by default while the shown arms share one column layout (one trainer's arms); ``k`` toggles it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from steptable.app.tables import Tables
    from steptable.app.widgets.grid import StepGrid


class Lockstep:
    """Owned by the app, which hands it each table's Moved message."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.chosen: bool | None = None  # the user's choice (k); None: on when the shown arms share a layout
        self._moving = False

    @property
    def on(self) -> bool:
        if self.chosen is not None:
            return self.chosen
        layouts = {tuple(c.key for c in g.cols) for g in self.tables.grids()}
        return len(layouts) <= 1

    def toggle(self) -> bool:
        """Switch it; returns the new state."""
        self.chosen = not self.on
        return self.chosen

    def moved(self, grid: StepGrid) -> None:
        """``grid`` scrolled: the others follow it, when it is the table the user moves (the focused one)."""
        if self._moving or not self.on or grid is not self.tables.app.main.focused or grid.store is None:
            return
        self._moving = True
        try:
            step = None
            if not grid.follow and grid.rows:
                step = grid.store.step_at(min(grid.top_index, grid.rows - 1))
            keys = [c.key for c in grid.cols]
            for g in self.tables.grids():
                if g is grid or g.store is None:
                    continue
                if step is None:
                    g.action_follow()
                else:
                    g.scroll_to_index(g.store.index_of_step(step))
                if [c.key for c in g.cols] == keys and round(g.scroll_x) != round(grid.scroll_x):
                    g.scroll_to(x=grid.scroll_x, animate=False, force=True, immediate=True)
        except IndexError:  # the follower emptied a store (a rewritten file) since its rows were taken
            pass
        finally:
            self._moving = False
