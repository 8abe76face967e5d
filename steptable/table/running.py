"""The live logger's notation of a column: chosen from the values seen so far, since it cannot look ahead
(steptable.table.notation has the notation itself and the readers' choice from a whole column). Pure."""

from __future__ import annotations

import math

from steptable.table.notation import DIGITS, LOW_RUN, OUTLIER_SHARE, Notation, Range, pow10

#: values of an exact column the live logger remembers as held by its notation (lengths, fractions of a batch)
KNOWN_MAX = 256
#: the live logger's spike (:class:`Running`): a value past its notation's top with no other in this many values
#: before it, the readers' share of a column left out (one in a hundred)
SPIKE_APART = round(1 / OUTLIER_SHARE)


class Running:
    """A column's notation from the values seen so far (the live logger: it cannot look ahead).

    Chosen at the first number; kept while values stay inside it; chosen again, once, when one leaves it (more
    decimal places than exact values had, a first negative that needs its sign cell, a value past its top that is
    not a spike), from every value seen. A spike is a value past the top with no other one in the
    :data:`SPIKE_APART` values before it: it is written on its own and left out of the range, as the readers leave
    a column's largest 1% out, so that one gradient-norm spike does not cost the values after it their digits
    (``.4`` for .412); a second within that many values is a change of range, chosen from with the first. A column
    whose last :data:`LOW_RUN` values all show at most one significant digit (a loss that decayed by decades) is
    chosen again from those values alone.

    With ``scaled``, the notation is shown as :meth:`Notation.in_header` shows it (cells are whole numbers of one
    unit, measured so: :func:`choose`), and a value past the top that the unit writes in at most :data:`DIGITS`
    digits is a change of range at once, never a spike: an lr warmup's 1e-7 after 8e-8 is ``10`` under ``lr e-8``
    (the unit stays), not ``1e-7`` written on its own.
    """

    def __init__(self, width: int, scaled: bool = False) -> None:
        self.width = width
        self.scaled = scaled
        self.notation: Notation | None = None
        self.seen = Range(floats=True)
        #: whether the notation holds the last value taken in (one it does not hold is written on its own)
        self.held = False
        self._low = 0
        self._recent = Range(floats=True)  # the values of the current run of low ones
        self._band = (math.inf, 0.0)  # magnitudes a notation holds without another check: [low, top)
        #: values the current notation held, none of them low: one seen again changes nothing (an exact column's
        #: lengths and fractions repeat; its notation has no band, and each check measures the value's places)
        self._known: set[float] = set()
        self._count = 0  # values taken in
        self._spike: tuple[int, float] | None = None  # (its count, value): the last spike left out of the range

    def see(self, x: float) -> bool:
        """Take the finite float ``x`` in; True when the notation changed (``held``: whether ``x`` is written in
        it)."""
        self._count += 1
        if x in self._known:  # (taken in before: the range and the notation already hold it)
            if self._low:
                self._low = 0
                self._recent = Range(floats=True)
            self.held = True
            return False
        seen = self.seen
        ax = x if x >= 0 else -x
        lo, top = self._band
        if lo <= ax < top and (x >= 0 or seen.negative):  # the common case: inside, not a low value
            if self._low:
                self._low = 0
                self._recent = Range(floats=True)
            seen.add(x)
            self.held = True
            return False
        n = self.notation
        if n is not None and not (x < 0 and not seen.negative) and (n.holds(x) or n.rounds_away(x)):
            self.held = n.holds(x)
            if x != 0 and ax < n.low():
                self._low += 1
                self._recent.add(x)
                if self._low >= LOW_RUN:
                    self.seen = self._recent  # the range starts again from the recent values
                    changed = self._choose()
                    self.held = self.notation is not None and self.notation.holds(x)
                    return changed
            else:
                if self._low:
                    self._low = 0
                    self._recent = Range(floats=True)
                if n.exact and len(self._known) < KNOWN_MAX:
                    self._known.add(x)
            seen.add(x)
            return False
        if n is not None and ax >= n.top and (x >= 0 or seen.negative) and not self._in_unit(n, ax):
            last = self._spike
            if last is None or self._count - last[0] > SPIKE_APART:
                self._spike = (self._count, x)
                self.held = False
                return False
            seen.add(last[1])
        seen.add(x)
        changed = self._choose()
        self.held = self.notation is not None and self.notation.holds(x)
        return changed

    def _in_unit(self, n: Notation, ax: float) -> bool:
        """Whether ``n`` shown scaled writes the magnitude ``ax`` in at most :data:`DIGITS` digits of its unit."""
        if not self.scaled or n.exp is None:
            return False
        unit = n.exp - n.decimals  # (the power of ten of a cell's last digit: in_header's exponent)
        return ax < pow10(unit + DIGITS) - 0.5 * pow10(unit)

    def _choose(self) -> bool:
        new = self.seen.notation(self.width, self.scaled)
        self._spike = None
        self._low = 0
        self._recent = Range(floats=True)
        self._known = set()
        if new == self.notation:
            return False
        self.notation = new
        # an exact notation checks each value's places: no band
        self._band = (new.low(), new.top) if new is not None and not new.exact else (math.inf, 0.0)
        return True
