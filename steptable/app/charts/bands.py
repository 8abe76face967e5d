"""A seed group on the chart: per pixel column, the mean across the seeds of each seed's mean there, and a band
around it: the 95% Student-t interval of those seed means (n - 1 degrees of freedom) where two or more seeds have a
value in the column (their means' span where that interval is past the largest float), else the one seed's min to
max there. Each seed's column mean comes from prefix sums of its
finite values (kept up to date with the rows a run appends), so a redraw costs O(width * seeds * log rows).
Pure apart from the chart's Bucket type."""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from steptable.app.charts.draw import Line, pixel_edges, x_range
from steptable.compare import stats
from steptable.compare.tdist import t_ppf
from steptable.ingest.pyramid import Bucket, Pyramid
from steptable.table.formatting import to_float

#: what the band is, for the chart's key
BAND_WORDS = "band: 95% t interval across seeds (min-max where one seed has values)"
_EMPTY = Bucket(math.inf, -math.inf, False)


@dataclass
class Sums:
    """Prefix sums of one seed's finite values and of their count, row by row: the mean of any row range in O(1).
    NaN, inf and absent rows add nothing."""

    total: array[float] = field(default_factory=lambda: array("d", [0.0]))
    count: array[int] = field(default_factory=lambda: array("q", [0]))

    def __len__(self) -> int:
        return len(self.count) - 1

    def extend(self, values: Sequence[object]) -> None:
        t, c = self.total[-1], self.count[-1]
        for v in values:
            x = v if type(v) is float else math.nan if v is None else to_float(v)
            if x - x == 0.0:  # (finite)
                t += x
                c += 1
            self.total.append(t)
            self.count.append(c)

    def mean(self, i: int, j: int) -> float | None:
        """The mean of the finite values of rows ``[i, j)``; None when there is none."""
        n = self.count[j] - self.count[i]
        return (self.total[j] - self.total[i]) / n if n else None


@dataclass(frozen=True)
class Seed:
    """One seed's series on the chart's x: x per row, its values' pyramid (extremes), its prefix sums."""

    x: Sequence[float]
    raw: Pyramid
    sums: Sums

    @property
    def rows(self) -> int:
        return min(len(self.x), len(self.raw), len(self.sums))


@dataclass(frozen=True)
class Band:
    """A seed group's series on one metric: drawn as its mean line and a band (:meth:`buckets`)."""

    label: str
    seeds: Sequence[Seed]

    def buckets(self, x0: float, x1: float, pixels: int) -> tuple[list[Bucket], list[Bucket]]:
        """Per pixel column of [x0, x1]: (the band as lo-hi buckets, the mean as a one-value bucket); an empty
        bucket where no seed has a finite value. The band's ``bad`` flag: a seed logged NaN / inf there."""
        cut = [(s, pixel_edges(s.x, s.rows, x0, x1, pixels)) for s in self.seeds]
        extremes = [s.raw.buckets(edges) for s, edges in cut]
        band: list[Bucket] = []
        line: list[Bucket] = []
        for p in range(pixels):
            means = []
            alone: Bucket | None = None
            bad = False
            for (s, edges), ext in zip(cut, extremes, strict=True):
                bad = bad or ext[p].bad
                m = s.sums.mean(edges[p], edges[p + 1])
                if m is not None:
                    means.append(m)
                    alone = ext[p]
            n = len(means)
            if n == 0:
                band.append(Bucket(math.inf, -math.inf, bad))
                line.append(_EMPTY)
                continue
            mean = stats.mean(means)
            if n >= 2:
                sd = math.sqrt(stats.sample_var(means))
                half = t_ppf(0.975, n - 1) * sd / math.sqrt(n)
                # (seeds near the largest float: no interval to draw, so the span of their means)
                band.append(Bucket(mean - half, mean + half, bad) if math.isfinite(half)
                            else Bucket(min(means), max(means), bad))
            else:
                assert alone is not None
                band.append(Bucket(alone.lo, alone.hi, bad))
            line.append(Bucket(mean, mean, False))
        return band, line

    def x_range(self) -> tuple[float, float] | None:
        """The finite x its seeds span (as ``draw.x_range`` reads a line's)."""
        return x_range([Line(self.label, s.x, s.raw) for s in self.seeds])
