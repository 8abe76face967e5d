"""Column widths and notations against the values a run brings: the narrowest form of a value, the columns a live
run's new rows outgrew, the layout widened for them, each column's number notation. Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from steptable.table.columns import Col
from steptable.table.formatting import fmt_auto, format_value
from steptable.table.notation import LOW_RUN, Column, of_values


def narrowest(value: Any, fmt: str | None, start: int = 1, limit: int = 12) -> int:
    """The fewest cells (from ``start``, at most ``limit``) in which ``value`` has a form other than ``####``."""
    for width in range(max(start, 1), limit):
        if "#" not in format_value(value, fmt, width, fill=False):
            return width
    return limit


class RowView(Protocol):
    def value(self, i: int, key: str) -> Any: ...


#: rows of a newly seen run checked for values wider than the layout's columns (:func:`first_look`)
FIRST_LOOK = 20


class Spread:
    """``count`` rows spread evenly over a run's first ``n`` (the last one included), as rows 0..count-1."""

    def __init__(self, run: RowView, n: int, count: int = FIRST_LOOK) -> None:
        self.run = run
        k = min(n, count)
        self.rows = [(n - 1) * j // max(k - 1, 1) for j in range(k)]

    def value(self, i: int, key: str) -> Any:
        return self.run.value(self.rows[i], key)


def first_look(cols: Sequence[Col], run: RowView, n: int) -> dict[str, int]:
    """:func:`cells_outgrown` of a run seen for the first time (its first ``n`` rows): ``FIRST_LOOK`` rows across
    it, as a layout samples them, so that the watch app and a one-shot ``tail`` widen the same columns and show a
    value with the same digits. Not all of its rows: a new arm with many keys costs a bounded number of formatted
    cells."""
    sample = Spread(run, n)
    return cells_outgrown(cols, sample, 0, len(sample.rows))


#: the newest rows a live column's drift is measured over (:func:`cells_outgrown`), whatever rows a read brought:
#: a live run's rows come one or two a read
DRIFT_ROWS = 20


def cells_outgrown(cols: Sequence[Col], run: RowView, start: int, stop: int) -> dict[str, int]:
    """Columns of the automatic format that rows ``[start, stop)`` of ``run`` outgrew: a number with no form in its
    column (``####``) or an integer wider than it (shown in a compact form, it would lose digits), or floats that
    drifted out of its measure (a loss from .5 to .0125: see :func:`_drift`). Key -> the cells the widest such
    value needs. A live run meets values its first rows never had (a loss of -1.2e-05, a token count past 1e8): the
    layout is made again for them."""
    out: dict[str, int] = {}
    for c in cols:
        if c.fmt is not None and c.fmt != "frac":
            continue  # a declared format: its width is part of the declaration
        short = False  # a finite float of these rows is shown with fewer than its 3 significant digits
        for i in range(start, stop):
            v = run.value(i, c.key)
            if v is None or isinstance(v, (str, bool)):
                continue
            if isinstance(v, int):
                need = len(str(v)) if abs(v) < 10**20 else c.width
            elif "#" in format_value(v, c.fmt, c.width, fill=False):
                need = narrowest(v, c.fmt, c.width + 1)
            else:
                short = short or (c.fmt is None and isinstance(v, float) and math.isfinite(v)
                                  and len(fmt_auto(v)) > c.width)
                continue
            if need > c.width:
                out[c.key] = max(out.get(c.key, 0), need)
        if short and (need := _drift(c, run, min(start, max(0, stop - DRIFT_ROWS)), stop)) > c.width:
            out[c.key] = max(out.get(c.key, 0), need)
    return out


def _drift(c: Col, run: RowView, start: int, stop: int) -> int:
    """Values that drifted out of ``c``'s measure in rows ``[start, stop)``: where more than a tenth of its finite
    floats lose digits, the width nine in ten of them need (as a layout measures a column); else 0. The rows are a
    read's new ones or the newest :data:`DRIFT_ROWS`, whichever are more."""
    floats = 0
    natural: list[int] = []
    for i in range(start, stop):
        v = run.value(i, c.key)
        if isinstance(v, float) and math.isfinite(v) and "#" not in format_value(v, c.fmt, c.width, fill=False):
            floats += 1
            if (n := len(fmt_auto(v))) > c.width:
                natural.append(n)
    if len(natural) > 1 and len(natural) * 10 > floats:
        natural.sort()
        return natural[max(len(natural) - 1 - floats // 10, 0)]
    return 0


def widened(cols: Sequence[Col], need: Mapping[str, int], limit: int = 12) -> tuple[Col, ...]:
    """``cols`` with each automatic-format column in ``need`` at least that wide (at most ``limit`` cells): room
    for values :func:`cells_outgrown` found, which the layout's sample of rows may not have held."""
    return tuple(
        c.with_(width=min(need[c.key], limit))
        if c.key in need and c.width < min(need[c.key], limit) and (c.fmt is None or c.fmt == "frac")
        else c
        for c in cols
    )


class ColumnView(Protocol):
    def column(self, key: str) -> Sequence[Any]: ...


#: a column's notation is chosen from each run's newest rows, this many (a layout made again for a new row of ten
#: runs of 200,000 rows must not read 2 million values per column)
NOTED_ROWS = 1000


def noted(cols: Sequence[Col], runs: Sequence[ColumnView]) -> tuple[Col, ...]:
    """``cols`` with each automatic-format column's notation chosen from the values the ``runs`` hold of it in
    their newest :data:`NOTED_ROWS` rows (the one notation `tail` and the watch app write its numbers in:
    steptable.table.notation; a value outside it is written on its own). A derived column, whose values no run
    holds, keeps none: each of its values is written on its own. (A store's numeric column holds its integers as
    floats; a column of integers alone is left out by ``is_integer``.)"""
    out = []
    for c in cols:
        if c.fmt is not None:
            out.append(c)
            continue
        seen = Column()
        for r in runs:
            is_integer = getattr(r, "is_integer", None)
            if is_integer is not None and is_integer(c.key):
                continue  # its rows give ints: they show whole, in no notation of this run's making
            seen.take_all(_newest(r, c.key))
        out.append(c.with_(notation=seen.notation(c.width)))
    return tuple(out)


def _newest(run: ColumnView, key: str) -> Sequence[Any]:
    """``run``'s newest :data:`NOTED_ROWS` values of ``key`` (only those copied where the run can)."""
    between = getattr(run, "column_between", None)
    return between(key, -NOTED_ROWS) if between is not None else run.column(key)[-NOTED_ROWS:]


def notation_left(cols: Sequence[Col], run: RowView, start: int, stop: int,
                  extremes: dict[str, float] | None = None, lows: dict[str, int] | None = None) -> bool:
    """Rows ``[start, stop)`` of ``run`` (a live run's new rows) hold a number too big for its column's notation,
    or end a run of :data:`LOW_RUN` numbers that show at most one significant digit in it (a loss that decayed by
    decades): the notation is to be chosen again. ``extremes`` (the caller's, one per run): the largest magnitude
    each column held when last asked; with it, only a number past that asks again (the notation leaves a column's
    top 1% out on purpose). ``lows`` (the caller's, one per run; without it a decay does not ask): the columns
    whose run of such numbers was asked about, asked again only once a bigger number has broken it. Where ``run``'s
    newest rows alone give the column the notation it has, nothing is asked (a column shared with runs that did not
    decay keeps theirs). A number the notation does not hold for another reason (more decimal places than its
    exact values, a magnitude that would round to zero) is written on its own and asks nothing: a clock column's
    every new value is such a one, and asking would lay the runs out again at every row."""
    for c in cols:
        n = c.notation
        if c.fmt is not None or n is None:
            continue
        low, fell, broke = n.low(), False, False
        for i in range(start, stop):
            v = run.value(i, c.key)
            if type(v) is not float or v - v != 0:
                continue
            if abs(v) >= n.top:
                if extremes is None:
                    return True
                top = extremes.get(c.key)
                if top is None:
                    top = extremes[c.key] = _largest(run, c.key, start)
                if abs(v) > top:
                    extremes[c.key] = abs(v)
                    if not _same_notation(run, c, stop):
                        return True
            if 0 < abs(v) < low:
                fell = True
            else:
                broke = True
        if lows is None:
            continue
        if broke:
            lows.pop(c.key, None)  # (the run of low numbers broken: a new one may ask)
        if fell and c.key not in lows and _decayed(run, c.key, stop, low):
            lows[c.key] = stop
            if not _same_notation(run, c, stop):
                return True
    return False


def _decayed(run: RowView, key: str, stop: int, low: float) -> bool:
    """Whether ``run``'s newest :data:`LOW_RUN` numbers of ``key`` before ``stop`` are all below ``low``, none 0."""
    column = getattr(run, "column", None)
    newest = (column(key)[max(0, stop - LOW_RUN):stop] if column is not None else
              [run.value(i, key) for i in range(max(0, stop - LOW_RUN), stop)])
    return len(newest) == LOW_RUN and all(type(v) is float and 0 < abs(v) < low for v in newest)


def _same_notation(run: RowView, c: Col, stop: int) -> bool:
    """Whether ``run``'s newest rows up to ``stop`` alone give ``c`` the notation it has (a new largest value in a
    column whose top 1% its notation leaves out mostly does: the runs are then not laid out again for it)."""
    column = getattr(run, "column", None)
    if column is None:
        return False
    return of_values(column(c.key)[max(0, stop - NOTED_ROWS):stop], c.width) == c.notation


def _largest(run: RowView, key: str, stop: int) -> float:
    """The largest finite magnitude of ``key`` in ``run``'s rows before ``stop``."""
    column = getattr(run, "column", None)
    values = column(key)[:stop] if column is not None else [run.value(i, key) for i in range(stop)]
    return max((abs(v) for v in values if type(v) is float and v - v == 0), default=0.0)
