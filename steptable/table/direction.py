"""Which way a cell moved: its column's level against the level before, beyond the column's own noise. Pure.

The table colours a cell of a column with a ``better`` direction only where the column's level moved: the median
of the cell and the :data:`SHORT` - 1 values before it (its current level) against the median of the :data:`RECENT`
values before those (its recent level), by more than :data:`BEYOND` standard errors of that difference, and the cell
itself is past the recent level the same way. Medians, not single values: one noisy cell does not move a level.
The noise is measured from the differences between consecutive values (their median absolute size; 0.954 of it is
one sigma of Gaussian noise), not from the spread around the level, so that a steady trend, whose values spread
widely but move little from one row to the next, reads as a move, and a noisy stationary column (RL rewards,
losses) almost never does. Against the previous row alone, every other cell of a noisy column flips colour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import sub
from statistics import median

#: values (the cell's and those just before it) that make a cell's current level
SHORT = 9
#: values before those that make the column's recent level
RECENT = 50
#: fewer values than this before the current level: no recent level yet, no colour
MIN_RECENT = 8
#: a move counts beyond this many standard errors of the difference between the two levels
BEYOND = 4.0
#: median |x_t - x_{t-1}| of Gaussian noise of sigma 1 (sqrt(2) x 0.6745)
_DIFF_MEDIAN = 0.9539
#: mean |x_t - x_{t-1}| of Gaussian noise of sigma 1 (2 / sqrt(pi)): where over half the differences are 0
_DIFF_MEAN = 1.1284
#: the standard error of a median of n Gaussian values is this / sqrt(n) sigmas
_MEDIAN_SE = 1.2533

#: the rule in words, for the legend and the help screen
RULE = (f"the median of the cell and the {SHORT - 1} values before it moved from the median of the {RECENT} values "
        f"before those, beyond {BEYOND:g} standard errors of the column's row-to-row noise, and the cell is past "
        f"that level too")


def noise(values: Sequence[float]) -> float:
    """One sigma of the row-to-row noise of ``values`` (finite, in order): from the median absolute difference
    between neighbours, or their mean where over half of them are 0 (a quantised column); 0 for a column that
    never moved."""
    diffs: list[float] = list(map(abs, map(sub, values[1:], values)))  # (|b - a| of neighbours, at C speed)
    if not diffs:
        return 0.0
    mid = median(diffs)
    return mid / _DIFF_MEDIAN if mid > 0 else sum(diffs) / len(diffs) / _DIFF_MEAN


def direction(better: str | None, value: float, before: Sequence[float]) -> int:
    """+1 where the column's level moved the ``better`` way ("higher" / "lower") at ``value``, -1 where it moved
    the other way, 0 otherwise: no direction, a non-finite value, fewer than :data:`MIN_RECENT` values for the recent
    level, a move within the noise, or the cell itself not past the recent level in the move's direction.
    ``before``: the finite values logged before this cell, oldest first (only the last ``SHORT - 1 + RECENT`` are
    read). A column that never moved (noise 0) counts any change of level as a move."""
    if better not in ("higher", "lower") or not math.isfinite(value):
        return 0
    values = [*before[-(SHORT - 1 + RECENT):], value]
    short, recent = values[-SHORT:], values[:-SHORT]
    if len(recent) < MIN_RECENT:
        return 0
    level = median(recent)
    move = median(short) - level
    if move == 0 or (value - level) * move <= 0:  # (before the noise: most cells of a still column end here)
        return 0
    if abs(move) <= BEYOND * _MEDIAN_SE * noise(values) * math.sqrt(1 / len(short) + 1 / len(recent)):
        return 0
    return 1 if (move > 0) == (better == "higher") else -1
