"""How the watch app places its arms and panels: side by side or stacked, shared or scrolled, panels opened and
closed with the heights they take, arms hidden and shown, with the focus kept on a table that is still shown."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Protocol

from textual.containers import ScrollableContainer
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.widget import Widget

from steptable.app.tables import ArmsHost
from steptable.app.widgets.panels import ChartPanel, DiagnosticsPanel, LegendPanel
from steptable.table import render

#: arms share the box while each gets at least ARM_SHARE_ROWS rows (title, header, three rows); past that each
#: keeps ARM_MIN_ROWS (six rows) and the box scrolls. Side by side, each keeps ARM_MIN_CELLS cells.
ARM_SHARE_ROWS = 5
ARM_MIN_ROWS = 8
ARM_MIN_CELLS = 40


class ArmsBox(ScrollableContainer):
    """The arms' tables; ``resized`` is called when its size changes (a terminal resize, a panel opened beside it),
    to arrange the arms again for the new size."""

    def __init__(self, resized: Callable[[], None], *, id: str | None = None, classes: str | None = None,
                 can_focus: bool | None = None) -> None:
        super().__init__(id=id, classes=classes, can_focus=can_focus)
        self._resized = resized

    def on_resize(self) -> None:
        self._resized()


class ArrangementHost(ArmsHost, Protocol):
    """What the arrangement needs of the app: also the screen's size."""

    @property
    def size(self) -> Size: ...


class Arrangement:
    """The placing of the app's arms and panels; owned by the app, which hands it the layout actions."""

    def __init__(self, app: ArrangementHost, stacked: bool | None = None) -> None:
        self.app = app
        self.stacked = stacked  # the user's choice (s); None: stacked when the tables do not fit side by side

    # ---------------------------------------------------------------------------------------------- panels

    def toggle_legend(self) -> None:
        if self._toggle("#legend-box"):
            self.app.main.query_one(LegendPanel).redraw()

    def toggle_diagnostics(self) -> None:
        self._toggle("#diagnostics")
        self.app.refresh_panels()

    def toggle_chart(self) -> None:
        self._toggle("#chart")
        self.app.refresh_panels()

    def _toggle(self, selector: str) -> bool:
        w = self.app.main.query_one(selector)
        w.toggle_class("-open")  # (the arms box, resized by it, arranges the arms again)
        if not w.has_class("-open"):
            self._keep_focus(w)
        return w.has_class("-open")

    def share_height(self) -> None:
        """The open panels take at most what leaves the arms' tables ARM_SHARE_ROWS lines each (stacked) or a third
        of the height, whichever is more, shared equally, so that a short terminal keeps table rows in view. Arms
        too many to share the box even so scroll in it: then the tables keep ARM_MIN_ROWS, one arm in full."""
        screen = self.app.main
        opened = [p for p in (screen.query_one(ChartPanel), screen.query_one(DiagnosticsPanel)) if p.has_class("-open")]
        if not opened:
            return
        bars = sum(w.outer_size.height for w in screen.query("StatusBar, KeyBar"))  # (docked: not in the arms' box)
        height = screen.size.height - bars
        stacked = screen.query_one("#arms").has_class("stacked")
        arms = ARM_SHARE_ROWS * (len(self.app.session.visible()) if stacked else 1)
        if arms > height - ChartPanel.MIN_ROWS * len(opened):
            arms = ARM_MIN_ROWS
        for panel in opened:
            panel.cap((height - max(arms, height // 3)) // len(opened))

    # ---------------------------------------------------------------------------------------------- arms

    def switch_layout(self) -> None:
        self.stacked = not self.is_stacked()
        self.apply()

    def is_stacked(self) -> bool:
        """The user's choice, else stacked when the tables do not fit side by side."""
        if self.stacked is not None:
            return self.stacked
        session = self.app.session
        visible = session.visible()
        width = {rid: render.width(cols) for g, cols, _ in session.tables() for rid in g.runs}
        return len(visible) > 1 and sum(width.get(rid, 0) + 2 for rid in visible) > self.app.size.width

    def apply(self) -> None:
        """Size the panels (``share_height``) and the arms for the current screen, arms and layout. Arms share the
        box while each gets a readable size; past that each keeps it and the box scrolls, so that every arm can be
        scrolled to."""
        self.share_height()  # (a resize: the screen's height, the status bar's lines)
        stacked = self.is_stacked()
        arms = self.app.main.query_one("#arms")
        arms.set_class(stacked, "stacked")
        arms.set_class(not stacked, "side")
        hidden = self.app.session.hidden
        n = sum(1 for rid in self.app.panels if rid not in hidden)
        box = arms.size if arms.size.area else self.app.size
        crowded = n > 1 and (box.height // n < ARM_SHARE_ROWS if stacked else box.width // n < ARM_MIN_CELLS)
        for panel in self.app.panels.values():
            if stacked:
                panel.styles.width, panel.styles.height = "1fr", ARM_MIN_ROWS if crowded else "1fr"
            else:
                panel.styles.width, panel.styles.height = ARM_MIN_CELLS if crowded else "1fr", "1fr"

    def rearrange(self) -> None:
        """``apply``, once the tables' screen is composed (the arms box resizes before)."""
        try:
            self.apply()
        except NoMatches:
            pass

    def toggle_arm(self, index: int, skip: Collection[str] = ()) -> None:
        if self.app.session.toggle_arm(index, skip) is not None:
            self._apply_hidden()

    def show_all_arms(self) -> None:
        self.app.session.hidden.clear()
        self._apply_hidden()

    def set_hidden(self, hidden: set[str]) -> None:
        """Hide exactly these runs' tables (the runs opened from a sweep's list that are not picked now)."""
        self.app.session.hidden = set(hidden)
        self._apply_hidden()

    def _apply_hidden(self) -> None:
        hidden = self.app.session.hidden
        for rid, panel in self.app.panels.items():
            panel.display = rid not in hidden
        self._keep_focus(*(p for rid, p in self.app.panels.items() if rid in hidden))
        self.apply()
        self.app.refresh_panels()

    def _keep_focus(self, *gone: Widget) -> None:
        """A widget closed or hidden with the focus in it (a scrolled panel, an arm's table) gives the focus to a
        table still shown: the table keys (arrows, Home, End) must keep working."""
        f = self.app.focused
        if f is not None and not any(f is g or g in f.ancestors for g in gone):
            return
        hidden = self.app.session.hidden
        shown = [p for rid, p in self.app.panels.items() if rid not in hidden and p not in gone]
        if shown:
            shown[0].grid.focus()
