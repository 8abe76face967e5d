"""StepGrid: the step table as a virtual widget on Textual's Line API.

Only the rows on screen are formatted, from the run's columnar store, through ``render.cells`` (the same text as the
stdout row). Line 0 is the header, pinned; the step column and the user's pinned columns stay put when the table
scrolls sideways. Follow mode keeps the newest row in view until the user scrolls up; End / G resumes it.
"""

from __future__ import annotations

from collections.abc import Sequence
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

from steptable import render
from steptable.app.model import Store
from steptable.columns import Col
from steptable.formatting import pad

_SEP = render.SEP


class StepGrid(ScrollView, can_focus=True):
    """One arm's step table."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "grid--header",
        "grid--cursor",
        "grid--column",
        "grid--better",
        "grid--worse",
        "grid--nan",
        "grid--pinned",
    }

    DEFAULT_CSS = """
    StepGrid {
        height: 1fr;
        width: 1fr;
        background: $surface;
        color: $foreground;
        scrollbar-size: 1 1;
    }
    StepGrid > .grid--header { text-style: bold; background: $panel; color: $text; }
    StepGrid > .grid--cursor { text-style: bold reverse; }
    StepGrid > .grid--column { background: $boost; }
    StepGrid > .grid--better { color: $text-success; }
    StepGrid > .grid--worse { color: $text-error; }
    StepGrid > .grid--nan { color: $text-muted; }
    StepGrid > .grid--pinned { color: $text-accent; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "column(-1)", "◀col", show=False),
        Binding("right", "column(1)", "col▶", show=False),
        Binding("shift+left", "scroll_left", "Scroll left", show=False),
        Binding("shift+right", "scroll_right", "Scroll right", show=False),
        Binding("home", "first", "First row", show=False),
        Binding("end,G", "follow", "Follow"),
    ]

    class ColumnPicked(Message):
        """The user moved the column cursor (keys or a click) to ``key``."""

        def __init__(self, grid: StepGrid, key: str) -> None:
            super().__init__()
            self.grid = grid
            self.key = key

    class FollowChanged(Message):
        def __init__(self, grid: StepGrid, follow: bool) -> None:
            super().__init__()
            self.grid = grid
            self.follow = follow

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.store: Store | None = None
        self.rows = 0
        self.cols: tuple[Col, ...] = ()
        self.fixed = 1  # leading columns that do not scroll sideways
        self.selected: str | None = None
        self.follow = True
        self._trend = False
        self._fixed_w = 0
        self._rest_w = 0
        self._cache: LRUCache[int, tuple[Strip, Strip]] = LRUCache(256)

    # ---------------------------------------------------------------------------------------------- data in

    def set_columns(self, cols: Sequence[Col], fixed: int, selected: str | None) -> None:
        """Columns in display order; the first ``fixed`` stay in place when scrolling sideways."""
        self.cols = tuple(cols)
        self.fixed = max(1, min(fixed, len(self.cols))) if self.cols else 0
        self.selected = selected
        self._trend = any(c.better for c in self.cols)
        self._fixed_w = render.width(self.cols[: self.fixed]) + (len(_SEP) if len(self.cols) > self.fixed else 0)
        self._rest_w = render.width(self.cols[self.fixed :])
        self._invalidate()

    def set_rows(self, store: Store | None, rows: int) -> None:
        """Show the first ``rows`` rows of ``store`` (a snapshot length: rows being appended stay unseen)."""
        self.store = store
        self.rows = rows if store is not None else 0
        self._invalidate()
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def select(self, key: str | None) -> None:
        if key != self.selected:
            self.selected = key
            self._cache.clear()
            self.refresh()
            self._reveal_selected()

    def _invalidate(self) -> None:
        self._cache.clear()
        self.virtual_size = Size(self._fixed_w + self._rest_w, self.rows + 1)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    # ---------------------------------------------------------------------------------------------- follow

    def _set_follow(self, on: bool) -> None:
        if on != self.follow:
            self.follow = on
            self.post_message(self.FollowChanged(self, on))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Any scroll that leaves the bottom pauses following; reaching the bottom again resumes it.
        self._set_follow(round(new_value) >= self.max_scroll_y)

    def on_resize(self, event: events.Resize) -> None:
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def action_follow(self) -> None:
        self._set_follow(True)
        self.scroll_end(animate=False, immediate=True, x_axis=False)

    def action_first(self) -> None:
        self.scroll_to(y=0, animate=False, immediate=True)

    def scroll_to_index(self, index: int) -> None:
        """Put row ``index`` at the top (or as high as it goes)."""
        self.scroll_to(y=max(0, min(index, self.rows - 1)), animate=False, immediate=True)
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
        return self.get_component_rich_style(name, partial=True)

    def _header_strips(self) -> tuple[Strip, Strip]:
        base = self.rich_style + self.get_component_rich_style("grid--header")
        cursor = self._style("grid--cursor")
        segs = [
            Segment(pad(c.header, c.width, c.align), base + cursor if c.key == self.selected else base)
            for c in self.cols
        ]
        return self._split(segs, base)

    def _row_strips(self, i: int) -> tuple[Strip, Strip]:
        cached = self._cache.get(i)
        if cached is not None:
            return cached
        assert self.store is not None
        base = self.rich_style
        values: dict[str, Any] = self.store.row(i)
        prev = self.store.row(i - 1) if self._trend and i > 0 else None
        texts = render.cells(self.cols, values)
        better, worse, nan = self._style("grid--better"), self._style("grid--worse"), self._style("grid--nan")
        column = self._style("grid--column")
        pinned = self._style("grid--pinned")
        segs: list[Segment] = []
        for j, (c, text) in enumerate(zip(self.cols, texts, strict=True)):
            style = base
            if j == 0:
                style = base + pinned
            elif text.strip() == "nan":
                style = base + nan
            elif prev is not None and c.better:
                t = render.trend(c, values.get(c.key), prev.get(c.key))
                style = base + better if t > 0 else base + worse if t < 0 else base
            if c.key == self.selected:
                style += column
            segs.append(Segment(text, style))
        out = self._split(segs, base)
        self._cache[i] = out
        return out

    def _split(self, cells: list[Segment], base: Style) -> tuple[Strip, Strip]:
        """Join cells with separators into the fixed part and the scrolling part."""
        sep = Segment(_SEP, base)

        def join(part: list[Segment]) -> list[Segment]:
            out: list[Segment] = []
            for k, seg in enumerate(part):
                if k:
                    out.append(sep)
                out.append(seg)
            return out

        head = join(cells[: self.fixed])
        if len(cells) > self.fixed:
            head.append(sep)
        return Strip(head, self._fixed_w), Strip(join(cells[self.fixed :]), self._rest_w)

    @property
    def view_width(self) -> int:
        """Cells a line has on screen (the vertical scrollbar excluded)."""
        return self.scrollable_content_region.width

    def render_line(self, y: int) -> Strip:
        width = self.view_width
        base = self.rich_style
        scroll_x, scroll_y = self.scroll_offset
        if y == 0:
            fixed, rest = self._header_strips()
            style = base + self.get_component_rich_style("grid--header")
        else:
            i = scroll_y + y - 1
            if self.store is None or i >= self.rows or i < 0:
                return Strip.blank(width, base)
            fixed, rest = self._row_strips(i)
            style = base
        if self._fixed_w >= width:
            return Strip.join([fixed, rest]).crop_extend(0, width, style)
        view = width - self._fixed_w
        return Strip.join([fixed, rest.crop_extend(scroll_x, scroll_x + view, style)])
