"""The min/max pyramid: exact extremes of any row range and of any set of chart buckets, NaN / inf flagged and never
counted as a value, absent rows neither, appends in any batch sizes giving the same pyramid as one build."""

from __future__ import annotations

import math
import random

import pytest

from steptable.ingest.pyramid import Bucket, Pyramid, even_edges


def _values(seed: int, n: int) -> list[float | None]:
    r = random.Random(seed)
    return [r.choice([None, math.nan, math.inf, -math.inf, r.random()]) if r.random() < 0.05 else r.gauss(0, 3)
            for _ in range(n)]


def _truth(vals: list[float | None]) -> tuple[float, float, bool]:
    fin = [v for v in vals if v is not None and math.isfinite(v)]
    bad = any(v is not None and not math.isfinite(v) for v in vals)
    return (min(fin), max(fin), bad) if fin else (math.inf, -math.inf, bad)


@pytest.mark.parametrize("seed", range(12))
def test_range_is_exact_for_any_rows_and_batches(seed: int) -> None:
    r = random.Random(seed)
    vals = _values(seed, r.randint(1, 2500))
    p = Pyramid()
    i = 0
    while i < len(vals):  # appended in batches of every size, as a live run's rows come
        m = r.randint(1, 300)
        p.extend(vals[i : i + m])
        i += m
    assert len(p) == len(vals)
    assert (p.lo, p.hi, p.bad) == (Pyramid(vals).lo, Pyramid(vals).hi, Pyramid(vals).bad)
    for _ in range(200):
        a = r.randint(0, len(vals))
        b = r.randint(a, len(vals))
        got = p.range(a, b)
        assert (got.lo, got.hi, got.bad) == _truth(vals[a:b])


@pytest.mark.parametrize("seed", range(12))
def test_buckets_partition_the_rows_exactly(seed: int) -> None:
    """Every bucket's extremes lie within its own rows (or a neighbour's by less than half the smallest bucket), and
    together they hold every extreme of the range: a single value is never lost."""
    r = random.Random(100 + seed)
    vals = _values(seed, r.randint(100, 20000))
    p = Pyramid(vals)
    for _ in range(40):
        a = r.randint(0, len(vals) - 1)
        b = r.randint(a, len(vals))
        w = r.randint(1, 300)
        edges = even_edges(a, b, w) if r.random() < 0.5 else sorted(r.randint(a, b) for _ in range(w + 1))
        got = p.buckets(edges)
        assert len(got) == len(edges) - 1
        lo = min((g.lo for g in got), default=math.inf)
        hi = max((g.hi for g in got), default=-math.inf)
        assert (lo, hi, any(g.bad for g in got)) == _truth(vals[edges[0] : edges[-1]])


def test_one_spike_in_a_million_is_in_its_pixel_column_at_every_zoom() -> None:
    n, at = 1_000_000, 777_777
    vals = [1.0] * n
    vals[at] = 1000.0
    vals[333_333] = math.nan
    p = Pyramid(vals)
    for lo, hi in [(0, n), (500_000, n), (700_000, 800_000), (777_000, 778_000), (777_770, 777_790)]:
        edges = even_edges(lo, hi, 300)
        got = p.buckets(edges)
        tall = [b for b, g in enumerate(got) if g.hi == 1000.0]
        assert len(tall) == 1
        assert edges[tall[0]] - (edges[1] - edges[0]) <= at < edges[tall[0] + 1] + (edges[1] - edges[0])
        assert sum(g.bad for g in got) == (1 if lo <= 333_333 < hi else 0)
        assert all(g.lo == 1.0 for g in got if not g.empty and g.hi < 1000.0)


def test_absent_rows_and_text_are_not_values() -> None:
    p = Pyramid([None, "nan", "2.5", None, (1, 4), "x"])
    assert p.range(0, 1) == Bucket(math.inf, -math.inf, False)  # absent: nothing, no flag
    assert p.range(1, 2).bad  # a logged "nan"
    assert p.range(0, 6)[:2] == (0.25, 2.5)


def test_append_touches_a_few_blocks_per_level() -> None:
    p = Pyramid([1.0] * 4096)
    levels = len(p.lo)
    p.extend([9.0])
    assert p.range(0, 4097) == Bucket(1.0, 9.0, False)
    assert len(p.lo) == levels + 1  # one level more, for 4097 rows
    assert p.range(4096, 4097).hi == 9.0
