"""The column registry: one declarative ``Col`` per metric, shared by every place a row is shown. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from steptable.table.formatting import display_width, format_value, sanitize
from steptable.table.notation import Column, Notation

Better = Literal["higher", "lower"]
Align = Literal["right", "left", "center"]

_FMT_KINDS = ("frac",)


#: the widest column, and the largest width or precision inside a format spec: beyond these a spec from a user's
#: schema file would only cost memory (``format(1.5, ">999999999")`` builds a gigabyte string)
MAX_WIDTH = 1000


def aligned_width(cells: Iterable[str]) -> int:
    """The width a column of aligned text pads its cells to: its widest cell's, at most MAX_WIDTH (0 for none). A
    wider cell (a key of a megabyte) stands out on its own line instead of padding every other line to its width:
    the text stays linear in its cells."""
    return min(max(map(display_width, cells), default=0), MAX_WIDTH)


class _Fit(int):
    """The type of :data:`FIT`: a width left out is told apart from any width given (a -1 or a 0 from a schema
    file is still an error)."""


#: ``Col(key)`` without a width: the column is fitted to its values as rows arrive (StepLogger), widening only
FIT: int = _Fit(0)
#: the widest a fitted column grows (a long text value is cut with an ellipsis past it)
FIT_MAX = 24
MAX_SPEC_NUMBER = 200
_SPEC_NUMBERS = re.compile(r"\d+")


class ColumnError(ValueError):
    """A column or column set that cannot be rendered as declared. ``field``: the field at fault, when one is."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def check_fmt(fmt: str | None, what: str) -> None:
    """Raise ColumnError unless ``fmt`` is None, a kind steptable knows, or a format spec a number can take."""
    if fmt is None or fmt in _FMT_KINDS:
        return
    if not isinstance(fmt, str):
        raise ColumnError(f"{what}: fmt must be text, got {fmt!r}", "fmt")
    if len(fmt) > 1 and fmt[1] in "<>=^" and not (fmt[0].isprintable() and display_width(fmt[0]) == 1):
        # the fill character reaches every cell: an ESC there would drive the terminal (a file's column set is
        # untrusted text)
        raise ColumnError(f"{what}: bad format spec {fmt!r}: the fill character must be one printable cell", "fmt")
    if any(int(n) > MAX_SPEC_NUMBER for n in _SPEC_NUMBERS.findall(fmt)):
        raise ColumnError(f"{what}: bad format spec {fmt!r}: a width or precision over {MAX_SPEC_NUMBER}", "fmt")
    try:
        format(1.5 if not fmt.endswith("d") else 1, fmt)
    except (ValueError, TypeError) as e:
        raise ColumnError(f"{what}: bad format spec {fmt!r}: {e}", "fmt") from None


