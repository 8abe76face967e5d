"""Header / row / legend / dump as text. Pure: the one renderer behind stdout, `steptable tail` and the app.

A rendered row always has exactly the display width of the header: every cell is fitted to its column, and
columns are joined by one space.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import Any, Final

from steptable.table.cells import cut_middle
from steptable.table.columns import Col, with_notations
from steptable.table.formatting import (
    _compact_exponent,
    cut,
    display_width,
    fill_digits,
    fmt_auto,
    format_cell,
    pad,
    sanitize,
    to_float,
)

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


_SAFE_SPEC = re.compile(r"([+\- ]?)(\.[0-9]{1,2})?([fFde%])")


def _aligned(fmt: str, width: int) -> str:
    """'+.2f' at width 6 -> '>+6.2f' (align, sign, width, precision, type: the order format specs require)."""
    m = _SAFE_SPEC.fullmatch(fmt)
    assert m is not None
    sign, prec, kind = m.group(1), m.group(2) or "", m.group(3)
    return f">{sign}{width}{prec}{kind}"


@lru_cache(maxsize=256)
def compile_row(cols: tuple[Col, ...]) -> Callable[[Mapping[str, Any]], str]:
    """A row renderer specialised for one column set: the per-step hot path of StepLogger.

    It is generated as straight-line code, one block per column: the common case (a finite float under a fixed
    spec, an int under "d", an (int, int) fraction, a float in the automatic format) is formatted inline, and every
    other value goes through :func:`format_cell`, so the text is identical to ``SEP.join(cells(cols, values))``
    (the render tests check that on random rows).
    """
    lines = ["def render_inline(values):", "    get = values.get"]
    names = []
    for i, c in enumerate(cols):
        w, fmt, name = c.width, c.fmt, f"c{i}"
        names.append(name)
        slow = f"{name} = cell(v, COLS[{i}].fmt, {w}, COLS[{i}].align, COLS[{i}].notation)"
        lines.append(f"    v = get(KEYS[{i}])")
        if c.align != "right" or (fmt not in (None, "frac") and not _SAFE_SPEC.fullmatch(fmt)):
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
            exact = f" and HOLDS{i}(v)" if n.exact or n.decimals == 0 or n.exp is not None else ""
            lines += [
                f"    if type(v) is float and {-n.top!r} < v < {n.top!r}{exact}:",
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
                f"        {name} = f'{{v:{_aligned(fmt, w)}}}'",
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
                f"        {name} = f'{{v:{_aligned(fmt, w)}}}'",
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
    lines += _fast_path(cols)
    env: dict[str, Any] = {
        "KEYS": tuple(c.key for c in cols), "COLS": cols, "cell": format_cell, "auto": fmt_auto, "CELLS": cells,
        "filled": fill_digits, "INF": math.inf, "SEP": SEP, "WIDTH": width(cols), "KEYS_GET": _keys_getter(cols),
        "TEMPLATE": _template(cols), "frac_new": _frac_new, "EXP_SUFFIX": _EXP_SUFFIX,
        **{f"MEMO{i}": {} for i in range(len(cols))},
        **{f"NOTE{i}": c.notation.text for i, c in enumerate(cols) if c.notation is not None},
        **{f"HOLDS{i}": c.notation.holds for i, c in enumerate(cols) if c.notation is not None},
    }
    exec(compile("\n".join(lines), f"<steptable row {len(cols)} cols>", "exec"), env)
    fn: Callable[[Mapping[str, Any]], str] = env.get("render_fast", env["render_row"])
    return fn


# ------------------------------------------------------------------------------------------------- whole-row path
# One %-template formats every cell of a row in a single C call (about 4x cheaper than a format per cell). The row's
# values go into it as they are: %-formatting applies a fixed spec to any real number exactly as format() does, so
# only "d" columns check the type (a float would be truncated). Fractions and exponent cells are formatted first
# (memoised: n/32 and learning rates repeat). The text is then checked: any error, a too-wide cell (the row's length
# changes), a non-finite value ("nan"/"inf", fixed up in place) or a fixed spec that rounded a value to zero (redone
# by the per-cell path, which shows its magnitude) is caught, and the per-cell path renders that row instead.


def _zero_check(cols: tuple[Col, ...]) -> str:
    """Generated condition that is true when some fixed-spec cell reads as zero ("+0.00"), so the per-cell path
    can tell a true zero from a value rounded away. Plain substring tests (a regex costs several times more); a
    false alarm ("10.00") only costs the slower path."""
    needles = sorted({"0." + "0" * int((m.group(2) or ".6")[1:]) for c in cols if _fast_kind(c) == "float"
                      for m in [_SAFE_SPEC.fullmatch(c.fmt or "")] if m is not None})
    tests = [f"{(n + SEP)!r} in text" for n in needles]
    if cols and _fast_kind(cols[-1]) == "float":  # the last cell has no separator after it
        tests += [f"text.endswith({n!r})" for n in needles]
    return " or ".join(tests) or "False"


def _fast_kind(c: Col) -> str | None:
    if c.align != "right" or c.fmt is None:
        return None
    if c.fmt == "frac":
        return "frac"
    m = _SAFE_SPEC.fullmatch(c.fmt)
    if m is None or m.group(3) in "%F" or m.group(1) == "-" or (m.group(3) != "d" and m.group(2) == ".0"):
        # '%' scales by 100, which a %-template cannot; 'F' prints NAN/INF; a '-' sign is a left-justify flag in a
        # %-template; ".0f" can round a value to a bare "0" that the zero check below cannot tell from a true zero:
        # all go the per-cell way.
        return None
    return {"d": "int", "e": "exp"}.get(m.group(3), "float")


def _template(cols: tuple[Col, ...]) -> str:
    parts = []
    for c in cols:
        k = _fast_kind(c)
        if k in ("frac", "exp"):
            parts.append(f"%{c.width}s")
        elif k is not None and c.fmt is not None:
            parts.append("%" + _aligned(c.fmt, c.width)[1:])
    return SEP.join(parts)


#: Python's two-digit exponent suffix -> the compact one the per-cell path writes ('e+05' -> 'e5', 'e-06' -> 'e-6'),
#: tabulated once from formatting's own rule. A three-digit exponent or a non-finite value has no entry: the
#: KeyError sends the row to the per-cell path.
_EXP_SUFFIX = {s: _compact_exponent(s) for s in (f"e{sign}{n:02d}" for sign in "+-" for n in range(100))}


_MEMO_SIZE = 4096  # texts remembered per column (fractions of a fixed batch size, a learning-rate schedule)


def _frac_new(memo: dict[Any, str], v: Any) -> str | None:
    """The text of an (int, int) fraction, remembered (bounded); None for anything else (per-cell path)."""
    if type(v) is not tuple or len(v) != 2 or type(v[0]) is not int or type(v[1]) is not int:
        return None
    if len(memo) >= _MEMO_SIZE:
        memo.clear()
    text = memo[v] = f"{v[0]}/{v[1]}"
    return text


def _keys_getter(cols: tuple[Col, ...]) -> Callable[[Mapping[str, Any]], Any]:
    """All of a row's values in one C call, as a tuple; a missing key raises KeyError (the per-cell path renders
    it blank)."""
    keys = tuple(c.key for c in cols)
    if not keys:
        return lambda values: ()
    if len(keys) == 1:
        one = itemgetter(keys[0])
        return lambda values: (one(values),)
    return itemgetter(*keys)


def _fast_path(cols: tuple[Col, ...]) -> list[str]:
    """Source of ``render_fast``, or nothing when some column cannot take the whole-row path."""
    kinds = [_fast_kind(c) for c in cols]
    if not cols or any(k is None for k in kinds):
        return []
    names = [f"v{i}" for i in range(len(cols))]
    args = list(names)
    # Only a plain dict: itemgetter on a defaultdict would insert the missing keys its factory makes up, where the
    # per-cell path (values.get) shows them blank.
    lines = ["def render_fast(values):", "    if type(values) is not dict: return render_row(values)", "    try:"]
    lines.append(f"        {', '.join(names)}{',' if len(names) == 1 else ''} = KEYS_GET(values)")
    ints = [f"type(v{i}) is not int" for i, k in enumerate(kinds) if k == "int"]
    if ints:
        lines.append(f"        if {' or '.join(ints)}: return render_row(values)")
    for i, (c, k) in enumerate(zip(cols, kinds, strict=True)):
        if k == "frac":
            lines += [
                f"        t{i} = MEMO{i}.get(v{i})",  # an unhashable value raises TypeError: per-cell path
                f"        if t{i} is None:",
                f"            t{i} = frac_new(MEMO{i}, v{i})",
                f"            if t{i} is None: return render_row(values)",
            ]
            args[i] = f"t{i}"
        elif k == "exp":
            m = _SAFE_SPEC.fullmatch(c.fmt or "")
            assert m is not None
            spec = f"%{m.group(1)}{m.group(2) or ''}e"  # '+.1e' -> '%+.1e' (the template pads the text)
            lines += [  # inline: a gradient norm is new every step, so this miss is the common case
                f"        t{i} = MEMO{i}.get(v{i})",
                f"        if t{i} is None:",
                f"            s = {spec!r} % (v{i},)",  # a bare % would unpack a 1-tuple cell: (3e-4,) -> 3.0e-4
                f"            t{i} = s[:-4] + EXP_SUFFIX[s[-4:]]",
                f"            if v{i}:",  # not 0.0: -0.0 == 0.0 as a key, but its text has a sign
                f"                if len(MEMO{i}) >= {_MEMO_SIZE}: MEMO{i}.clear()",
                f"                MEMO{i}[v{i}] = t{i}",
            ]
            args[i] = f"t{i}"
    lines += [
        f"        text = TEMPLATE % ({', '.join(args)},)",
        "    except Exception:",  # wrong type, unhashable, overflow, an int past str()'s digit limit, nan exponent
        "        return render_row(values)",
        f"    if len(text) != WIDTH or {_zero_check(cols)}:",
        "        return render_row(values)",
    ]
    if any(k == "float" for k in kinds):
        # '%6.2f' prints nan as 'nan', '%+6.2f' as '+nan' and inf as '+inf' (never '-nan'); the per-cell path
        # prints 'NaN' / 'inf'.
        lines += [
            "    if 'n' in text:",  # a one-character search is a memchr: much cheaper than a replace
            "        text = text.replace('+nan', ' NaN').replace('nan', 'NaN')",
            "        if '+inf' in text: text = text.replace('+inf', ' inf')",
        ]
    lines.append("    return text")
    return lines


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


def explained(col: Col) -> bool:
    """Whether a legend has something to say of ``col``: a description, or a header that is not its key."""
    return bool(col.desc) or col.header.strip() != col.key


def legend(cols: Iterable[Col], title: str | None = "columns:", indent: int = 1) -> str:
    """One line per column that has a description: ``header  meaning``. Headers aligned for reading. A column
    without one whose header is not its key says its key (``gn  grad_norm``): what a short header stands for."""
    described = [c if c.desc else c.with_(desc=c.key) for c in cols if explained(c)]
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
