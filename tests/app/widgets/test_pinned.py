"""steptable.app.widgets.pinned: a table whose left column stays while it scrolls sideways and whose header line
stays while it scrolls down."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from steptable.app.widgets.pinned import PinnedTable

pytestmark = pytest.mark.anyio


class _One(App[None]):
    def compose(self) -> ComposeResult:
        yield PinnedTable()


async def test_the_column_and_the_header_stay_as_the_table_scrolls() -> None:
    """20 cells of a 40-cell row in view, 5 rows of 30: scrolled both ways to the end, the header still heads the
    view and the names still name its rows; the last row and the rows' ends are in view; a shorter table after it
    (a message: one line, no column) is drawn from its start."""
    left = Text("name  \n" + "".join(f"r{i:02d}   \n" for i in range(29)))
    right = Text("".join(f"{i:02d}" + "-" * 36 + "|\n" for i in range(30)))
    app = _One()
    async with app.run_test(size=(26, 5)) as pilot:
        table = app.query_one(PinnedTable)
        table.show(left, right)
        await pilot.pause()
        table.scroll_to(x=1000, y=1000, animate=False, immediate=True)
        await pilot.pause()
        lines = [table.render_line(y).text for y in range(table.scrollable_size.height)]
        assert lines[0].startswith("name  ") and lines[0].endswith("-|")
        assert lines[-1].startswith("r28   ") and lines[-1].endswith("-|")
        assert [line[:3] for line in lines[1:]] == [f"r{i:02d}" for i in range(29 - len(lines) + 1, 29)]
        table.show(Text(), Text("one arm only\n"))
        await pilot.pause()
        assert table.render_line(0).text.startswith("one arm only")
