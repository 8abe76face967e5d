"""steptable.app.widgets.lines: the scrolling part cropped to the window, a cut column blank."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style

from steptable.app.widgets.lines import join_line


def test_line_assembly_crops_the_scrolling_part() -> None:
    from rich.segment import Segment
    from rich.style import Style

    from steptable.app.widgets.lines import join_line, visible_columns

    spans, ends = [(0, 4), (5, 9), (10, 14)], [5, 10, 15]  # three 4-cell columns after the fixed part
    assert visible_columns(spans, ends, 0, 7) == (0, 2, 0)
    assert visible_columns(spans, ends, 6, 7) == (1, 3, 1)
    cells = [Segment("stp"), Segment("bbbb"), Segment("cccc")]  # fixed "stp", then the visible columns 1..2
    line = join_line(cells, 1, True, Style(), 1, 8, 12)  # view = width - fixed part (4)
    assert "".join(s.text for s in line) == "stp     cccc"  # the column the left edge cuts: blank, no fragment
    short = join_line(cells[:2], 1, True, Style(), 0, 8, 12)
    assert "".join(s.text for s in short) == "stp bbbb    "  # padded to the width
    narrow = join_line(cells, 1, True, Style(), 0, 0, 2)
    assert "".join(s.text for s in narrow) == "st"


def test_a_column_cut_by_the_window_is_blank() -> None:
    """120x40: rows ended in "9.", "1." (the start of lr = 9.0e-6) under a header cut to blanks."""
    plain = Style()
    cells = [Segment("  step", plain), Segment("  loss", plain), Segment("9.0e-6", plain), Segment("  1234", plain)]
    # the scrolling cells: "  loss 9.0e-6   1234"; a window of 9 cells shows "  loss" whole and 2 cells of lr
    line = "".join(s.text for s in join_line(cells, 1, True, plain, 0, 9, 16))
    assert line == "  step   loss   "
    # the window ends inside the last column: "  1234" would read as 1
    line = "".join(s.text for s in join_line(cells, 1, True, plain, 0, 16, 23))
    assert line == "  step   loss 9.0e-6   "


def test_an_alert_mark_takes_the_separator_before_a_full_cell() -> None:
    """A mark in ``leads`` replaces the separator before its cell, in the fixed part, between the fixed and the
    scrolling part and among the scrolling cells, never widening the line; a cell the window cuts drops it."""
    plain = Style()
    cells = [Segment("  step", plain), Segment("1.2e+1", plain), Segment("9.0e-6", plain), Segment("  1234", plain)]
    mark = Segment("!", plain)
    line = "".join(s.text for s in join_line(cells, 2, True, plain, 0, 13, 23, {1: mark, 2: mark}))
    assert line == "  step!1.2e+1!9.0e-6   "
    line = "".join(s.text for s in join_line(cells, 1, True, plain, 0, 20, 27, {1: mark, 3: mark}))
    assert line == "  step!1.2e+1 9.0e-6!  1234"
    # scrolled 1 cell: the first scrolling cell is cut (blank), its mark goes; the next one's stays
    line = "".join(s.text for s in join_line(cells, 1, True, plain, 1, 20, 27, {1: mark, 2: mark}))
    assert line == "  step      !9.0e-6   1234 " and len(line) == 27
