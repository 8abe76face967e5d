"""Header / row / legend / dump as text. Pure: the one renderer behind stdout, `steptable tail` and the app.

A rendered row always has exactly the display width of the header: every cell is fitted to its column, and
columns are joined by one space.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Final

from steptable.table import wholerow
from steptable.table.cells import cut_middle, key_name
from steptable.table.columns import Col, with_notations
from steptable.table.formatting import (
    cut,
    display_width,
    fill_digits,
    fmt_auto,
    format_cell,
    pad,
    sanitize,
    to_float,
)
from steptable.table.wholerow import SAFE_SPEC, aligned

SEP = " "


def header(cols: Sequence[Col]) -> str:
    """The header line: each header right-aligned (or as the column aligns) over its column."""
    return SEP.join(pad(c.header, c.width, c.align) for c in cols)


def cells(cols: Sequence[Col], row: Mapping[str, Any]) -> list[str]:
    """Each column's cell text, padded to its width. A missing key renders blank."""
    get = row.get
    return [format_cell(get(c.key), c.fmt, c.width, c.align, c.notation) for c in cols]


def row(cols: Sequence[Col], values: Mapping[str, Any]) -> str:
    """One table row from raw values. Rounding happens here and nowhere else.

    For many rows, call :func:`compile_row` once and reuse it: this looks the renderer up by the whole column set.
    """
    return compile_row(tuple(cols))(values)


@lru_cache(maxsize=256)
def compile_row(cols: tuple[Col, ...]) -> Callable[[Mapping[str, Any]], str]:
    """A row renderer specialised for one column set: the per-step hot path of StepLogger.

    It is generated as straight-line code, one block per column: the common case (a finite float under a fixed
    spec, an int under "d", an (int, int) fraction, a float in the automatic format) is formatted inline, and every
    other value goes through :func:`format_cell`, so the text is identical to ``SEP.join(cells(cols, values))``
    (the render tests check that on random rows). Where every column can take it, the renderer returned is the
    whole-row ``%``-template of steptable.table.wholerow, with this code as its fallback for a row it cannot write.
    """
    lines = ["def render_inline(values):", "    get = values.get"]
    names = []
    for i, c in enumerate(cols):
        w, fmt, name = c.width, c.fmt, f"c{i}"
        names.append(name)
        slow = f"{name} = cell(v, COLS[{i}].fmt, {w}, COLS[{i}].align, COLS[{i}].notation)"
        lines.append(f"    v = get(KEYS[{i}])")
        if c.align != "right" or (fmt not in (None, "frac") and not SAFE_SPEC.fullmatch(fmt)):
            lines.append(f"    {slow}")
            continue
        if fmt == "frac":
            lines += [
                "    if (type(v) is tuple or type(v) is list) and len(v) == 2"
                " and type(v[0]) is int and type(v[1]) is int:",
                f"        {name} = f'{{v[0]}}/{{v[1]}}'.rjust({w})",
                f"        if len({name}) != {w}: {slow}",
                f"    else: {slow}",
            ]
        elif fmt is None and c.notation is not None:
            n = c.notation  # a float the column's notation holds: its text (the slow path checks the rest)
            lines += [
                f"    if type(v) is float and {wholerow.held(i, n, 'v')}:",
                f"        {name} = NOTE{i}(v).rjust({w})",
                f"        if len({name}) != {w}: {slow}",
                f"    else: {slow}",
            ]
        elif fmt is None:
            lines += [  # fit_number's first try is the 3-digit form: where that fits, it is what fit_number gives
                "    if type(v) is float:",
                f"        {name} = auto(v)",
                f"        if len({name}) < {w}: {name} = filled(v, {name}, {w}).rjust({w})",
                f"        elif len({name}) != {w}: {slow}",
                f"    else: {slow}",
            ]
        elif fmt.endswith("d"):
            lines += [
                f"    if type(v) is int and -{10 ** w} < v < {10 ** w}:",  # a huge int: str() may even raise
                f"        {name} = f'{{v:{aligned(fmt, w)}}}'",
                f"        if len({name}) != {w}: {slow}",
                f"    else: {slow}",
            ]
        elif fmt.endswith("e"):
            lines += [
                "    if type(v) is float and -INF < v < INF:",
                f"        m, _, x = f'{{v:{fmt}}}'.partition('e')",
                f"        {name} = f'{{m}}e{{int(x)}}'.rjust({w})",
                f"        if len({name}) != {w}: {slow}",
                f"    else: {slow}",
            ]
        else:
            # A fixed spec that would round a non-zero value to 0.00 goes the slow way (it shows the magnitude).
            prec = int(fmt.split(".")[1][:-1]) if "." in fmt else 6
            thr = 0.5 * 10 ** -(prec + (2 if fmt.endswith("%") else 0))
            lines += [
                f"    if type(v) is float and -INF < v < INF and (v == 0 or v > {thr!r} or v < {-thr!r}):",
                f"        {name} = f'{{v:{aligned(fmt, w)}}}'",
                f"        if len({name}) != {w}: {slow}",
                f"    else: {slow}",
            ]
    # one flat call: a chain of + over thousands of columns nests past the compiler's recursion limit
    lines.append(f"    return SEP.join(({', '.join(names)},))" if names else "    return ''")
    lines += [  # the inline code must not raise where format_cell would not (an int past str()'s digit limit...)
        "def render_row(values):",
        "    try:",
        "        return render_inline(values)",
        "    except Exception:",
        "        return SEP.join(CELLS(COLS, values))",
    ]
    lines += wholerow.source(cols, SEP)
    env: dict[str, Any] = {
        **wholerow.names(cols, SEP),
        "KEYS": tuple(c.key for c in cols), "COLS": cols, "cell": format_cell, "auto": fmt_auto, "CELLS": cells,
        "filled": fill_digits, "INF": math.inf, "SEP": SEP, "WIDTH": width(cols),
    }
    exec(compile("\n".join(lines), f"<steptable row {len(cols)} cols>", "exec"), env)
    fn: Callable[[Mapping[str, Any]], str] = env.get("render_fast", env["render_row"])
    return fn


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


