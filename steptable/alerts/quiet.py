"""Quiet stretches of a stored history, fed in bulk: a block of rows that provably raises nothing advances every
detector's state over it at once (windows shifted, run counts added, the tail's scale resampled at its rows) instead
of one call per detector per row. Pure, stdlib only.

The proofs use bounds, mostly not the rows' own statistics: the j-th smallest of k + 1 consecutive windows lies
between the j-th smallest of their union and the one k places above (a window's median over the next rows, a hold's
low median), or of the first of them and those k places either side (k values leave, k arrive); the union's least
and greatest values are looser bounds still, found without a sort. Every comparison a detector makes is monotone in
the bounded quantity and evaluated with the detector's own expression, so a block passes only where each row would
give the same outcome row by row; what a row sets exactly (the tail's scale every 10 rows, a reward's peak, a rise's
sampled medians) is computed exactly, at those rows only, and where a spike tail's bounds are too loose (bounded
noise: excursions near the tail's top every few rows) its rows are tested against their own medians, a row that
grows the tail setting it as the row would. Anything else (an episode going on, a non-finite or absent cell, a
resume, a clock gap, a detector not known here) is left to the row-by-row path: tests/alerts/test_quiet.py holds
the two to the same alerts and the same state.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, insort
from collections.abc import Callable, Sequence
from operator import eq, sub
from typing import Any

from steptable.alerts.detectors import Flat, GradSpike, KLBlowup, NonFinite, Saturation, Spike
from steptable.alerts.levels import EntropyCollapse, EntropyRise, GradRise, RewardCollapse
from steptable.alerts.quietlevels import SEG, entropy_collapse, negative_zero, reward, rise
from steptable.alerts.quietlevels import Commit as Commit
from steptable.alerts.rules import Alert
from steptable.alerts.window import Detector, Tail, Window, robust_sigma, sorted_median

#: rows a stored history is fed in bulk at a time, where they are quiet (the app's scanner feeds 250 at a time) ...
BLOCK = 250
#: ... and the fewest worth it (a shorter block, as the end of a history, is fed row by row)
MIN_ROWS = SEG
#: the rows a detector that is not quiet over a whole block tries in bulk at a time
PIECE = 50


def floats(cells: Sequence[Any]) -> list[float] | None:
    """``cells`` as the floats a detector reads (``cell_float`` of each), when every one is a finite number or a
    numeric string; None otherwise (an absent, non-finite or fraction cell: the row-by-row path reads those)."""
    try:
        xs = cells.tolist() if type(cells) is array and cells.typecode == "d" else list(map(float, cells))
    except Exception:  # (as cell_float: any cell whose float() fails is not a number)
        return None
    total = sum(xs)
    if total - total != 0:  # an inf or a NaN (or a sum past float range: let the rows say)
        return None
    return xs


def unfit(cells: Sequence[Any], n: int) -> list[int]:
    """The rows of ``n`` whose cell (``cells``, fewer where a column ends early) :func:`floats` does not take."""
    if len(cells) == n and floats(cells) is not None:
        return []
    out = list(range(len(cells), n))
    for j, v in enumerate(cells):
        try:
            x = float(v)
        except Exception:  # (as cell_float: any cell whose float() fails is not a number)
            out.append(j)
            continue
        if x - x != 0:
            out.append(j)
    return out


def blocks(start: int, stop: int, cols: Sequence[tuple[str, Sequence[Any]]],
           base: int) -> list[tuple[int, int, list[list[float]] | None]]:
    """``[start, stop)`` in blocks of BLOCK rows, a row with a cell that is not a finite number (absent: an eval
    row without the training keys; NaN) a block of its own (fed row by row) and the stretches between it blocks;
    each with its columns' :func:`floats` where the whole block of BLOCK rows has them (else None: not read yet)."""
    out: list[tuple[int, int, list[list[float]] | None]] = []
    for a in range(start, stop, BLOCK):
        b = min(a + BLOCK, stop)
        xs = [v for _, c in cols if (v := floats(c[a - base: b - base])) is not None and len(v) == b - a]
        if len(xs) == len(cols):
            out.append((a, b, xs))
            continue
        at = a
        for i in sorted({j + a for _, c in cols for j in unfit(c[a - base: b - base], b - a)}):
            out += [(at, i, None), (i, i + 1, None)] if i > at else [(i, i + 1, None)]
            at = i + 1
        if at < b:
            out.append((at, b, None))
    return out


