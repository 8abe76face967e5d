"""Header / row / legend / dump as text. Pure: the one renderer behind stdout, `steptable tail` and the app.

A rendered row always has exactly the display width of the header: every cell is fitted to its column, and
columns are joined by one space.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from steptable.columns import Col
from steptable.formatting import cut, format_cell, pad, sanitize, to_float

SEP = " "


def header(cols: Sequence[Col]) -> str:
    """The header line: each header right-aligned (or as the column aligns) over its column."""
    return SEP.join(pad(c.header, c.width, c.align) for c in cols)


def cells(cols: Sequence[Col], row: Mapping[str, Any]) -> list[str]:
    """Each column's cell text, padded to its width. A missing key renders as ``nan``."""
    get = row.get
    return [format_cell(get(c.key), c.fmt, c.width, c.align) for c in cols]


def row(cols: Sequence[Col], values: Mapping[str, Any]) -> str:
    """One table row from raw values. Rounding happens here and nowhere else."""
    return SEP.join(cells(cols, values))


def width(cols: Sequence[Col]) -> int:
    """Display width of a rendered row."""
    return sum(c.width for c in cols) + len(SEP) * max(len(cols) - 1, 0)


def spans(cols: Sequence[Col]) -> list[tuple[int, int]]:
    """(start, end) cell offsets of each column in a rendered row, for painting styles over it."""
    out: list[tuple[int, int]] = []
    x = 0
    for c in cols:
        out.append((x, x + c.width))
        x += c.width + len(SEP)
    return out


def legend(cols: Iterable[Col], title: str | None = "columns:", indent: int = 2) -> str:
    """One line per column that has a description: ``header  meaning``. Headers aligned for reading."""
    described = [c for c in cols if c.desc]
    if not described:
        return "" if title is None else title.rstrip(":") + ": (none described)"
    hw = max(len(c.header.strip()) for c in described)
    lines = [] if title is None else [title]
    for c in described:
        arrow = {"higher": " (higher is better)", "lower": " (lower is better)"}.get(c.better or "", "")
        extra = "" if c.stream else " [dump only]"
        lines.append(f"{' ' * indent}{c.header.strip():<{hw}}  {sanitize(c.desc)}{arrow}{extra}")
    return "\n".join(lines)


def table(cols: Sequence[Col], rows: Iterable[Mapping[str, Any]], header_every: int = 0) -> str:
    """A whole table: header, then rows; the header repeats every ``header_every`` rows (0 = once)."""
    h = header(cols)
    out = [h]
    for i, r in enumerate(rows):
        if header_every and i and i % header_every == 0:
            out.append(h)
        out.append(row(cols, r))
    return "\n".join(out)


def title_line(text: str, total_width: int) -> str:
    """A label line over a table (``── routeA ──``), cut to the table width."""
    label = f"── {sanitize(text)} "
    return cut(label + "─" * max(total_width - len(label), 0), max(total_width, len(label)))


def trend(col: Col, value: Any, prev: Any) -> int:
    """+1 if ``value`` moved in the column's better direction versus ``prev``, -1 if worse, 0 otherwise."""
    if col.better is None:
        return 0
    a, b = to_float(value), to_float(prev)
    if math.isnan(a) or math.isnan(b) or a == b:
        return 0
    up = a > b
    return 1 if up == (col.better == "higher") else -1