DIRECTION: Final = {"higher": "; higher is better", "lower": "; lower is better"}
"""What a legend line adds for a column (or a schema's pattern rule) with a better direction."""


#: the legend's meaning of a column headed by its key's escapes
INVISIBLE_KEY = "a key with no visible character, headed by its escapes"


def explained(col: Col) -> bool:
    """Whether a legend has something to say of ``col``: a description, or a header that is not its key."""
    return bool(col.desc) or col.header.strip() != col.key


def _says_key(col: Col) -> str:
    name = key_name(col.key)
    return INVISIBLE_KEY if name == col.header.strip() and name != sanitize(col.key) else name


def legend(cols: Iterable[Col], title: str | None = "columns:", indent: int = 1) -> str:
    """One line per column that has a description: ``header  meaning``. Headers aligned for reading. A column
    without one whose header is not its key says its key (``gn  grad_norm``): what a short header stands for; one
    headed by its key's escapes (a key with no visible character: steptable.table.cells.key_name) says so."""
    described = [c if c.desc else c.with_(desc=_says_key(c)) for c in cols if explained(c)]
    title = None if title is None else sanitize(title)  # it may name a schema from a user's file
    if not described:
        return "" if title is None else title.rstrip(":") + ": (none described)"
    hw = max(display_width(c.header.strip()) for c in described)  # cells, not characters: 中文 is 4 wide
    lines = [] if title is None else [title]
    for c in described:
        arrow = DIRECTION.get(c.better or "", "")
        extra = "" if c.stream else " [dump only]"
        lines.append(f"{' ' * indent}{pad(c.header.strip(), hw, 'left')}  {sanitize(c.desc)}{arrow}{extra}")
    return "\n".join(lines)


def table(cols: Sequence[Col], rows: Iterable[Mapping[str, Any]], header_every: int = 0) -> str:
    """A whole table: header, then rows; the header repeats every ``header_every`` rows (0 = once). Each
    automatic-format column writes its numbers in one notation, chosen from these rows
    (``columns.with_notations``)."""
    rows = list(rows)
    cols = with_notations(cols, rows)
    h = header(cols)
    render_row = compile_row(tuple(cols))
    out = [h]
    for i, r in enumerate(rows):
        if header_every and i and i % header_every == 0:
            out.append(h)
        out.append(render_row(r))
    return "\n".join(out)


def title_line(text: str, total_width: int) -> str:
    """A label line over a table (``── routeA ──``) in the table's width; a label too long for it loses its middle
    (see ``_cut_title``), not its end: the end tells a run's file from its sibling's."""
    text = sanitize(text)
    room = max(total_width, min(display_width(text) + 4, 40)) - 4  # a narrow table still shows a readable label
    label = f"── {_cut_title(text, room)} "
    return label + "─" * max(total_width - display_width(label), 0)


_ARM_PATH = re.compile(r"(.+?) \((.+)\)")
#: cells a path in a title keeps at least (``arm (path)``); with less room the arm is the title
_MIN_PATH = 12


def _cut_title(text: str, width: int) -> str:
    """A run's title (``arm (path)`` or a path) in at most ``width`` cells: the arm whole where it fits, since it
    is what tells a sweep's runs apart, and the path cut by ``_cut_path``."""
    if display_width(text) <= width:
        return text
    m = _ARM_PATH.fullmatch(text)
    if m is None:
        return _cut_path(text, width)
    arm, path = m[1], m[2]
    room = width - display_width(arm) - 3
    return f"{arm} ({_cut_path(path, room)})" if room >= _MIN_PATH else cut_middle(arm, width)


def _cut_path(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, its middle dropped for an ellipsis. A path keeps the longest run of its
    last parts that fits beside an ellipsis and a character of its head: what tells two runs' files apart is at the
    end (``2…/version_0/metrics.csv``, ``2…/version_1/metrics.csv``); the head is mostly the root they share."""
    if display_width(text) <= width:
        return text
    for m in re.finditer("/", text):  # the first "/" that starts a short enough tail: the longest such tail
        tail = text[m.start():]
        w = display_width(tail)
        if w <= width - 2:
            return cut(text[: m.start()], width - w) + tail
    return cut_middle(text, width)


def trend(col: Col, value: Any, prev: Any) -> int:
    """+1 if ``value`` moved in the column's better direction versus ``prev``, -1 if worse, 0 otherwise."""
    if col.better is None:
        return 0
    a, b = to_float(value), to_float(prev)
    if math.isnan(a) or math.isnan(b) or a == b:
        return 0
    up = a > b
    return 1 if up == (col.better == "higher") else -1
