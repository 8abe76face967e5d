"""Which way a cell moved: its column's level against the level before, beyond the column's own noise. Pure.

The table colours a cell of a column with a ``better`` direction only where the column's level moved: the median
of the cell and the :data:`SHORT` - 1 values before it (its current level) against the median of the :data:`RECENT`
values before those (its recent level), by more than :data:`BEYOND` standard errors of that difference, and the cell
itself is past the recent level the same way. Medians, not single values: one noisy cell does not move a level.
The noise is measured from the differences between consecutive values (their median absolute size; 0.954 of it is
one sigma of Gaussian noise), not from the spread around the level, so that a steady trend, whose values spread
widely but move little from one row to the next, reads as a move, and a noisy stationary column (RL rewards,
losses) almost never does. Against the previous row alone, every other cell of a noisy column flips colour.

``direction`` answers for one cell; ``directions`` for a run of a column's cells in one pass, the same answers.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable, Sequence
from itertools import islice
from operator import sub

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

#: the rule in words, for the legend and the help screen (the table reads the values of the BEFORE rows before a
#: cell: a column logged every row has RECENT values for its recent level, a sparse one fewer)
RULE = (f"the median of the cell and the {SHORT - 1} values before it moved from the median of the values before "
        f"those in the last {SHORT - 1 + RECENT} rows ({RECENT} where the column is logged every row, at least "
        f"{MIN_RECENT}), beyond {BEYOND:g} standard errors of the column's row-to-row noise, and the cell is past "
        f"that level too")

#: the values before a cell that its move is measured against
BEFORE = SHORT - 1 + RECENT


def _mid(ordered: Sequence[float]) -> float:
    """The median of ``ordered`` (sorted, not empty), as ``statistics.median`` gives it."""
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def _noise_of(diffs: Sequence[float]) -> float:
    """``noise`` from the absolute neighbour differences, sorted."""
    if not diffs:
        return 0.0
    mid = _mid(diffs)
    return mid / _DIFF_MEDIAN if mid > 0 else sum(diffs) / len(diffs) / _DIFF_MEAN


def _diffs(values: Sequence[float]) -> list[float]:
    """|b - a| of each pair of neighbours in ``values``, sorted (at C speed)."""
    return sorted(map(abs, map(sub, values[1:], values)))


def noise(values: Sequence[float]) -> float:
    """One sigma of the row-to-row noise of ``values`` (finite, in order): from the median absolute difference
    between neighbours, or their mean where over half of them are 0 (a quantised column); 0 for a column that
    never moved."""
    return _noise_of(_diffs(values))


def _verdict(better: str, value: float, recent: Sequence[float], short: Sequence[float],
             diffs: Callable[[], Sequence[float]]) -> int:
    """The move of ``value`` given its recent and current levels' values, both sorted, and (asked only where the
    levels differ) the sorted neighbour differences of all of them."""
    if len(recent) < MIN_RECENT:
        return 0
    level = _mid(recent)
    move = _mid(short) - level
    if move == 0 or (value - level) * move <= 0:  # (before the noise: most cells of a still column end here)
        return 0
    if abs(move) <= BEYOND * _MEDIAN_SE * _noise_of(diffs()) * math.sqrt(1 / len(short) + 1 / len(recent)):
        return 0
    return 1 if (move > 0) == (better == "higher") else -1


def direction(better: str | None, value: float, before: Sequence[float]) -> int:
    """+1 where the column's level moved the ``better`` way ("higher" / "lower") at ``value``, -1 where it moved
    the other way, 0 otherwise: no direction, a non-finite value, fewer than :data:`MIN_RECENT` values for the recent
    level, a move within the noise, or the cell itself not past the recent level in the move's direction.
    ``before``: the finite values logged before this cell, oldest first (only the last :data:`BEFORE` are read).
    A column that never moved (noise 0) counts any change of level as a move."""
    if better not in ("higher", "lower") or not math.isfinite(value):
        return 0
    values = [*before[-BEFORE:], value]
    return _verdict(better, value, sorted(values[:-SHORT]), sorted(values[-SHORT:]), lambda: _diffs(values))


def directions(better: str | None, values: Sequence[float], first: int) -> list[int]:
    """``direction`` of each of ``values[first:]`` (a column's values in row order, non-finite ones included) against
    the finite ones among the :data:`BEFORE` rows before it, in one pass: the windows slide, kept sorted, instead of
    being sorted again for every cell."""
    if better not in ("higher", "lower"):
        return [0] * max(len(values) - first, 0)
    k = SHORT - 1
    window: deque[float] = deque()  # the finite values of the rows before the cell (at most BEFORE rows back)
    rows: deque[int] = deque()
    recent: list[float] = []  # window[:-k], sorted
    diffs: list[float] = []  # |b - a| of the window's neighbours, sorted
    out: list[int] = []
    for i in range(max(0, first - BEFORE), len(values)):
        while rows and rows[0] < i - BEFORE:  # out of the window
            gone = window.popleft()
            rows.popleft()
            if window:
                del diffs[bisect_left(diffs, abs(window[0] - gone))]
            if len(window) >= k:  # (it was in the recent part)
                del recent[bisect_left(recent, gone)]
        v = values[i]
        if i >= first:
            if not math.isfinite(v):
                out.append(0)
            else:
                n = len(window)
                short = sorted([*islice(window, max(n - k, 0), n), v])

                def all_diffs(n: int = n, v: float = v) -> list[float]:
                    if not n:
                        return diffs
                    extra = abs(v - window[-1])
                    return [*diffs[: (j := bisect_left(diffs, extra))], extra, *diffs[j:]]

                out.append(_verdict(better, v, recent, short, all_diffs))
        if math.isfinite(v):
            if window:
                insort(diffs, abs(v - window[-1]))
            window.append(v)
            rows.append(i)
            if len(window) > k:
                insort(recent, window[-k - 1])
    return out