@dataclass(frozen=True)
class Col:
    """One column of the step table.

    key     the metric's key in the raw row (``"actor/pg_loss"``)
    width   display cells of the column (the separator is not counted); left out (:data:`FIT`), the column starts
            as wide as its header and StepLogger widens it to the values as rows arrive (``fit`` is then True)
    header  text over the column; must fit ``width``; left out (``""``) with the width, the key
    fmt     a Python format spec (``"+.2f"``, ``".1e"``, ``"d"``), ``"frac"`` for (n, d) pairs, or None for the
            compact automatic number format (at most 3 significant digits: the width is a maximum, not a target)
    desc    the one-line meaning shown in the legend
    better  ``"higher"`` / ``"lower"`` when a direction is good for this metric (colouring, alerts), else None
    align   ``"right"`` (numbers, default), ``"left"`` or ``"center"``
    stream  False keeps the column out of the per-step stdout row; it is still written to JSONL and shown in
            table.txt and the end-of-run dump (timings, for instance)
    notation  the one notation the automatic format writes this column's numbers in (steptable.table.notation),
            set by whoever sees the column's values (a reader, the live logger); None: each value on its own
    """

    key: str
    width: int = FIT
    header: str = ""
    fmt: str | None = None
    desc: str = ""
    better: Better | None = None
    align: Align = "right"
    stream: bool = True
    aliases: tuple[str, ...] = field(default=())
    fit: bool = False  # the width was left out: fitted to the values as rows arrive
    notation: Notation | None = None

    def __post_init__(self) -> None:
        if not self.key:
            raise ColumnError("a column needs a non-empty key", "key")
        if type(self.width) is _Fit:
            if not self.header and isinstance(self.key, str):
                object.__setattr__(self, "header", sanitize(self.key))
            object.__setattr__(self, "fit", True)
            object.__setattr__(self, "width", min(max(display_width(sanitize(str(self.header))), 1), MAX_WIDTH))
        if not isinstance(self.width, int) or isinstance(self.width, bool) or not 1 <= self.width <= MAX_WIDTH:
            raise ColumnError(f"column {self.key!r}: width must be an int from 1 to {MAX_WIDTH}, got {self.width!r}",
                              "width")
        if not isinstance(self.header, str):
            raise ColumnError(f"column {self.key!r}: header must be text, got {self.header!r}", "header")
        clean = sanitize(self.header)  # a header from a TOML file beside the logs is untrusted text
        if clean != self.header:
            object.__setattr__(self, "header", clean)
        hw = display_width(self.header)
        if hw > self.width:
            raise ColumnError(
                f"column {self.key!r}: header {self.header!r} is {hw} cells wide, wider than its width {self.width}",
                "header",
            )
        if self.better not in (None, "higher", "lower"):
            raise ColumnError(f"column {self.key!r}: better must be 'higher', 'lower' or None, got {self.better!r}",
                              "better")
        if self.align not in ("right", "left", "center"):
            raise ColumnError(f"column {self.key!r}: align must be right, left or center, got {self.align!r}",
                              "align")
        check_fmt(self.fmt, f"column {self.key!r}")
        if "\n" in self.desc:
            raise ColumnError(f"column {self.key!r}: the description must be one line", "desc")

    def with_(self, **changes: object) -> Col:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def validate(cols: Iterable[Col]) -> tuple[Col, ...]:
    """Check a column set: no duplicate key, no duplicate header. Returns it as a tuple."""
    out = tuple(cols)
    seen: dict[str, int] = {}
    headers: dict[str, str] = {}
    for i, c in enumerate(out):
        if not isinstance(c, Col):
            raise ColumnError(f"column #{i} is {type(c).__name__}, not Col")
        if c.key in seen:
            raise ColumnError(f"duplicate column key {c.key!r} (positions {seen[c.key]} and {i})")
        seen[c.key] = i
        h = c.header.strip()
        if h and h in headers:
            raise ColumnError(f"columns {headers[h]!r} and {c.key!r} share the header {h!r}")
        headers[h] = c.key
    return out


def fit_to(cols: Sequence[Col], values: Mapping[str, object]) -> tuple[Col, ...] | None:
    """``cols`` with each fitted column (``fit``) widened to the natural text of its value in ``values`` (up to
    :data:`FIT_MAX`), or None when every value fits already. Widths only grow: a table's columns do not jump back."""
    out: list[Col] | None = None
    for i, c in enumerate(cols):
        if not c.fit or c.key not in values:
            continue
        need = min(display_width(format_value(values[c.key], c.fmt, FIT_MAX, fill=False)), FIT_MAX)
        if need > c.width:
            if out is None:
                out = list(cols)
            out[i] = c.with_(width=need)
    return None if out is None else tuple(out)


def with_notations(cols: Sequence[Col], rows: Iterable[Mapping[str, Any]]) -> tuple[Col, ...]:
    """``cols`` with each automatic-format column's notation chosen from its values in ``rows`` (all of them: a
    table printed whole, by a reader that has every row; see steptable.table.notation)."""
    ranges = {i: (c.key, Column()) for i, c in enumerate(cols) if c.fmt is None}
    for r in rows:  # (one pass: table.txt streams a whole run's rows through here)
        get = r.get
        for key, seen in ranges.values():
            seen.take(get(key))
    return tuple(c.with_(notation=ranges[i][1].notation(c.width)) if i in ranges else c for i, c in enumerate(cols))


def streamed(cols: Sequence[Col]) -> tuple[Col, ...]:
    """The columns printed per step (``stream=True``)."""
    return tuple(c for c in cols if c.stream)


def select(cols: Sequence[Col], patterns: Sequence[str]) -> tuple[Col, ...]:
    """Columns whose key or header matches any glob pattern (``fnmatch``), in registry order. ``step`` is kept."""
    from fnmatch import fnmatchcase

    pats = [p.strip() for p in patterns if p.strip()]
    if not pats:
        return tuple(cols)
    return tuple(
        c
        for c in cols
        if c.key == "step" or any(fnmatchcase(c.key, p) or fnmatchcase(c.header.strip(), p) for p in pats)
    )
