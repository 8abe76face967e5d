"""PinnedTable: a table given as two Texts, a column that stays on the left and the rest beside it, line for line,
the first line a header that stays on top. Scrolled sideways, the header and the rows beside the column move and the
column stays; scrolled down, the rows move under the header, the column's lines with them (the compare view: metric
names, arms' names, the cells). A Line API widget: only the lines on screen are drawn."""

from __future__ import annotations

from itertools import zip_longest

from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from steptable.app.widgets.scrollrange import set_scroll_range


class PinnedTable(ScrollView, can_focus=False):
    DEFAULT_CSS = """
    PinnedTable { width: 1fr; height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._rows: list[tuple[Strip, Strip]] = []  # (the column's line, the rest's), the header's first
        self._left = 0  # the column's width: the rest is drawn this far to the right

    def show(self, left: Text, right: Text) -> None:
        """Show ``left`` (the column that stays) and ``right`` beside it, a line a row (a trailing newline ends the
        last line); the first line of each is the header."""
        console = self.app.console

        def strips(text: Text) -> list[Strip]:
            return [Strip(line.render(console, end="")) for line in text.split("\n")] if text.plain else []

        blank = Strip([])
        self._rows = list(zip_longest(strips(left), strips(right), fillvalue=blank))
        self._left = max((a.cell_length for a, _ in self._rows), default=0)
        right_w = max((b.cell_length for _, b in self._rows), default=0)
        set_scroll_range(self, Size(self._left + right_w, len(self._rows)))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        sx, sy = self.scroll_offset
        width = self.scrollable_size.width  # (not under the scrollbar: the rows' ends are in view scrolled to them)
        i = y if y == 0 else y + sy  # (the header's line stays on top)
        if i >= len(self._rows):
            return Strip.blank(width)
        left, right = self._rows[i]
        view = max(0, width - self._left)
        line = Strip.join([left.extend_cell_length(self._left), right.crop(sx, sx + view)])
        return line.crop(0, width).extend_cell_length(width)