def advance(dets: Sequence[Detector], xs: list[float], steps: Sequence[int],
            hints: dict[str, int] | None = None) -> list[Commit | None]:
    """For each of ``dets`` (one column's detectors), how to advance it over ``xs`` (the column's values at
    ``steps``, every one finite) when none of those rows raises anything in it (what a row notes is set as the row
    sets it); None for a detector where that cannot be shown (fed row by row). Nothing is changed until a returned
    commit runs. ``hints``: kept by the caller from block to block of the column, where its tests may start (the
    outcomes do not depend on them)."""
    memo: dict[str, Any] = {"hints": hints}  # (what the column's detectors share: its level detectors' windows)
    out: list[Commit | None] = []
    for d in dets:
        q = QUIET.get(type(d))
        # (an episode said and not re-armed: row by row, where the detector is not LATCHED)
        out.append(q(d, xs, steps, memo) if q is not None and _open(d) else None)
    return out


def piecewise(d: Detector, xs: list[float], steps: Sequence[int],
              hints: dict[str, int] | None = None) -> list[tuple[int, Alert]]:
    """Feed ``d`` the rows (``xs`` at ``steps``, every one finite): in bulk PIECE rows at a time where those are
    quiet, else row by row; (row, alert) for each alert. ``hints``: as :func:`advance` takes them."""
    q = QUIET.get(type(d))
    out: list[tuple[int, Alert]] = []
    for a in range(0, len(xs), PIECE):
        b = min(a + PIECE, len(xs))
        commit = q(d, xs[a:b], steps[a:b], {"hints": hints}) if q is not None and _open(d) else None
        if commit is not None:
            commit()
            continue
        out += [(i, found) for i in range(a, b) if (found := d.feed(steps[i], xs[i])) is not None]
    return out


def _open(d: Detector) -> bool:
    """Whether ``d``'s quiet test may be asked: outside an episode, or for a detector whose test judges a said
    episode's rows itself (LATCHED)."""
    return d.latch.level is None or type(d) in LATCHED


