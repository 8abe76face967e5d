"""One number notation per column: fixed decimals, or one shared exponent, chosen from the column's range. Pure.

A column in the automatic format shows every value of it in one notation, so that magnitudes line up: a loss
column reads ``-.0300 -.0001 .0041`` (not ``-.03 -.00011 .00408``), a gradient norm ``1.0`` beside ``12.0`` (a
10x spike is a wider cell, not one changed digit), a learning rate ``.20e-6`` beside ``1.00e-6``.

- The notation is chosen from the largest finite magnitude (``biggest``): 3 significant digits for it (the
  automatic format's cap; the width is a maximum, not a target), fewer where the column is narrower or its values
  have fewer (``2.5``, ``.25``, whole numbers ``1451``). Positional between 1e-4 and 1e6, one shared exponent
  outside.
- Smaller values show fewer significant digits in the same notation (``.0001`` for 5.5e-5 among hundredths); a
  non-zero value that would round away (``.0000``, ``-.000``: zero digits) is outside it, written on its own
  (``3e-6``); zero is ``0``. (The console's header exponent writes such a value ``+0`` / ``-0``: see ``scaled``.)
- A notation holds for magnitudes below its ``top`` (where the biggest value's decade ends): a value at or above it,
  or one with more decimal places than a column of exact values had, is outside it and the notation is chosen
  again (:meth:`Notation.holds`).
- A reader with every value (``tail``, the watch app, table.txt) chooses from them all (:func:`of_values`), its
  largest 1% (a spike) left out: such a value is written on its own; the live logger cannot look ahead and
  chooses from the values seen so far (steptable.table.running), a lone value past the top (one in a hundred) left
  out, unless the unit in the column's header writes it (an lr warmup's ``10`` under ``lr e-8``: a schedule grows).
  A column whose newest values decayed by decades is chosen for from those values, by both (:data:`LOW_RUN`).
- The console logger writes a shared exponent once, in the column's header (:meth:`Notation.in_header`, :func:`unit`:
  ``100`` under ``lr e-8``); readers that show a whole table keep it in each cell.
NaN, inf and text are not numbers of the notation: they show as the automatic format shows them.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

#: the largest magnitude shown positionally (the automatic format's own band: 1e-4 <= |x| < 999999.5)
POSITIONAL_TOP = 999_999.5
POSITIONAL_LOW = 1e-4
#: significant digits the largest value of a column shows
DIGITS = 3
#: consecutive values shown with at most one significant digit after which a column's notation is chosen again
#: from them (a loss that decayed by decades); a column that merely crosses zero never has that many
LOW_RUN = 20


def strip_zero(s: str) -> str:
    """'0.412' -> '.412', '-0.412' -> '-.412' (a leading zero costs a token and a cell)."""
    if s.startswith("0.") and len(s) > 2:
        return s[1:]
    if s.startswith("-0.") and len(s) > 3:
        return "-" + s[2:]
    return s


#: decimal places measured (a value needing more is as good as "any number of them")
PLACES_MAX = 12


def places_of(x: float, start: int = 0) -> int:
    """The fewest decimal places (from ``start``) that write ``x`` exactly, as far as a float32 metric or
    0.1 + 0.2 can be (0.25 -> 2, 3.0 -> 0); :data:`PLACES_MAX` for a value that needs more."""
    for k in range(start, PLACES_MAX):
        if abs(round(x, k) - x) <= 1e-7 * abs(x):
            return k
    return PLACES_MAX


@dataclass(frozen=True)
class Notation:
    """How every number of one column is written.

    decimals  digits after the point (of the mantissa, with ``exp``)
    exp       the shared exponent (cells read ``1.20e-6``), or None for positional numbers
    top       magnitudes from here up are outside the notation (a 4th significant digit, a wider cell)
    exact     the decimals are the column's values' own (2.5, .25: never more digits than the values have), fewer
              than its top allows: a value with more places is outside the notation
    scaled    (see :meth:`in_header`) cells are whole numbers of ``10 ** exp``, the exponent written once, in the
              header; a non-zero value that rounds to none of them is ``+0`` / ``-0`` (zero is ``0``)
    """

    decimals: int
    exp: int | None = None
    top: float = POSITIONAL_TOP
    exact: bool = False
    #: the shared power of ten is the column's (shown in its header, :func:`unit`): cells are whole numbers
    scaled: bool = False

    def holds(self, x: float) -> bool:
        """Whether the finite number ``x`` is inside the notation (NaN and inf never are): below its top, not a
        non-zero magnitude below :meth:`half` (but for ``scaled``: ``+0``), and for ``exact``, with no more places
        than its decimals."""
        if not -self.top < x < self.top:
            return False
        if not self.scaled and 0 < abs(x) <= self.half():
            return False  # '0', '.000' or '0e9' would read as a true zero: such a value is written on its own (.5)
        return not self.exact or places_of(x, 0) <= self.decimals - (self.exp or 0)

    def rounds_away(self, x: float) -> bool:
        """Whether the finite ``x`` is outside the notation only because its fixed decimals would write it as zero
        digits (``.0000`` for 3e-6). Written on its own, such a value still counts as a low value of the notation
        (steptable.table.running), and the console writes it in the cells its column has
        (steptable.logger.consolecols). False under whole numbers, an exponent or exact values: outside those, it is
        as any other value outside them."""
        return self.exp is None and self.decimals > 0 and not self.exact and 0 < abs(x) <= self.half()

    def text(self, x: float) -> str:
        """``x`` (finite) in this notation, no leading zero: ``.041``, ``-.000``, ``12.0``, ``.20e-6``; 0 is ``0``."""
        if x == 0:
            return "0"
        if self.exp is None:
            return strip_zero(f"{x:.{self.decimals}f}")
        if self.scaled:
            whole = f"{_scale(x, self.exp):.0f}"
            return whole if whole.strip("-") != "0" else ("-0" if x < 0 else "+0")
        return f"{strip_zero(f'{_scale(x, self.exp):.{self.decimals}f}')}e{self.exp}"

    def in_header(self) -> Notation:
        """This notation with its shared exponent moved to the column's header (:func:`unit`): the same values held,
        each cell the whole number of its mantissa's digits (``100`` under ``lr e-8``, not ``1.00e-6`` in every
        cell: 2 tokens a cell instead of 7). A positional notation is returned as it is."""
        if self.exp is None or self.scaled:
            return self
        return Notation(0, self.exp - self.decimals, self.top, self.exact, scaled=True)

    def half(self) -> float:
        """Magnitudes up to this may round to zero: half the last digit, and a hair more (a double at the half, or
        its mantissa scaled by a division, rounds either way: ``f"{5e-7:.6f}"`` is ``0.000000``)."""
        return 0.5 * pow10((self.exp or 0) - self.decimals) * (1 + 1e-9)

    def low(self) -> float:
        """Magnitudes below this show at most one significant digit."""
        return pow10((self.exp or 0) + 1 - self.decimals)


def unit(header: str, n: Notation | None) -> str:
    """``header`` as a column of notation ``n`` shows it: with the power of ten of a scaled notation after it
    (``lr e-8``: a cell ``100`` reads 100e-8)."""
    return f"{header} e{n.exp}" if n is not None and n.scaled else header


def pow10(e: int) -> float:
    """10 ** ``e`` as a float: inf past the largest double (a column holding 1e308), 0 below the smallest."""
    try:
        return 10.0**e
    except OverflowError:
        return math.inf


def _rounds_up(e: int, last: int) -> float:
    """The least magnitude whose text with its last digit at ``10 ** last`` reads ``10 ** e`` (a digit more): a
    hair under the exact half, so that a double at it (9.5e-11, 10e-11 at no decimals) counts as rounding up."""
    return (pow10(e) - 0.5 * pow10(last)) * (1 - 1e-12)


def _scale(x: float, e: int) -> float:
    """``x`` / 10 ** ``e`` for any decade a double has (5e-324's -324 too: 10 ** -324 alone is 0)."""
    if -300 <= e <= 300:
        return x / 10.0**e
    h = e // 2
    return x / 10.0**h / 10.0 ** (e - h)


def _decade(x: float) -> int:
    """The decade of ``x`` (> 0) after rounding to :data:`DIGITS` significant digits (9.996 is in 10's)."""
    d = math.floor(math.log10(x))
    if round(_scale(x, d), DIGITS - 1) >= 10:
        d += 1
    return d


def choose(biggest: float, width: int, negative: bool = False, places: int = PLACES_MAX,
           scaled: bool = False) -> Notation | None:
    """The notation for a column whose largest magnitude is ``biggest`` and whose values need at most ``places``
    decimal places, in at most ``width`` cells (a sign cell more where ``negative``). With ``scaled``, a shared
    exponent's cells are measured as :meth:`Notation.in_header` writes them (``990`` under ``lr e-9``, 3 cells, not
    ``9.90e-7``'s 7), so that a narrow column keeps its digits. The notation holds ``biggest`` and writes at least
    one digit of it in ``width`` cells (a value that would round into the next decade is chosen for as that decade:
    .00099 as .0010). None where no number needs one (only zeros) or none fits."""
    if not (biggest > 0 and math.isfinite(biggest)):
        return None
    sign = 1 if negative else 0
    d = _decade(biggest)
    if POSITIONAL_LOW <= 10.0**d < POSITIONAL_TOP:  # (its decade as rounded: a float32 1e-4 is in 1e-4's)
        cap = max(DIGITS - 1 - d, 0)
        ints = max(d + 1, 0)  # digits before the point (none for .0xyz)
        for dec in range(min(cap, places), -1, -1):
            if dec + d < 0:
                break  # the biggest would show no digit of its own ('.00' for .0001): the exponent form instead
            if sign + ints + (dec + 1 if dec else 0) <= width:
                if biggest >= _rounds_up(d + 1, -dec):  # written as the next decade (.00099 as .0010)
                    return choose(pow10(d + 1), width, negative, places, scaled)
                # (the top: where a value's text would round up into the next decade, a 4th digit)
                top = _rounds_up(d + 1, -dec) if cap > 0 else POSITIONAL_TOP
                return Notation(dec, None, top, dec == places < cap)
    mantissa = DIGITS - 1 if d >= 0 else min(DIGITS - 1, max(places + d, 0))
    for dec in range(mantissa, -1, -1):
        cells = sign + 1 + dec if scaled else sign + 1 + (dec + 1 if dec else 0) + len(f"e{d}")
        if cells <= width:
            top = _rounds_up(d + 1, d - dec)
            if biggest >= top:  # (9.96 at no decimals is 1e1: the next decade's)
                return choose(pow10(d + 1), width, negative, places, scaled)
            return Notation(dec, d, top, dec == mantissa < DIGITS - 1)
    return None


@dataclass
class Range:
    """What a notation is chosen from: the largest finite magnitude, whether any value is negative, the most
    decimal places a value needs."""

    biggest: float = 0.0
    negative: bool = False
    places: int = 0
    floats: bool = False  # a float was taken in (a column of integers alone has no notation: they show whole)
    _cap: int = PLACES_MAX

    def take(self, v: Any) -> None:
        """Take a cell's raw value in: a finite float, or an integer of a column that also holds floats (the
        notation writes those too); anything else (NaN, inf, text, bools, pairs) is not a number of it."""
        if type(v) is float:
            if v - v == 0:  # (nan - nan and inf - inf are nan)
                self.add(v)
                self.floats = True
        elif type(v) is int and -(2**53) < v < 2**53:
            self.add(float(v))

    def add(self, x: float) -> None:
        """Take the finite number ``x`` in."""
        ax = abs(x)
        if ax > self.biggest:
            self.biggest = ax
            self._cap = DIGITS - 1 - _decade(ax)  # the most places 3 significant digits of it show
        if x < 0:
            self.negative = True
        # past the cap the values' own places no longer matter (the biggest only grows): measurements get there at
        # their first value, and are not measured again
        if self.places <= self._cap:
            self.places = places_of(x, self.places)

    def notation(self, width: int, scaled: bool = False) -> Notation | None:
        """The notation of the numbers taken in, ``width`` cells wide (``scaled``: see :func:`choose`); None without
        a float."""
        return choose(self.biggest, width, self.negative, self.places, scaled) if self.floats else None


#: a whole column's notation leaves out its largest values up to this share (at least OUTLIERS_FROM values): a
#: single spike of 1000 among losses of .5 is written on its own ("1000"), not every other value as "1" or "0"
OUTLIER_SHARE = 0.01
OUTLIERS_FROM = 100


class Column(Range):
    """The range of a whole column, as a reader that has every value sees it: its largest magnitudes up to
    :data:`OUTLIER_SHARE` of them (a spike) left out of ``biggest``; a value the notation then does not hold is
    written on its own, wider (the spike still reads as bigger).

    A column whose newest values decayed by decades is read as the live logger reads it (steptable.table.running,
    :data:`LOW_RUN`): where the last :data:`LOW_RUN` values or more of each run taken in (each ``take_all`` call is
    one run; values taken one by one are one run) would all show at most one significant digit, the notation is
    chosen from those values (``.0623``, not ``.06`` beside a first row's ``2.32``); the earlier, bigger ones are
    then written on their own."""

    def __init__(self) -> None:
        super().__init__()
        self.magnitudes = array("d")
        self._ends: list[int] = []  # where each run taken in by take_all ends in ``magnitudes``

    def add(self, x: float) -> None:
        super().add(x)
        self.magnitudes.append(abs(x))

    def take_all(self, values: Iterable[Any]) -> None:
        """``take`` each of ``values`` in turn, with the same outcome; a float array (a store's numeric column) in
        bulk: the values' own places are measured one by one only until the cap stops them (see ``Range.add``),
        the rest is the magnitudes, the sign and the largest of them."""
        self._take_all(values)
        if len(self.magnitudes) > (self._ends[-1] if self._ends else 0):
            self._ends.append(len(self.magnitudes))

    def _take_all(self, values: Iterable[Any]) -> None:
        if not (isinstance(values, array) and values.typecode == "d"):
            for v in values:
                self.take(v)
            return
        total = sum(values)
        # (a finite sum: every value is finite; nan - nan and inf - inf are nan)
        finite = values if total - total == 0 else [v for v in values if v - v == 0]
        if not finite:
            return
        self.floats = True
        i = 0
        for i, x in enumerate(finite):  # noqa: B007  (i: where the places stopped mattering)
            if self.places > self._cap:
                break  # the cap only falls as the biggest grows: no later value changes the places
            Range.add(self, x)
            self.magnitudes.append(abs(x))
        else:
            return
        rest = list(map(abs, finite[i:]))
        self.magnitudes.extend(rest)
        top = max(rest)
        if top > self.biggest:
            self.biggest = top
            self._cap = DIGITS - 1 - _decade(top)
        if not self.negative and min(finite[i:]) < 0:
            self.negative = True

    def notation(self, width: int, scaled: bool = False) -> Notation | None:
        n = len(self.magnitudes)
        if n >= OUTLIERS_FROM:
            self.biggest = heapq.nlargest(int(n * OUTLIER_SHARE) + 1, self.magnitudes)[-1]
        out = super().notation(width, scaled)
        ends = [0, *self._ends] if self._ends and self._ends[-1] == n else [0, *self._ends, n]
        runs = [(a, b) for a, b in pairwise(ends) if b > a]
        while out is not None and runs:
            low, mags = out.low(), self.magnitudes
            recent = []
            for a, b in runs:  # each run's newest values that show at most one significant digit
                i = b
                while i > a and 0 < mags[i - 1] < low:
                    i -= 1
                recent.append((i, b))
            if any(b - i < LOW_RUN for i, b in recent) or recent == runs:
                break
            runs = recent
            again = Range(max(max(mags[i:b]) for i, b in runs), self.negative, self.places, True)
            chosen = again.notation(width, scaled)
            if chosen is None:
                break  # (no form of those values in the width: the notation stays)
            out = chosen
        return out


def of_values(values: Iterable[Any], width: int) -> Notation | None:
    """The notation of a column holding ``values`` (all of them, as a reader of a whole file has), ``width``
    cells wide (see :meth:`Range.take`, :class:`Column`)."""
    r = Column()
    r.take_all(values)
    return r.notation(width)
