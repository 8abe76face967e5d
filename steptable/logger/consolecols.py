"""The columns as StepLogger prints them: each as narrow as the values it has shown, its header abbreviated to fit.

A declared width is a maximum, not a target: a column declared ``Col("completion_len_max", 18, ...)`` whose values
are 4 cells wide is printed 4 cells wide (each run of pad spaces is a token a reader pays for on every row). A
column starts as wide as its first value needs (a header of up to :data:`KEEP_HEADER` cells is never abbreviated,
so ``step`` and ``loss`` keep theirs; one that is the column's key is printed without its joins, ``tgen`` for
``t_gen``, over narrower values), and widens as later values need, up to its declared width
(:data:`steptable.table.columns.FIT_MAX` for a column declared without one). It narrows only where its notation is
chosen again with fewer cells, and then only under a header printed anyway (:meth:`ConsoleLayout.settle`). A
header wider than its column is abbreviated (``steptable.schemas.abbrev.abbreviations``: ``clm`` for
``completion_len_max``) and the legend names the key it stands for; once the column is as wide as its header, the
header is shown whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from steptable.schemas.abbrev import abbreviations
from steptable.schemas.arrange import fit
from steptable.schemas.headers import look
from steptable.table import render
from steptable.table.cells import invisible, key_name
from steptable.table.columns import FIT_MAX, Col
from steptable.table.formatting import (
    display_width,
    fill_digits,
    fmt_auto,
    format_value,
    numeric_pair,
    reads_zero,
    sanitize,
)
from steptable.table.notation import Notation, unit
from steptable.table.running import Running

#: the least room an abbreviation gets (``ent`` over ``.5``, not ``en``)
MIN_ABBREV = 3
#: a header this narrow is never abbreviated (``step``, ``loss``, a schema's ``rew_s`` read better than a shorter
#: one), only joined over narrower values (:func:`joined`: ``t_gen`` -> ``tgen``)
KEEP_HEADER = 5
#: rows a new printed layout is rendered cell by cell before its row renderer is compiled: a compile costs what
#: a few hundred rows of the compiled renderer save (GRPO's 19 columns: 2 ms against 6 us a row), and early in a run
#: the layout changes every few rows (widths settling, notations chosen)
COMPILE_AFTER = 128


def need(value: Any, fmt: str | None, most: int, notation: Notation | None = None, room: int = 0) -> int:
    """Cells ``value``'s text takes in a column of at most ``most`` cells: in the column's notation where it holds
    the value, else its 3-significant-digit form with the trailing zeros kept (.340, .00300), so that a column is as
    wide as its values' usual form from the start. A value that a fixed-point spec rounds to zero is written as its
    magnitude (steptable.table.formatting.reads_zero): in the ``room`` cells the column has where that shows it
    (``.0024`` in a ``+.2f`` column of 5 cells), so that a loss of .00238 does not widen the column and its header;
    so is one the notation's decimals would write as zero digits (:meth:`Notation.rounds_away`: ``3e-5``, not
    ``.0000``), in the fewest cells from ``room`` that show it."""
    if notation is not None and fmt is None and room > 0 and type(value) is float and notation.rounds_away(value):
        # a value the notation's decimals would write as zero digits (.0000): its magnitude in the fewest cells from
        # ``room`` that show it (3e-5 in a .0149 column), as a spec's zero below: no wider column, no header for it
        return next((w for w in range(room, most) if "#" not in format_value(value, None, w)), most)
    if notation is not None or fmt is not None:
        w = display_width(format_value(value, fmt, most, notation=notation))
        # only a value that would widen the column is asked whether the spec rounded it away (a float subclass by
        # its value, as formatting writes it: its own operators and __format__ are not asked)
        if w > room > 0 and fmt and fmt[-1:] in "fF%" and isinstance(value, float) and (f := float(value)) - f == 0:
            try:
                zero = reads_zero(f, format(f, fmt))
            except ValueError:  # (a spec that is not a float's: its text above is what it prints)
                zero = False
            # (where no form shows the magnitude in ``room``, the spec's own zero is written there: not that)
            if zero and "#" not in (text := format_value(f, fmt, room)) and not reads_zero(f, text):
                return display_width(text)
        return w
    if type(value) is float:
        text = fmt_auto(value)  # what the automatic format prints where it fits (ASCII)
        if len(text) <= most:
            return len(fill_digits(value, text, most))
    return display_width(format_value(value, fmt, most))


#: the underscores that join a short header's words, left out where the values are narrower (``tgen`` over
#: ``27.2``); not one between two digits (``r1_5`` must not read as ``r15``)
_JOINS = re.compile(r"_(?!\d)|(?<!\d)_")


def joined(header: str) -> str:
    """A short header as narrow as it reads the same: its words without the underscores that join them (``t_gen``
    -> ``tgen``, ``rew_s`` -> ``rews``); the header itself where none does, or where it is only underscores."""
    out = _JOINS.sub("", header)
    return out if out.strip() else header


def _short(c: Col) -> str:
    """The narrowest a short header (up to :data:`KEEP_HEADER` cells) is printed: joined where it is the column's
    key; a header chosen for the column (a schema's ``rew_s``) is its author's, kept whole."""
    return joined(c.header) if c.header == c.key else c.header


def _names(desc: str, key: str) -> bool:
    """Whether ``desc`` names ``key`` already, in parentheses as a schema's description of a family of keys does
    ("mean reward of one reward function (rewards/acc/mean)"): the legend then does not name it twice. A word of
    the description that is the key ("mean reward" for ``reward``) does not say which key the header stands for."""
    return f"({key})" in desc


def _least(fmt: str | None, first: Any, most: int) -> int:
    """Cells every value of a column will take, known from its spec and its first value (0: nothing known): a
    fixed spec's form of zero, the narrowest it writes a number (``+0.00`` for ``+.2f``: a first NaN or a missing
    first value does not start the column narrower than its numbers); ``d/d`` for a first fraction ``n/d`` of up to
    ``d`` (passes out of ``d`` rollouts grow to ``d``'s digits)."""
    if numeric_pair(first):
        try:  # (by value, as the cell is written: a subclass's own comparisons are not asked)
            n, d = float(first[0]), float(first[1])
        except (TypeError, ValueError, OverflowError):
            return 0
        return display_width(format_value((first[1], first[1]), fmt, most)) if 0 <= n <= d else 0
    if fmt and fmt[-1:] in "fFeEgG%":
        try:
            return display_width(format_value(0.0, fmt, most))
        except ValueError:
            return 0
    return 0


def _band(w: int) -> tuple[float, float]:
    """[lo, hi): magnitudes whose automatic-format text (3 significant digits, trailing zeros kept) takes at most
    ``w`` cells (.xyz, x.yz, xy.z and whole numbers of up to ``w`` digits for ``w`` >= 4; .0xyz from 5 cells...).
    Conservative: a value outside it is formatted to be measured. Empty (``lo == hi``) below 4 cells."""
    if w < 4:
        return 0.0, 0.0
    return max(10.0 ** (3 - w), 1e-4), min(10.0 ** w - 0.5, 999_999.5)


class ConsoleLayout:
    """The printed columns of a column set (``cols``), fitted to the rows as they arrive.

    Before the first row, ``cols`` are the declared columns. ``update(row)`` fits them and says whether their
    widths or headers changed (the header is due again); ``legend_cols`` are the columns for the legend, an
    abbreviated header's description naming its key. Each column of the automatic format writes its numbers in one
    notation, chosen from the values seen so far (steptable.table.notation.Running): ``cols`` is a new tuple
    whenever a notation or a width changed. A notation with a shared exponent is printed with it in the header
    (``lr e-8`` over ``100``): a change of it is a change of the header (``bare``: the columns without it, for a
    table that chooses its own notations). ``row(cells)`` renders a row in ``cols``: cell by cell while the layout is
    new, by ``steptable.table.render.compile_row`` once it has held :data:`COMPILE_AFTER` rows (the same text).

    ``room``: cells a printed row may take (None: every column is printed, however wide). At the first row the
    columns are kept in order while their printed widths fit it (``steptable.schemas.arrange.fit``: one that does not
    is skipped); where a column widens past it later, the same fit leaves out the columns that no longer fit. A
    column left out (its key in ``hidden``) is not printed again by this layout.
    """

    def __init__(self, declared: Sequence[Col], room: int | None = None) -> None:
        self.declared = tuple(declared)
        self.cols = self.declared
        self.room = room
        #: the keys of the columns left out to keep a row within ``room``
        self.hidden: frozenset[str] = frozenset()
        self._shown = set(range(len(self.declared)))  # the declared columns printed
        self._at = sorted(self._shown)  # the declared column of each of ``cols``
        #: ``cols`` without their notations, each header without a power of ten: for a table that chooses its own
        self.bare = self.declared
        self._changed = False  # the last _build changed a printed width or header
        self._most = [max(FIT_MAX, c.width) if c.fit else c.width for c in self.declared]
        #: (column, key, its running notation) of each automatic-format column
        self._runs = [(i, c.key, Running(self._most[i], scaled=True))
                      for i, c in enumerate(self.declared) if c.fmt is None]
        self._notes: list[Notation | None] = [None] * len(self.declared)
        #: per noted column, the (largest magnitude, negative) its width was last measured for
        self._reach: dict[int, tuple[float, bool]] = {}
        self._floor: list[int] = []
        self._outside: set[int] = set()
        self._runs_of = {i: running for i, _, running in self._runs}
        self._widths: list[int] = []
        self._short: list[str] = []  # each column's abbreviated header ("" where the header is kept whole)
        self._open: list[int] = []  # the columns not yet at their widest
        #: the columns whose notation now needs fewer cells than they are printed with (see :meth:`settle`)
        self._narrower: set[int] = set()
        #: (column, key, automatic format, band of positives, band of negatives' magnitudes)
        self._bands: list[tuple[int, str, bool, float, float, float, float]] = []
        self._compiled: Callable[[Mapping[str, Any]], str] | None = None
        self._held = 0  # rows rendered in ``cols`` since they last changed

    def row(self, cells: Mapping[str, Any]) -> str:
        """``cells`` as a printed row in ``cols``."""
        if self._compiled is not None:
            return self._compiled(cells)
        self._held += 1
        if self._held >= COMPILE_AFTER:
            self._compiled = render.compile_row(self.cols)
        return render.SEP.join(render.cells(self.cols, cells))

    def update(self, row: Mapping[str, Any]) -> bool:
        """Take ``row``'s values in (notations, widths); True when the printed widths or headers changed."""
        if not self._widths:
            self._see(row)
            self._start(row)
            return True
        widths = self._widths
        self._changed = False
        before = list(self._notes)
        noted = self._see(row)
        widened = False
        for i in noted:
            n = self._notes[i]
            if n is None:
                continue
            w = self._noted_width(i, n)
            if n != before[i]:
                # a notation chosen again (fewer decimals for a bigger value): the column is as wide as it needs,
                # narrower too, so that its first few values' notation leaves no padding for the rest of the run;
                # narrower only where a header is printed anyway (settle): a header costs more than a few pads
                w = max(w, self._floor[i])
                if w < widths[i]:
                    self._narrower.add(i)
            if w > widths[i]:
                widths[i] = w
                widened = True
        if not self._open:
            if noted or widened:
                self._reopen()
            return self._changed
        get = row.get
        notes = self._notes
        outside = self._outside
        for i, key, auto, lo, hi, nlo, nhi in self._bands:
            v = get(key)
            # the common cases without formatting: an automatic-format float within its width's band or its
            # column's notation (whose width follows the largest value seen), an int
            if v is None or (type(v) is int and -10 ** (widths[i] - 1) < v < 10 ** widths[i]):
                continue
            if type(v) is float and auto and (
                    (notes[i] is not None and v - v == 0 and i not in outside)
                    or lo <= v < hi or -nhi < v <= -nlo or v == 0.0):
                continue
            if (w := need(v, self.declared[i].fmt, self._most[i], notes[i], widths[i])) > widths[i]:
                widths[i] = w
                widened = True
        if widened or noted:
            self._reopen()
        return self._changed

    def settle(self) -> bool:
        """Print each column whose notation was chosen again with fewer cells (``.000721`` then ``.0103``) as narrow
        as its values now need; True when a width changed (``cols`` is then new). Called where a header is printed
        anyway (due by the cadence, or for a wider column): narrowing alone would cost a header."""
        if not self._narrower:
            return False
        narrowed = False
        for i in self._narrower:
            n = self._notes[i]
            if n is None:
                continue
            w = max(self._noted_width(i, n), self._floor[i])
            if w < self._widths[i]:
                self._widths[i] = w
                narrowed = True
        self._narrower.clear()
        if narrowed:
            self._reopen()
        return narrowed

    def _see(self, row: Mapping[str, Any]) -> list[int]:
        """Each automatic-format column's number of ``row`` taken into its notation; the columns whose notation, or
        the largest value its width was measured for, changed. ``_outside``: the columns whose number the notation
        does not hold (written on its own, measured as such)."""
        out = []
        get = row.get
        reach = self._reach
        outside = self._outside
        outside.clear()
        for i, key, running in self._runs:
            v = get(key)
            if type(v) is not float or v - v != 0:  # (nan - nan and inf - inf are nan)
                continue
            changed = running.see(v)
            if not running.held:
                outside.add(i)
            seen = running.seen
            if changed or reach.get(i) != (seen.biggest, seen.negative):
                n = running.notation
                note = self._notes[i] = None if n is None else n.in_header()
                old = reach.get(i)
                reach[i] = (seen.biggest, seen.negative)
                # a bigger value the notation and the width already hold (an epoch, a token count growing every
                # step) changes nothing printed: the layout is not rebuilt for it
                if (changed or old is None or old[1] != seen.negative or not self._widths or note is None
                        or self._noted_width(i, note) > self._widths[i]):
                    out.append(i)
        return out

    def _noted_width(self, i: int, n: Notation) -> int:
        """Cells the values seen in column ``i`` take in its notation ``n`` (the widest is the largest, with the
        sign where any was negative)."""
        seen = self._runs_of[i].seen
        return min(len(n.text(seen.biggest)) + seen.negative, self._most[i])

    def _reopen(self) -> None:
        """The columns still below their widest, each with the band of automatic-format floats that fit it."""
        self._open = [i for i, w in enumerate(self._widths) if w < self._most[i] and i in self._shown]
        self._bands = []
        for i in self._open:
            c, w = self.declared[i], self._widths[i]
            # a negative's sign takes one of the cells
            self._bands.append((i, c.key, c.fmt is None, *_band(w), *_band(w - 1)))
        self._build()

    def legend_cols(self) -> tuple[Col, ...]:
        """The declared columns, with the printed header, and the key named beside an abbreviation's meaning."""
        out = []
        for i, shown in zip(self._at, self.bare, strict=True):
            c = self.declared[i]
            if shown.header != c.header and shown.header.strip() != c.key:
                key = key_name(c.key)  # untrusted: a newline in it would split the legend line
                desc = c.desc if _names(c.desc, c.key) else f"{key}: {c.desc}" if c.desc else key
                out.append(c.with_(header=shown.header, desc=desc, width=shown.width))
            else:
                out.append(c)
        return tuple(out)

    def _start(self, row: Mapping[str, Any]) -> None:
        widths: list[int] = []
        notes = self._notes
        for c, most in zip(self.declared, self._most, strict=True):
            hw = display_width(c.header)
            # (a key with no visible character is headed by its escapes: no shorter text names it)
            floor = hw if invisible(sanitize(c.key)) else display_width(_short(c)) if hw <= KEEP_HEADER else 0
            least = _least(c.fmt, row.get(c.key), most)
            shown = need(row[c.key], c.fmt, most, notes[len(widths)], least) if c.key in row else 3  # "nan" till then
            shown = max(shown, least)
            n = notes[len(widths)]
            if n is not None:
                shown = max(shown, self._noted_width(len(widths), n))
            widths.append(min(most, max(shown, floor)))
        # an abbreviation reads like no other column's header: not even one shown whole only once it has widened;
        # short headers joined first (``tgen``), then the others abbreviated together (abbreviations: a form two
        # columns want, ``sm`` for score/max and score/min, goes to neither)
        taken = {look(c.header) for c in self.declared}
        short = [""] * len(widths)
        cut: list[int] = []
        for i, (c, w) in enumerate(zip(self.declared, widths, strict=True)):
            if display_width(c.header) <= w:
                continue
            if display_width(c.header) <= KEEP_HEADER and look(a := _short(c)) not in taken:
                short[i] = a
                taken.add(look(a))
            else:  # (a long header, or a short one joined that reads like another column's)
                cut.append(i)
        wanted = [(self.declared[i].header or self.declared[i].key, max(widths[i], MIN_ABBREV)) for i in cut]
        for i, a in zip(cut, abbreviations(wanted, taken), strict=True):
            short[i] = a
        for i, (c, a) in enumerate(zip(self.declared, short, strict=True)):
            if a and display_width(a) >= display_width(c.header):  # no shorter header told apart: the header whole
                short[i], widths[i] = "", display_width(c.header)
        self._short = short
        self._widths = [max(w, display_width(a)) for w, a in zip(widths, short, strict=True)]
        # the narrowest each column is printed: its header whole (up to KEEP_HEADER cells) or abbreviated
        self._floor = [max(display_width(c.header) if display_width(c.header) <= w else 0, display_width(a), 1)
                       for c, w, a in zip(self.declared, self._widths, short, strict=True)]
        self._reopen()

    def _build(self) -> None:
        before = [(c.width, c.header) for c in self.cols]
        self._make()
        if self.room is not None:
            kept = fit(self.cols, self.room)
            if len(kept) < len(self.cols):
                left = iter(kept)
                nxt = next(left, None)
                for at, c in zip(self._at, self.cols, strict=True):
                    if c is nxt:
                        nxt = next(left, None)
                    else:
                        self._shown.discard(at)
                self.hidden = frozenset(self.declared[i].key for i in range(len(self.declared))
                                        if i not in self._shown)
                # (a column left out costs nothing more: its notation and width are not followed)
                self._runs = [r for r in self._runs if r[0] in self._shown]
                self._open = [i for i in self._open if i in self._shown]
                self._bands = [b for b in self._bands if b[0] in self._shown]
                self._narrower &= self._shown
                self._make()
        self._compiled, self._held = None, 0  # (a new layout: cell by cell until it holds)
        # (a column widened under a wider header, lr e-8 over 2 digits then 3, prints as before: no header for it)
        self._changed = [(c.width, c.header) for c in self.cols] != before

    def _make(self) -> None:
        """``cols`` and ``bare`` from the widths, headers and notations of the columns shown."""
        cols, bare = [], []
        self._at = sorted(self._shown)
        for i in self._at:
            c, w, a, n = self.declared[i], self._widths[i], self._short[i], self._notes[i]
            header = c.header if display_width(c.header) <= w else a
            shown = unit(header, n)  # a scaled notation's power of ten after it: the column as wide as both
            w = max(w, display_width(shown))
            same = (w, shown, n) == (c.width, c.header, c.notation)
            cols.append(c if same else c.with_(width=w, header=shown, notation=n))
            if n is not None and n.scaled:  # (the width of its values with the exponent in each cell)
                w = max(self._noted_width(i, self._runs_of[i].notation or n), display_width(header))
            bare.append(c if (w, header) == (c.width, c.header) else c.with_(width=w, header=header))
        self.cols = tuple(cols)
        self.bare = tuple(bare)
