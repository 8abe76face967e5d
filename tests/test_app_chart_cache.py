"""The chart and diagnostics panels keep each arm's series until its store changes: what they show must equal a
fresh build's text after appends, a restart and a rewrite, and across column switches; a redraw that changes no data
reads no column again. ``finite`` (the min / max pass) must give exactly what ``to_float`` value by value gives."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steptable.app import model
from steptable.app.model import Summary, downsample, finite
from steptable.app.widgets import panels
from steptable.app.widgets.panels import ChartPanel, DiagnosticsPanel, _ArmPanel
from steptable.table.formatting import to_float
from tests.app.helpers import ARMS, append, make_runs, manual_app, row, sync, write_rows

SIZE = (150, 40)


def _fresh_text(panel: _ArmPanel, width: int) -> str:
    """What a panel with no caches and no earlier summaries builds from the same inputs."""
    fresh = ChartPanel() if isinstance(panel, ChartPanel) else DiagnosticsPanel()
    fresh.arms, fresh.cols = list(panel.arms), dict(panel.cols)
    if isinstance(panel, ChartPanel) and isinstance(fresh, ChartPanel):
        fresh.key = panel.key
    return fresh.build(width).plain


def _check(panel: _ArmPanel) -> str:
    """The text on screen equals a fresh build's at the panel's width (the one its redraw used)."""
    width = max(panel.scrollable_content_region.width - 2, 40)
    shown = str(panel.body.render())
    assert shown == panel.build(width).plain
    assert shown == _fresh_text(panel, width)
    return shown


async def _go_to(pilot: Any, key: str, way: str = "right") -> None:
    app = pilot.app
    for _ in range(40):
        if app.session.selected == key:
            await pilot.pause()
            return
        await pilot.press(way)
    raise AssertionError(f"column {key} not reached")


@pytest.mark.anyio
async def test_chart_text_equals_a_fresh_build_after_appends_restart_and_switching(tmp_path: Path) -> None:
    root = make_runs(tmp_path, steps=60)
    app, follower, _ = manual_app(root, now=1e12)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("d")
        await pilot.press("c")
        await pilot.pause()
        chart, diag = app.query_one(ChartPanel), app.query_one(DiagnosticsPanel)
        seen: dict[str, str] = {}
        for key in ("rew", "gt_s", "loss"):  # a float column, a column of (n, d) pairs, another float column
            await _go_to(pilot, key)
            seen[key] = _check(chart)
            _check(diag)
        for key in ("gt_s", "rew", "gt_s"):  # back and forth: nothing changed, the same text
            way = "left" if list(seen).index(key) < list(seen).index(app.session.selected or "") else "right"
            await _go_to(pilot, key, way)
            assert _check(chart) == seen[key]

        for i, arm in enumerate(ARMS):  # appends: new rows and a new max
            append(root, arm, 60, 90, arm_i=i)
        write_rows(root / "routeA" / "metrics.jsonl", [{**row(1, 90), "gt_s": [16, 16], "rew": 9.5}])
        await sync(pilot, follower)
        text = _check(chart)
        assert text != seen["gt_s"] and "steps 0-90" in text
        _check(diag)
        await _go_to(pilot, "rew", "left")
        assert "max +9.5" in _check(chart)

        # a restart: the file rewritten with as many rows as before, other values (same row count, same width)
        path = root / "routeA" / "metrics.jsonl"
        before = _check(chart)
        path.write_text("")
        await sync(pilot, follower)
        _check(chart)
        write_rows(path, ({**row(1, s), "rew": -2.0 + s / 100} for s in range(91)))
        await sync(pilot, follower)
        after = _check(chart)
        assert after != before and "min -2" in after
        _check(diag)
        await _go_to(pilot, "gt_s")
        _check(chart)
        await _go_to(pilot, "rew", "left")
        assert _check(chart) == after


@pytest.mark.anyio
async def test_a_column_picked_again_reads_no_column(tmp_path: Path, monkeypatch: Any) -> None:
    """Switching back to a charted column with no new rows reads no column again (the old chart copied and
    downsampled every arm's column on every redraw); an arm that grew is read again, alone."""
    app, follower, _ = manual_app(make_runs(tmp_path, steps=300), now=1e12)  # (more rows than the sparkline's cells)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        chart = app.query_one(ChartPanel)
        await _go_to(pilot, "rew")
        await pilot.press("right")
        await pilot.pause()
        reads: list[tuple[str, int, int]] = []
        real = panels.downsample

        def counted(values: Any, buckets: int, per_bucket: int = 16, n: int | None = None) -> list[float]:
            reads.append((app.session.selected or "", len(values), buckets))
            return real(values, buckets, per_bucket, n)

        monkeypatch.setattr(panels, "downsample", counted)
        await pilot.press("left")  # back to rew: cached
        await pilot.pause()
        assert app.session.selected == "rew" and reads == []
        _check(chart)
        reads.clear()  # (the fresh build _check compares with reads every arm)
        append(tmp_path, "absorb", 300, 301, arm_i=2)  # one arm grows: only its series is read again
        await sync(pilot, follower)
        assert [(key, n) for key, n, _ in reads] == [("rew", 301)], reads
        _check(chart)


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
    """The sparkline's values as they were computed value by value."""
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
    called only for the newest value (``last``), not once per row (~0.4 s on a 200k-row column)."""
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
