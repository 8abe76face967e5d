"""StepGrid: the step table as a virtual widget on Textual's Line API.

Only the rows on screen are formatted, from the run's columnar store, through ``render.cells`` (the same text as the
stdout row). Line 0 is the header, pinned; the step column and the user's pinned columns stay put when the table
scrolls sideways. Follow mode keeps the newest row in view until the user scrolls up; End / G resumes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from steptable.app.model import Store, change_mark
from steptable.app.widgets.cellstyle import CELL_CSS, COMPONENT_CLASSES, CellPaint, cell_styles
from steptable.app.widgets.lines import join_line, visible_columns
from steptable.app.widgets.scrollrange import set_scroll_range
from steptable.table import render
from steptable.table.columns import Col
from steptable.table.formatting import cut, pad, sanitize

_SEP = render.SEP


def _as_is(row: Mapping[str, Any]) -> Mapping[str, Any]:
    return row


class StepGrid(ScrollView, can_focus=True):
    """One arm's step table."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {*COMPONENT_CLASSES, "grid--found"}

    DEFAULT_CSS = """
    StepGrid {
        height: 1fr;
        width: 1fr;
        background: $surface;
        color: $foreground;
        scrollbar-size-vertical: 1;
        scrollbar-size-horizontal: 0;  /* no horizontal bar: a line per arm; the title says which columns show */
        scrollbar-background: $surface;
        scrollbar-background-hover: $surface;
        scrollbar-background-active: $surface;
        scrollbar-color: $panel-lighten-2;
        scrollbar-color-hover: $primary 60%;
        scrollbar-color-active: $primary;
        scrollbar-corner-color: $surface;
    }
    StepGrid > .grid--found { text-style: bold reverse underline; }  /* the search's cell */""" + CELL_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "column(-1)", "◀col", show=False, tooltip="light the column to the left (charted; p pins it)"),
        Binding("right", "column(1)", "col▶", show=False, tooltip="light the column to the right"),
        Binding("shift+left", "pan(-8)", "Scroll left", show=False, tooltip="the columns, 8 cells"),
        Binding("shift+right", "pan(8)", "Scroll right", show=False, tooltip="the columns, 8 cells"),
        Binding("home", "first", "First row", show=False, tooltip="following stops"),
        Binding("end,G", "follow", "Follow", tooltip="show each new row as it comes"),
    ]

    class ColumnPicked(Message):
        """The user moved the column cursor (keys or a click) to ``key``."""

        def __init__(self, grid: StepGrid, key: str) -> None:
            super().__init__()
            self.grid = grid
            self.key = key

    class ViewChanged(Message):
        """Following started or stopped, or the table scrolled sideways (the arm's title says both)."""

        def __init__(self, grid: StepGrid) -> None:
            super().__init__()
            self.grid = grid

    class Moved(Message):
        """The table scrolled (rows or sideways): other arms' tables may follow it (lockstep)."""

        def __init__(self, grid: StepGrid) -> None:
            super().__init__()
            self.grid = grid

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.store: Store | None = None
        self.rows = 0
        self.cols: tuple[Col, ...] = ()
        self.fixed = 1  # leading columns that do not scroll sideways
        self.selected: str | None = None
        self.derive: Callable[[Mapping[str, Any]], Mapping[str, Any]] = _as_is
        self.follow = True
        self.drawn_rows = False  # a data row has been drawn (the app waits for it before the full parse)
        self._marks: tuple[tuple[int, int, int], int | None] = ((-1, -1, -1), None)
        self.found: tuple[int, str] | None = None  # (row, column key) of the search's cell (app/search.py)
        self._trend = False
        self._fixed_w = 0
        self._rest_w = 0
        self._rest_spans: list[tuple[int, int]] = []
        self._rest_ends: list[int] = []
        self._base_style: Style | None = None
        self._cell_styles: tuple[Style, ...] | None = None
        self.paint = CellPaint()  # the run's alerts, and the rows before a row (moves are measured against them)
        # finished lines by (row or None for the header, scroll_x, width); cleared on any change
        self._cache: LRUCache[tuple[int | None, int, int], Strip] = LRUCache(1024)

    # ---------------------------------------------------------------------------------------------- data in

    def set_columns(
        self,
        cols: Sequence[Col],
        fixed: int,
        selected: str | None,
        derive: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
    ) -> None:
        """Columns in display order; the first ``fixed`` stay in place when scrolling sideways. ``derive``: the
        schema's ``derive`` (derived and aliased columns), applied to every row before it is rendered, as `tail`
        does: a derived fraction or an alias read in place of its key shows its value here too, not nan."""
        self.cols = tuple(cols)
        self.derive = derive or _as_is
        self.fixed = max(1, min(fixed, len(self.cols))) if self.cols else 0
        self.selected = selected
        self._trend = any(c.better for c in self.cols)
        self._fixed_w = render.width(self.cols[: self.fixed]) + (len(_SEP) if len(self.cols) > self.fixed else 0)
        self._rest_w = render.width(self.cols[self.fixed :])
        self._rest_spans = render.spans(self.cols[self.fixed :])
        # a column is scrolled off once scroll_x reaches its end (separator included)
        self._rest_ends = [b + len(_SEP) for _, b in self._rest_spans]
        self._invalidate()

    def set_rows(self, store: Store | None, rows: int) -> None:
        """Show the first ``rows`` rows of ``store`` (a snapshot length: rows being appended stay unseen).

        Rows only appended keep their drawn lines (a line depends on its row and the rows before); the last old row
        is drawn again, since a writer may have merged more keys into it. Anything else redraws everything."""
        mark = self._mark(store, rows)
        appended = store is not None and store is self.store and rows >= self.rows and mark[0] == self._marks[0]
        if appended and self.rows:
            try:
                appended = store is not None and store.step_at(self.rows - 1) == self._marks[1]
            except IndexError:
                appended = False
        if appended and self.rows:
            for key in [k for k in self._cache.keys() if k[0] == self.rows - 1]:
                self._cache.discard(key)
            self.paint.forget_rows(self.rows - 1)
        if store is not self.store and self.store is not None:
            self.paint = CellPaint()  # (another run's alerts)
        self.store = store
        self._marks = mark
        self.rows = rows if store is not None else 0
        self._invalidate(keep_lines=appended)
        self._tail()

    @staticmethod
    def _mark(store: Store | None, rows: int) -> tuple[tuple[int, int, int], int | None]:
        """What tells a pure append from a rewrite: (generation, resumes, rows edited in place so far; a merged
        line changes a row on screen) and the last row's step."""
        if store is None:
            return (-1, -1, -1), None
        try:
            return change_mark(store), (store.step_at(rows - 1) if rows else None)
        except IndexError:  # the follower emptied the store since ``rows`` was taken
            return change_mark(store), None

    def select(self, key: str | None) -> None:
        if key != self.selected:
            self.selected = key
            self._cache.clear()
            self.refresh()
            self._reveal_selected()

    def mark_found(self, cell: tuple[int, str] | None) -> None:
        """Light the cell a search found (row, column key); None: none."""
        if cell != self.found:
            self.found = cell
            self._cache.clear()
            self.refresh()

    def mark_alerts(self, alerts: Sequence[Any]) -> None:
        """Mark the cells ``alerts`` (steptable.alerts.rules.Alert of this table's run) name."""
        if self.paint.add_alerts(alerts):
            self._cache.clear()
            self.refresh()

    def _invalidate(self, keep_lines: bool = False) -> None:
        if not keep_lines:
            self._cache.clear()
            self.paint.forget_rows()
        set_scroll_range(self, Size(self._fixed_w + self._rest_w, self.rows + 1))
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._base_style = None
        self._cell_styles = None
        self._cache.clear()

    # ---------------------------------------------------------------------------------------------- follow

    def _set_follow(self, on: bool) -> None:
        if on != self.follow:
            self.follow = on
            self.post_message(self.ViewChanged(self))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Any scroll that leaves the bottom pauses following; reaching the bottom again resumes it. Not before the
        # table has a size: until then the bottom is not known, and Textual's own clamping is no user's scroll.
        if self.is_mounted and self.size.height:
            self._set_follow(round(new_value) >= self.max_scroll_y)
        if int(old_value) != int(new_value):  # (top_index's rounding: an animated scroll ends on whole rows)
            self.post_message(self.Moved(self))

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_x(old_value, new_value)
        if round(old_value) != round(new_value):
            self.post_message(self.ViewChanged(self))
            self.post_message(self.Moved(self))

    def columns_in_view(self) -> tuple[int, int, int]:
        """(first, last, total): 1-based positions of the columns on screen (first is 1 until the table scrolls
        sideways; then it is the first scrolled column, the pinned ones staying in front)."""
        total = len(self.cols)
        if not self.cols or not self.view_width:
            return 1, total, total
        view = max(self.view_width - self._fixed_w, 0)
        x = int(self.scroll_x)
        first, stop, _ = self._visible(x, view)
        while stop > first and self._rest_spans[stop - 1][1] > x + view:  # count whole columns only
            stop -= 1
        return (1 if first == 0 else self.fixed + first + 1), self.fixed + stop, total

    def on_resize(self, event: events.Resize) -> None:
        self._tail()
        self.post_message(self.ViewChanged(self))  # how many columns fit changed

    def on_mount(self) -> None:
        self.call_after_refresh(self._tail)

    def _tail(self) -> None:
        # force: the scrollbars are refreshed on the next layout pass, and until then Textual may think the table
        # cannot scroll (it just grew past the screen); max_scroll_y is already right
        if self.follow:
            self.scroll_to(y=self.max_scroll_y, animate=False, force=True, immediate=True)

    def action_follow(self) -> None:
        self._set_follow(True)
        self._tail()

    def action_first(self) -> None:
        self.scroll_to(y=0, animate=False, force=True, immediate=True)

    def scroll_to_index(self, index: int) -> None:
        """Put row ``index`` at the top (or as high as it goes)."""
        self.scroll_to(y=max(0, min(index, self.rows - 1)), animate=False, force=True, immediate=True)
        self._set_follow(round(self.scroll_y) >= self.max_scroll_y)

    @property
    def top_index(self) -> int:
        return int(self.scroll_y)

    # ---------------------------------------------------------------------------------------------- column cursor

    def _index_of(self, key: str | None) -> int:
        for j, c in enumerate(self.cols):
            if c.key == key:
                return j
        return -1

    def action_column(self, delta: int) -> None:
        if not self.cols:
            return
        j = self._index_of(self.selected)
        j = 0 if j < 0 else max(0, min(j + delta, len(self.cols) - 1))
        key = self.cols[j].key
        self.select(key)
        self.post_message(self.ColumnPicked(self, key))

    def action_pan(self, cells: int) -> None:
        """Scroll sideways by ``cells`` (the column cursor stays where it is)."""
        self.scroll_to(x=max(0, int(self.scroll_x) + cells), animate=False, force=True, immediate=True)

    def _reveal_selected(self) -> None:
        """Scroll sideways so the selected column is on screen."""
        j = self._index_of(self.selected)
        if j < self.fixed or not self.view_width:
            return
        start = render.width(self.cols[self.fixed : j]) + (len(_SEP) if j > self.fixed else 0)
        end = start + self.cols[j].width
        view = max(self.view_width - self._fixed_w, 1)
        x = int(self.scroll_x)
        if start < x:
            x = start
        elif end > x + view:
            x = end - view
        if x != int(self.scroll_x):
            self.scroll_to(x=x, animate=False, immediate=True)

    def column_at(self, x: int) -> str | None:
        """The key of the column under screen cell ``x`` (None on a separator or past the end)."""
        if x < self._fixed_w:
            offset, cols = x, self.cols[: self.fixed]
        else:
            offset, cols = x - self._fixed_w + int(self.scroll_x), self.cols[self.fixed :]
        for c, (a, b) in zip(cols, render.spans(cols), strict=True):
            if a <= offset < b:
                return c.key
        return None

    def on_click(self, event: events.Click) -> None:
        key = self.column_at(event.x)
        if key is not None:
            self.select(key)
            self.post_message(self.ColumnPicked(self, key))

    # ---------------------------------------------------------------------------------------------- drawing

    def _style(self, name: str) -> Style:
        # The full style (not partial): colours with alpha come blended over this widget's background.
        return self.get_component_rich_style(name)

    def _styles(self) -> tuple[Style, ...]:
        """The cell styles, combined once per style change (Rich's Style addition is not free)."""
        if self._cell_styles is None:
            self._cell_styles = cell_styles(self._base, self._style)
        return self._cell_styles

    @property
    def _base(self) -> Style:
        """The widget's own style, computed once per style change (it walks the ancestors)."""
        if self._base_style is None:
            self._base_style = self.rich_style
        return self._base_style

    def _visible(self, scroll_x: int, view: int) -> tuple[int, int, int]:
        return visible_columns(self._rest_spans, self._rest_ends, scroll_x, view)

    def _cells(self, i: int | None, first: int, stop: int) -> tuple[list[Segment], dict[int, Segment]]:
        """Styled cells of the fixed columns and of scrolling columns first..stop, for row ``i`` (None: header), and
        the alert marks that take the separator before a cell (CellPaint.cells)."""
        cols = self.cols[: self.fixed] + self.cols[self.fixed + first : self.fixed + stop]
        base = self._base
        if i is None:
            head = base + self._style("grid--header")
            cursor = head + self._style("grid--cursor")
            return [
                Segment(pad(cut(sanitize(c.header), c.width), c.width, c.align),
                        cursor if c.key == self.selected else head)
                for c in cols
            ], {}
        assert self.store is not None
        segs, leads = self.paint.cells(i, self.store.step_at(i), cols, self.row_values, self._styles(),
                                       self.selected, self._trend)
        if self.found is not None and self.found[0] == i:  # the cell a search found
            lit = self._style("grid--found")
            segs = [Segment(seg.text, (seg.style or base) + lit) if c.key == self.found[1] else seg
                    for c, seg in zip(cols, segs, strict=True)]
        return segs, leads

    def row_values(self, i: int) -> Mapping[str, Any]:
        """Row ``i`` as its cells are rendered from (the schema's derived and aliased values added)."""
        assert self.store is not None
        return self.derive(self.store.row(i))

    def texts(self, i: int) -> list[str]:
        """Each column's cell text of row ``i``, in display order (``render.cells``: the text `tail` prints)."""
        return render.cells(self.cols, self.row_values(i))

    @property
    def view_width(self) -> int:
        """Cells a line has on screen (the vertical scrollbar excluded)."""
        return self.scrollable_content_region.width

    def render_line(self, y: int) -> Strip:
        width = self.view_width
        base = self._base
        scroll_x, scroll_y = self.scroll_offset
        i: int | None = None
        if y > 0:
            i = scroll_y + y - 1
            if self.store is None or i >= self.rows or i < 0:
                return Strip.blank(width, base)
        view = max(width - self._fixed_w, 0)
        key = (i, scroll_x, width)
        line = self._cache.get(key)
        if line is not None:
            return line
        first, stop, skip = self._visible(scroll_x, view)
        try:
            cells, leads = self._cells(i, first, stop)
        except IndexError:  # the run was truncated (a restart rewrote the file) since rows was taken
            return Strip.blank(width, base)
        style = base + self._style("grid--header") if i is None else base
        line = Strip(join_line(cells, self.fixed, len(self.cols) > self.fixed, style, skip, view, width, leads), width)
        self._cache[key] = line
        self.drawn_rows = self.drawn_rows or i is not None
        return line