def _nonfinite(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    def commit() -> None:
        if d.run == 0:
            d.since = steps[0]
        d.run += len(xs)
        d.step = steps[-1]

    return commit


def _saturation(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    c = d.cfg
    if d.latch.level is not None:
        # a said saturation that goes on (a ratio logged in percent stays past the level all run): each row past
        # the level says it again, silently
        if not (min(xs) > c.sat_level and d.run >= 1 and d.run + 1 >= c.sat_rows > 0):
            return None

        def go_on() -> None:
            d.run, d.step = d.run + len(xs), steps[-1]
            d.latch.clear = 0  # (each row said the episode: none counts towards re-arming)

        return go_on
    if not max(xs) <= c.sat_level or c.sat_rows <= 0:
        return None

    def commit() -> None:
        d.run, d.step = 0, steps[-1]

    return commit


def _flat(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, Flat)
    rows = d.cfg.flat_rows
    same = list(map(eq, [d.value, *xs[:-1]], xs))  # each row equal to the one before
    run, since = d.run, d.since
    if True not in same:
        run, since = 1, steps[-1]
        if run >= rows > 0:
            return None
    else:
        for i, s in enumerate(same):
            run = run + 1 if s else 1
            if run == 1:
                since = steps[i]
            if run >= rows > 0:  # (it would ask the gate, and may fire)
                return None

    def commit() -> None:
        d.run, d.since, d.value, d.step = run, since, xs[-1], steps[-1]

    return commit


def _spaced(starts: list[int], n: int) -> list[int]:
    """``starts`` (sorted, from 0) with more put in where two are more than SEG rows apart (or the last from n)."""
    out: list[int] = []
    for a, b in zip(starts, [*starts[1:], n], strict=True):
        out.extend(range(a, b, SEG))
    return out


def _tail_scale(win: Window, tail: Tail, xs: list[float], steps: Sequence[int], factor: float, gap: float,
                diffs: list[float] | None, cut: float | None = None) -> tuple[float, float, int] | None:
    """The tail's (scale, top, the step of top) after the rows ``xs`` (at ``steps``) are each tested against the
    window before them (those past ``cut`` only, when given), when no tested row is news (its excursion past
    ``factor`` times the tail's top: a spike or a jump may be said); None otherwise. A row whose excursion passes
    the top without being news grows the tail, as :meth:`Tail.note` does. ``gap``: the window's resolution before
    the rows; ``diffs``: |x - previous| of each row where the test moves the resolution (Spike), None where it does
    not."""
    n = win.maxlen or 0
    lo, hi = (n - 1) // 2, n // 2
    top, at, scale, age = tail.top, tail.at, tail.scale, tail.age
    if age == 0 or not top > 0 or lo < SEG:
        return None
    vals = [*win, *xs]
    tested = range(len(xs)) if cut is None else [i for i, x in enumerate(xs) if x > cut]
    # the rows that resample the scale, each with the tested rows before it in the block
    refresh = {tested[p]: p for p in range((-age) % Tail.REFRESH, len(tested), Tail.REFRESH)}
    starts = _spaced(sorted({0, *refresh}), len(xs))
    for a, b in zip(starts, [*starts[1:], len(xs)], strict=True):
        w = vals[a:a + n]
        s = win.ordered if a == 0 else sorted(w)
        p = refresh.get(a)
        if p is not None:
            m = sorted_median(s)
            sigma = robust_sigma(w, s, m, gap, True)
            if diffs is not None and not sigma > gap / 2:
                # the resolution is the sigma (rare): the one row a's test reads, the smallest step before it
                sigma = robust_sigma(w, s, m, min(gap, min(filter(None, diffs[:a]), default=math.inf)), True)
            scale = Tail.smoothed(scale, sigma, age + p)
        k = b - a - 1
        seg = xs[a:b] if cut is None else [x for x in xs[a:b] if x > cut]
        if seg and max(max(seg) - s[lo - k], s[hi + k] - min(seg)) / scale > top:
            # (the median's bounds over the rows are too loose: each row against its window's own median)
            got = _tail_rows(list(s), vals, a, b, n, scale, top, at, factor, cut, steps)
            if got is None:
                return None
            top, at = got
    return scale, top, at


def _tail_rows(s: list[float], vals: list[float], a: int, b: int, n: int, scale: float, top: float, at: int,
               factor: float, cut: float | None, steps: Sequence[int]) -> tuple[float, int] | None:
    """:meth:`Tail.z` of each of the rows [a, b) (those past ``cut``) against its window's median, exactly (``s``:
    the window before row a, sorted; row i's value is ``vals[i + n]``): the tail's (top, step) after them, or None
    where one is news."""
    for i in range(a, b):
        if i > a:
            del s[bisect_left(s, vals[i - 1])]
            insort(s, vals[i - 1 + n])
        x = vals[i + n]
        if cut is not None and not x > cut:
            continue
        t = abs(x - sorted_median(s)) / scale
        if t > top:
            if t > factor * top:
                return None
            top, at = t, steps[i]
    return top, at


def _spike(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, Spike)
    w, c = d.win, d.cfg
    n = w.maxlen or 0
    if len(w) < n or n < c.min_history or d.run < n or not w.gap < math.inf or negative_zero(w) or negative_zero(xs):
        return None
    diffs = list(map(abs, map(sub, xs, [w[-1], *xs[:-1]])))
    found = _tail_scale(w, d.tail, xs, steps, c.spike_tail, w.gap, diffs)
    if found is None:
        return None
    scale, top, at = found
    gap = min(w.gap, min(filter(None, diffs), default=math.inf))

    def commit() -> None:
        w.shift(xs)
        w.gap = gap
        d.tail.scale, d.tail.top, d.tail.at = scale, top, at
        d.tail.age, d.step = d.tail.age + len(xs), steps[-1]

    return commit


def _kl(d: Detector, xs: list[float], steps: Sequence[int], memo: dict[str, Any]) -> Commit | None:
    assert isinstance(d, KLBlowup)
    w, c = d.win, d.cfg
    n = w.maxlen or 0
    latched = d.latch.level is not None
    # A said episode (a KL that stays past its levels, as some trainers' summed KLs do for a whole run): a block
    # where every row says that episode's level or a lower one again says nothing, and only the tail moves.
    if latched and not (d.levels and min(xs) > c.kl_warn and (d.latch.level == "E" or max(xs) <= c.kl_error)):
        return None
    if len(w) < n or n < c.min_history or (d.levels and not latched and not max(xs) <= c.kl_warn):
        return None
    if negative_zero(w) or negative_zero(xs):
        return None
    scale, top, at, age = d.tail.scale, d.tail.top, d.tail.at, d.tail.age
    if max(xs) > c.kl_jump_min:  # rows tested (a median of 0 skips the test: every one > 0 here)
        if not min(w.ordered[0], *xs) > 0:
            return None
        every = min(xs) > c.kl_jump_min
        found = _tail_scale(w, d.tail, xs, steps, c.spike_tail, w.gap, None, None if every else c.kl_jump_min)
        if found is None:
            return None
        scale, top, at = found
        age += len(xs) if every else sum(1 for x in xs if x > c.kl_jump_min)

    def commit() -> None:
        w.shift(xs)
        d.tail.scale, d.tail.top, d.tail.at, d.tail.age, d.step = scale, top, at, age, steps[-1]
        if latched:
            d.latch.clear = 0  # (each row said the episode's level: none of them counts towards re-arming)

    return commit


#: the detectors whose quiet test judges a said episode's rows itself (the others are fed row by row in one)
LATCHED: frozenset[type[Detector]] = frozenset({KLBlowup, Saturation})

QUIET: dict[type[Detector], Callable[[Detector, list[float], Sequence[int], dict[str, Any]], Commit | None]] = {
    NonFinite: _nonfinite,
    Saturation: _saturation,
    Flat: _flat,
    Spike: _spike,
    GradSpike: _spike,
    KLBlowup: _kl,
    RewardCollapse: reward,
    EntropyCollapse: entropy_collapse,
    GradRise: rise,
    EntropyRise: rise,
}
