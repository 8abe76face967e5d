"""How the watch app places its arms and panels: side by side or stacked, shared or scrolled, panels opened and
closed, arms hidden and shown, with the focus kept on a table that is still shown, and the picked column (the
chart's, the one p pins) the one the focused table lights."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events, on
from textual.containers import ScrollableContainer
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget

from steptable.app.viewers import ViewerActions
from steptable.app.widgets.grid import StepGrid
from steptable.app.widgets.panels import LegendPanel
from steptable.table import render

if TYPE_CHECKING:
    from steptable.app.widgets.arm import ArmPanel


class ArmsBox(ScrollableContainer):
    """The arms' tables; when its size changes (a terminal resize, a panel opened beside it) the app arranges the
    arms again for the new size."""

    def on_resize(self) -> None:
        rearrange = getattr(self.app, "_rearrange", None)
        if rearrange is not None:
            rearrange()


#: arms share the box while each gets at least ARM_SHARE_ROWS rows (title, header, three rows); past that each
#: keeps ARM_MIN_ROWS (six rows) and the box scrolls. Side by side, each keeps ARM_MIN_CELLS cells.
ARM_SHARE_ROWS = 5
ARM_MIN_ROWS = 8
ARM_MIN_CELLS = 40


class Arrangement(ViewerActions):
    """Mixed into StepTableApp, which provides the members declared here."""

    panels: dict[str, ArmPanel]
    stacked: bool | None

    def _refresh_panels(self) -> None:
        raise NotImplementedError

    @property
    def main(self) -> Screen[Any]:
        """The tables' screen (the bottom of the stack), also while a viewer or a prompt is on top."""
        return self.screen_stack[0]

    def _toggle(self, selector: str) -> bool:
        w = self.main.query_one(selector)
        w.toggle_class("-open")  # (the arms box, resized by it, arranges the arms again)
        if not w.has_class("-open"):
            self._keep_focus(w)
        return w.has_class("-open")

    def _keep_focus(self, *gone: Widget) -> None:
        """A widget closed or hidden with the focus in it (a scrolled panel, an arm's table) gives the focus to a
        table still shown: the table keys (arrows, Home, End) must keep working."""
        f = self.focused
        if f is not None and not any(f is g or g in f.ancestors for g in gone):
            return
        shown = [p for rid, p in self.panels.items() if rid not in self.session.hidden and p not in gone]
        if shown:
            shown[0].grid.focus()

    def action_toggle_legend(self) -> None:
        if self._toggle("#legend-box"):
            self.main.query_one(LegendPanel).redraw()

    def action_toggle_diagnostics(self) -> None:
        self._toggle("#diagnostics")
        self._refresh_panels()

    def action_toggle_chart(self) -> None:
        self._toggle("#chart")
        self._refresh_panels()

    def action_switch_layout(self) -> None:
        self.stacked = not self.is_stacked()
        self._apply_arrangement()

    def is_stacked(self) -> bool:
        """The user's choice, else stacked when the tables do not fit side by side."""
        if self.stacked is not None:
            return self.stacked
        visible = self.session.visible()
        width = {rid: render.width(cols) for g, cols, _ in self.session.tables() for rid in g.runs}
        return len(visible) > 1 and sum(width.get(rid, 0) + 2 for rid in visible) > self.size.width

    def _apply_arrangement(self) -> None:
        stacked = self.is_stacked()
        arms = self.main.query_one("#arms")
        arms.set_class(stacked, "stacked")
        arms.set_class(not stacked, "side")
        # Arms share the box while each gets a readable size; past that each keeps it and the box scrolls (every
        # arm grew to the whole box instead, and only the first could be seen).
        n = sum(1 for rid in self.panels if rid not in self.session.hidden)
        box = arms.size if arms.size.area else self.size
        crowded = n > 1 and (box.height // n < ARM_SHARE_ROWS if stacked else box.width // n < ARM_MIN_CELLS)
        for panel in self.panels.values():
            if stacked:
                panel.styles.width, panel.styles.height = "1fr", ARM_MIN_ROWS if crowded else "1fr"
            else:
                panel.styles.width, panel.styles.height = ARM_MIN_CELLS if crowded else "1fr", "1fr"

    def _rearrange(self) -> None:
        try:
            self._apply_arrangement()
        except NoMatches:  # before the main screen is composed
            pass

    def action_toggle_arm(self, index: int) -> None:
        rid = self.session.toggle_arm(index)
        if rid is not None:
            self._apply_hidden()

    def action_show_all_arms(self) -> None:
        self.session.hidden.clear()
        self._apply_hidden()

    def _apply_hidden(self) -> None:
        for rid, panel in self.panels.items():
            panel.display = rid not in self.session.hidden
        self._keep_focus(*(p for rid, p in self.panels.items() if rid in self.session.hidden))
        self._apply_arrangement()
        self._refresh_panels()

    # ---------------------------------------------------------------------------------------------- grids

    def grids(self) -> list[StepGrid]:
        return [p.grid for rid, p in self.panels.items() if rid not in self.session.hidden]

    def focused_grid(self) -> StepGrid | None:
        f = self.focused
        if isinstance(f, StepGrid):
            return f
        grids = self.grids()
        return grids[0] if grids else None

    @on(StepGrid.ColumnPicked)
    def _column_picked(self, message: StepGrid.ColumnPicked) -> None:
        self._pick(message.grid, message.key)
        self._refresh_panels()

    @on(events.DescendantFocus)
    def _table_focused(self, event: events.DescendantFocus) -> None:
        if isinstance(event.widget, StepGrid):
            self._take_lit(event.widget)
            self._refresh_panels()

    def _pick(self, grid: StepGrid, key: str) -> None:
        """``key`` is the picked column: the tables that have it light it (another trainer's without it keeps its
        own)."""
        self.session.selected = key
        for g in self.grids():
            if g is not grid and any(c.key == key for c in g.cols):
                g.select(key)

    def _take_lit(self, grid: StepGrid | None) -> None:
        """The column ``grid`` lights becomes the picked one (the chart's, the one p pins): several trainers' tables
        each light their own, and p pinned, the chart showed, another trainer's column than the table in front."""
        if grid is not None and grid.selected is not None and grid.selected != self.session.selected:
            self._pick(grid, grid.selected)

    def _focused_table(self) -> StepGrid | None:
        return next((g for g in self.grids() if g is self.main.focused), None)

    def _keep_picked_shown(self) -> None:
        """A picked column that no visible table has (the arms that had it hidden) gives way to the focused table's,
        else the first visible one's: the chart said "pick a column" beside a table with one lit."""
        grids = self.grids()
        if grids and not any(c.key == self.session.selected for g in grids for c in g.cols):
            self._take_lit(self._focused_table() or grids[0])
