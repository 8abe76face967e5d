"""A min/max pyramid over one column: the extremes of any row range in O(log rows), so a chart's redraw or zoom
costs O(width * log rows) however long the run, and a single-point spike is never averaged away. Pure.

Level 0 holds each row's value (absent rows and non-finite values hold ``+inf`` / ``-inf``, i.e. nothing); level
``k`` holds the min and max of the blocks of ``2**k`` rows. A separate flag per block says it holds a non-finite
value the run logged (NaN, inf): a chart draws those as a marker, never as a number. Appending rows updates the last
block of each level only, so the cost of an append is in the rows appended (and ``log rows``), not in the series.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from functools import partial
from itertools import pairwise, repeat
from typing import Any, NamedTuple

from steptable.table.formatting import to_float

_INF = math.inf


class Bucket(NamedTuple):
    """The extremes of a range of rows: ``lo > hi`` when it holds no finite value; ``bad``: it holds a NaN / inf."""

    lo: float
    hi: float
    bad: bool

    @property
    def empty(self) -> bool:
        return self.lo > self.hi


class Pyramid:
    """Min / max / non-finite flag of every power-of-two block of a column's rows (see the module doc)."""

    def __init__(self, values: Iterable[Any] = ()) -> None:
        self.lo: list[array[float]] = [array("d")]
        self.hi: list[array[float]] = [array("d")]
        self.bad: list[bytearray] = [bytearray()]
        self.extend(values)

    def __len__(self) -> int:
        return len(self.lo[0])

    def extend(self, values: Iterable[Any]) -> None:
        """Append rows: a number, a value ``to_float`` reads, or None for a row without the value (not drawn, not
        flagged). The cost is in the new rows (each level is brought up to date from its last old block on)."""
        start = len(self)
        vals = values if isinstance(values, (list, array)) else list(values)
        kinds = set(map(type, vals))
        if kinds <= {float, int}:  # the usual numeric column: comprehensions, no call per value
            xs: Sequence[Any] = vals
        else:
            xs = [math.nan if v is None else v if type(v) is float else to_float(v) for v in vals]
        if xs is vals and math.isfinite(sum(xs)):  # every value finite (their sum is): copied in C
            self.lo[0].extend(array("d", xs))
            self.hi[0].extend(array("d", xs))
            self.bad[0].extend(bytes(len(xs)))
        else:
            fin = [x - x == 0.0 for x in xs]  # (nan and inf fail)
            self.lo[0].extend(array("d", [x if f else _INF for x, f in zip(xs, fin, strict=True)]))
            self.hi[0].extend(array("d", [x if f else -_INF for x, f in zip(xs, fin, strict=True)]))
            self.bad[0].extend(bytearray([not f and v is not None for v, f in zip(vals, fin, strict=True)]))
        if len(self) > start:
            self._build(start)

    def _build(self, start: int) -> None:
        """Levels above 0 again from the block holding row ``start`` on (pairs combined in C, level by level)."""
        k = 0
        while len(self.lo[k]) > 1:
            lo, hi, bad = self.lo[k], self.hi[k], self.bad[k]
            if k + 1 == len(self.lo):
                self.lo.append(array("d"))
                self.hi.append(array("d"))
                self.bad.append(bytearray())
            first = start >> 1  # the parent of the first changed block
            a = first * 2
            n = len(lo)
            even_lo, even_hi, even_bad = lo[a:n:2], hi[a:n:2], bad[a:n:2]
            odd_lo, odd_hi, odd_bad = lo[a + 1 : n : 2], hi[a + 1 : n : 2], bad[a + 1 : n : 2]
            # (a comprehension: min() per pair takes 2x as long; the odd block at the end is added below)
            new_lo = array("d", [x if x < y else y for x, y in zip(even_lo, odd_lo, strict=False)])
            new_hi = array("d", [x if x > y else y for x, y in zip(even_hi, odd_hi, strict=False)])
            # the flags OR'd as two big integers: one C pass (a map over the pairs takes 5x as long)
            pairs = min(len(odd_bad), len(even_bad))
            new_bad = bytearray((int.from_bytes(even_bad[:pairs], "little") | int.from_bytes(odd_bad, "little"))
                                .to_bytes(pairs, "little"))
            if len(even_lo) > len(odd_lo):  # an odd block at the end: its parent is itself
                new_lo.append(even_lo[-1])
                new_hi.append(even_hi[-1])
                new_bad.append(even_bad[-1])
            up_lo, up_hi, up_bad = self.lo[k + 1], self.hi[k + 1], self.bad[k + 1]
            del up_lo[first:], up_hi[first:], up_bad[first:]
            up_lo.extend(new_lo)
            up_hi.extend(new_hi)
            up_bad.extend(new_bad)
            start = first
            k += 1
        del self.lo[k + 1 :], self.hi[k + 1 :], self.bad[k + 1 :]

    def range(self, i: int, j: int) -> Bucket:
        """The extremes of rows ``[i, j)`` (clipped to the rows held), from O(log(j - i)) blocks."""
        i, j = max(i, 0), min(j, len(self))
        lo, hi, bad = _INF, -_INF, 0
        k = 0
        los, his, bads = self.lo, self.hi, self.bad
        while i < j:
            if i & 1:
                lo = min(lo, los[k][i])
                hi = max(hi, his[k][i])
                bad |= bads[k][i]
                i += 1
            if j & 1:
                j -= 1
                lo = min(lo, los[k][j])
                hi = max(hi, his[k][j])
                bad |= bads[k][j]
            i >>= 1
            j >>= 1
            k += 1
        return Bucket(lo, hi, bool(bad)) if lo <= hi or bad else _EMPTY

    def buckets(self, edges: Sequence[int]) -> list[Bucket]:
        """The extremes of each row range ``[edges[b], edges[b + 1])`` (edges non-decreasing): one per pixel column
        of a chart. Exact: every row of ``[edges[0], edges[-1])`` counts in one bucket. The inner edges are moved
        to the nearest boundary of blocks no longer than the smallest non-empty bucket (less than half a pixel
        column), so that each inner bucket is the min / max of a slice of one level, taken in C."""
        sizes = [b - a for a, b in pairwise(edges) if b > a]
        level = max(min(sizes).bit_length() - 1, 0) if sizes else 0
        if level < 2 or len(edges) < 4:
            return [self.range(a, b) for a, b in pairwise(edges)]
        first, last = max(edges[0], 0), min(edges[-1], len(self))
        lowest, highest = -(-first >> level), last >> level  # the blocks that lie within the edges
        half = 1 << (level - 1)
        inner = [min(max((e + half) >> level, lowest), highest) for e in edges[1:-1]]
        # each inner bucket from slices of one level, every step a C loop (map): no bytecode per bucket
        starts, stops = inner[:-1], inner[1:]
        cuts = list(map(slice, starts, stops))
        lows = map(_MIN, map(self.lo[level].__getitem__, cuts))
        highs = map(_MAX, map(self.hi[level].__getitem__, cuts))
        bad = map((-1).__lt__, map(self.bad[level].find, repeat(1, len(cuts)), starts, stops))
        return [self.range(first, inner[0] << level), *map(Bucket, lows, highs, bad),
                self.range(inner[-1] << level, last)]


_EMPTY = Bucket(_INF, -_INF, False)
_MIN = partial(min, default=_INF)  # (an empty slice: an empty bucket)
_MAX = partial(max, default=-_INF)


def even_edges(start: int, stop: int, buckets: int) -> list[int]:
    """``buckets + 1`` row edges splitting ``[start, stop)`` into equal slices (some empty where there are fewer
    rows than buckets)."""
    n = max(stop - start, 0)
    return [start + n * b // buckets for b in range(buckets + 1)] if buckets > 0 else [start]
