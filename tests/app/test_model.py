"""steptable.app.model: sparklines, downsampling, incremental summaries (the array path equal to the general one),
stalls against the usual interval, display order and filters, finite values."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steptable.app import model
from steptable.app.model import (
    Summary,
    display_order,
    downsample,
    filter_cols,
    finite,
    spark,
    stalled_for,
    usual_interval,
)
from steptable.table.columns import Col
from steptable.table.formatting import to_float
from tests.app.helpers import T0

COLS = (Col("step", 4, "step"), Col("rew", 6, "rew"), Col("kl", 6, "kl"), Col("actor/pg_loss", 8, "pg_loss"))


def test_spark_scales_and_blanks_nan() -> None:
    assert spark([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert spark([1.0, math.nan, 1.0]) == "▄ ▄"  # flat line mid-height, gap for nan
    assert spark([0.0, 1.0], lo=0.0, hi=2.0) == "▁▅"  # shared scale across arms
    assert spark([math.nan]) == " "


def test_downsample_means_and_bounded_reads() -> None:
    assert downsample([1, 2, 3], 10) == [1.0, 2.0, 3.0]
    assert downsample([1, 3, 5, 7], 2) == [2.0, 6.0]
    assert downsample([1, 2, 3, 4], 2, n=2) == [1.0, 2.0]
    out = downsample([math.nan] * 4 + [1.0] * 4, 2)
    assert math.isnan(out[0]) and out[1] == 1.0

    class Counting(list[float]):
        reads = 0

        def __getitem__(self, i: Any) -> Any:
            Counting.reads += 1
            return super().__getitem__(i)

    big = Counting([float(i) for i in range(1_000_000)])
    line = downsample(big, 50)
    assert len(line) == 50 and Counting.reads <= 50 * 17  # not a million reads
    assert line[0] < line[-1]


def test_summary_incremental_and_reset() -> None:
    s = Summary().update([1.0, math.nan, 3.0])
    assert (s.lo, s.hi, s.last, s.seen) == (1.0, 3.0, 3.0, 3)
    s.update([1.0, math.nan, 3.0, -2.0, (1, 4)])
    assert (s.lo, s.hi, s.last) == (-2.0, 3.0, 0.25)
    s.update([5.0])  # shorter: the run was rewritten
    assert (s.lo, s.hi, s.last) == (5.0, 5.0, 5.0)


def test_stalls_are_relative_to_the_usual_interval() -> None:
    walls = [T0 + 2 * i for i in range(30)]
    assert usual_interval(walls) == 2.0
    assert usual_interval(walls[:4]) is None  # too few intervals to know
    last = walls[-1]
    assert stalled_for(walls, last, last + 30) is None  # under the 60 s floor
    assert stalled_for(walls, last, last + 61) == pytest.approx(61)  # > 10 x 2 s and > 60 s
    slow = [T0 + 600 * i for i in range(30)]
    assert stalled_for(slow, slow[-1], slow[-1] + 3000) is None  # 10-minute steps: 50 minutes is normal
    assert stalled_for(walls, None, last + 1e6) is None


def test_display_order_and_filter() -> None:
    assert [c.key for c in display_order(COLS, ["kl"])] == ["step", "kl", "rew", "actor/pg_loss"]
    assert [c.key for c in display_order(COLS, ["nope", "step"])] == ["step", "rew", "kl", "actor/pg_loss"]
    assert [c.key for c in filter_cols(COLS, "kl*")] == ["step", "kl"]
    assert [c.key for c in filter_cols(COLS, "loss, rew")] == ["step", "rew", "actor/pg_loss"]  # substring
    assert [c.key for c in filter_cols(COLS, "pg_*")] == ["step", "actor/pg_loss"]  # header glob
    assert [c.key for c in filter_cols(COLS, "zzz", keep=["rew"])] == ["step", "rew"]
    assert filter_cols(COLS, "  ") == COLS


def test_a_key_holding_glob_characters_is_named_as_written() -> None:
    """``acc[0]`` as a glob is ``acc0``: the key itself, typed or prefilled, names it too."""
    cols = (Col("step", 5, "step"), Col("acc[0]", 6, "acc[0]"), Col("loss*", 5, "loss*"), Col("lossy", 5, "lossy"))
    assert [c.key for c in filter_cols(cols, "acc[0]")] == ["step", "acc[0]"]
    assert model.key_matches("loss*", "loss*") and model.key_matches("lossy", "loss*")
    assert model.key_matches("a\x1b[31mb[1]", "ab[1]")  # as shown: made inert
    assert not model.key_matches("acc[1]", "acc[0]")


def test_summary_of_a_numeric_column_matches_the_general_path() -> None:
    """The array path (C loops: a chart of 200k rows value by value would block the UI for a second a column)
    gives what the per-value path gives, non-finite values and appended rows included."""
    import random
    from array import array

    from steptable.app.model import Summary

    rng = random.Random(3)
    values = [rng.choice([math.nan, math.inf, -math.inf, rng.uniform(-5, 5)]) for _ in range(500)]
    fast, slow = Summary(), Summary()
    for n in (0, 1, 7, 250, 500):
        fast.update(array("d", values), n)
        slow.update(list(values), n)
        assert (fast.lo, fast.hi, fast.seen) == (slow.lo, slow.hi, slow.seen)
        assert repr(fast.last) == repr(slow.last)


def _reference_finite(values: list[Any]) -> list[float]:
    return [x for x in map(to_float, values) if math.isfinite(x)]


HOSTILE = [
    None, True, False, 0, -0.0, 2**60 + 1, 1e308, math.nan, math.inf, -math.inf, "inf", "-Infinity", "3", "abc", "12",
    [3, 4], (1, 0), [1, -0.0], [True, 2], ["1", "4"], ["x", 2], [1, None], [None, 0], [1, 2, 3], [5], [],
    {"a": 1, "b": 2}, {1: 2, 3: 4}, [[1, 2], 4], [2**70, 3], [1.5, math.nan], [math.inf, 2], [7, "inf"],
]


def test_finite_equals_to_float_value_by_value() -> None:
    cases: list[list[Any]] = [
        [0.5, 1, -3, True],  # numbers
        [[1, 2], (3, 4), [5, 0], None, [7, 8.5], [-0.0, 1]],  # pairs, rows without the key
        [[1, 2], "3"],  # a pair column with one odd value
        [[1, 2], ["a", 2]],
        [[1, 2], [1, 2, 3]],
        ["12", "ab"],  # strings of two characters are not pairs
        [{1: 2, 3: 4}],
        [1.0, 10**400, -(10**400), 2],  # ints past float range (the chart raised OverflowError)
        [[1, 10**400], [10**400, 1]],
        HOSTILE,
        [],
    ]
    cases += [[v] for v in HOSTILE] + [[[1, 2], v] for v in HOSTILE]
    for values in cases:
        assert finite(values) == _reference_finite(values), values
        assert finite(tuple(values)) == _reference_finite(values), values


_item = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.integers(10**308, 10**310),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["inf", "-inf", "1.5", "x", "12", ""]),
)


_value = st.one_of(_item, st.tuples(_item, _item), st.lists(_item, max_size=3))


@given(st.lists(_value, max_size=30))
def test_finite_matches_to_float_on_any_mix(values: list[Any]) -> None:
    assert finite(values) == _reference_finite(values)


def _reference_downsample(values: list[Any], buckets: int, per_bucket: int = 16) -> list[float]:
    """The sparkline's values computed value by value."""
    n = len(values)
    if n <= buckets:
        return [to_float(v) for v in values]
    out = []
    for b in range(buckets):
        lo, hi = n * b // buckets, n * (b + 1) // buckets
        stride = max((hi - lo) // per_bucket, 1)
        xs = [x for x in (to_float(values[i]) for i in range(lo, hi, stride)) if math.isfinite(x)]
        out.append(sum(xs) / len(xs) if xs else math.nan)
    return out


def test_summary_and_downsample_of_pairs_take_no_call_per_row(monkeypatch: Any) -> None:
    """A column of (n, d) pairs with gaps: the same min / max / last and sparkline as value by value, with to_float
    called only for the newest value (``last``), not once per row."""
    values: list[Any] = [None if s % 7 == 3 else [(s * 7) % 9, 16] for s in range(5000)]
    values[100] = [1, 0]  # n / 0: nan, left out
    expect = _reference_finite(values)
    spark_ref = _reference_downsample(values, 50)
    calls = [0]
    real = model.to_float

    def counted(v: Any) -> float:
        calls[0] += 1
        return real(v)

    monkeypatch.setattr(model, "to_float", counted)
    s = Summary().update(values)
    assert (s.lo, s.hi, s.last) == (min(expect), max(expect), real(values[-1]))
    assert calls[0] <= 2
    line = downsample(values, 50)
    assert calls[0] <= 2
    assert str(line) == str(spark_ref)  # (str: nan == nan)


def test_summary_last_is_the_latest_logged_value() -> None:
    s = Summary().update([0.7, 0.7, math.inf])
    assert (s.lo, s.hi, s.last) == (0.7, 0.7, math.inf)
    s.update([0.7, 0.7, math.inf, math.nan])
    assert math.isnan(s.last) and s.hi == 0.7
    s.update([0.7, 0.7, math.inf, math.nan, 0.5, None])  # None: the row lacks the key
    assert s.last == 0.5
    absent = Summary().update([0.3, math.nan, math.nan], logged=lambda i: i == 0)  # nan pads absent cells
    assert absent.last == 0.3
