"""Line assembly for StepGrid: which scrolling columns are on screen, and one screen line from styled cells.

The step column and the pinned columns stay in front; the others scroll sideways under a window of ``view`` cells
that starts ``scroll_x`` cells into them. Only the columns in the window are formatted at all.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence

from rich.segment import Segment
from rich.style import Style

from steptable.table.render import SEP


def visible_columns(spans: Sequence[tuple[int, int]], ends: Sequence[int], scroll_x: int,
                    view: int) -> tuple[int, int, int]:
    """(first, stop, skip): the scrolling columns ``first..stop`` overlap the window; ``skip`` cells of the first
    are scrolled off to the left. ``spans`` are the columns' (start, end) cells, ``ends`` each end plus the separator.
    """
    first = bisect_right(ends, scroll_x)
    stop = first
    while stop < len(spans) and spans[stop][0] < scroll_x + view:
        stop += 1
    skip = scroll_x - spans[first][0] if first < len(spans) else 0
    return first, stop, max(skip, 0)


def join_line(cells: Sequence[Segment], fixed: int, more: bool, base: Style, skip: int, view: int,
              width: int, leads: Mapping[int, Segment] | None = None) -> list[Segment]:
    """The segments of one line, exactly ``width`` cells: the ``fixed`` leading cells, a separator when ``more``
    columns follow, then the scrolling cells (only those in the window) cropped to it: ``skip`` cells off the
    first, ``view`` cells at most. A column either edge of the window cuts is drawn blank: its start would read as
    another number (``9.`` of 9.0e-6 under a header cut to blanks), its end would lose the sign. ``leads``: cell
    index -> what takes the separator before that cell (an alert mark; as wide as the separator), where the cell
    is drawn whole."""
    sep = Segment(SEP, base)
    leads = leads or {}
    segs: list[Segment] = []
    for k, seg in enumerate(cells[:fixed]):
        if k:
            segs.append(leads.get(k, sep))
        segs.append(seg)
    if more:
        segs.append(leads.get(fixed, sep) if skip == 0 else sep)
    rest = _window_cells(cells[fixed:], sep, skip, skip + view, {k - fixed: s for k, s in leads.items() if k > fixed})
    if rest and view > 0:
        parts = list(Segment.divide(rest, [skip, skip + view]))
        if len(parts) > 1:
            segs.extend(parts[1])
    used = sum(seg.cell_length for seg in segs)
    if used < width:
        segs.append(Segment(" " * (width - used), base))
    elif used > width:  # a terminal narrower than the fixed columns: cut them
        segs = next(iter(Segment.divide(segs, [width])))
    # one segment per run of equal style (separators and plain cells merge): every later stage of Textual's
    # drawing pipeline works per segment
    return list(Segment.simplify(segs))


def _window_cells(cells: Sequence[Segment], sep: Segment, start: int, end: int,
                  leads: Mapping[int, Segment]) -> list[Segment]:
    """The scrolling cells joined by separators (or the cell's lead), those that straddle the window's edges
    ``start`` and ``end`` blanked (their style kept, their lead dropped): a cell cut on the left would lose its sign
    (``0.80`` of -0.80, ``32`` of 21/32)."""
    out: list[Segment] = []
    pos = 0
    for k, seg in enumerate(cells):
        n = seg.cell_length
        cut = pos + sep.cell_length * bool(k)
        cut_off = cut < end < cut + n or cut < start < cut + n
        if k:
            out.append(sep if cut_off else leads.get(k, sep))
            pos += sep.cell_length
        if cut_off:
            seg = Segment(" " * n, seg.style)
        out.append(seg)
        pos += n
    return out
