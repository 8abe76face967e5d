"""steptable.summary.trend.column_glance: what picking the key columns reads of a column (present, logged, first, last,
texts, whether it varies) is what column_stats says, on doubles read in C passes over their bytes and on anything
else, including signed zeros, NaN, inf, doubles of 2**1009 and more, and text; and column_stats reads an array of
doubles as it reads the same values in a list."""

from __future__ import annotations

import math
import random
from array import array
from pathlib import Path
from typing import Any

import pytest

from steptable.summary.trend import column_glance, column_stats
from tests.helpers import store_of

_HUGE = 2.0**1010  # a finite double that shares its top byte with inf and NaN


def _columns() -> list[list[Any]]:
    rng = random.Random(7)
    cols: list[list[Any]] = [
        [0.5] * 50, [0.0] * 50, [-0.0] * 50, [0.0, -0.0] * 25, [-0.0, 0.0, 0.0], [0.0, -0.0, 1e-300],
        [3.0], [1.0, 2.0], [2.0, 2.0, 2.0, 2.0000000000000004], [math.nan] * 5, [math.inf, math.inf],
        [0.1, math.nan, 0.2], [0.1, math.inf, 0.1], [-math.inf, 0.3, 0.4], [_HUGE, _HUGE], [_HUGE, -_HUGE],
        [1.7e308, 1.7e308, 1.7e308], [-_HUGE, 1.0, math.nan], [5e-324, 5e-324], [5e-324, 0.0],
        [rng.gauss(0, 1) for _ in range(1000)], [rng.choice([0.25, 0.5]) for _ in range(300)],
    ]
    for _ in range(200):  # random mixes of the awkward values
        pool = [0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf, _HUGE, 1.7e308, 1e-310, rng.random()]
        cols.append([rng.choice(pool) for _ in range(rng.randint(1, 12))])
    return cols


def _picked_fields(st: Any) -> tuple[Any, ...]:
    return (st.present, st.logged, repr(st.first), repr(st.last), st.varies, st.first_text, st.last_text)


@pytest.mark.parametrize("nan_logged", [True, False])
def test_a_glance_at_doubles_says_what_the_full_statistics_say(nan_logged: bool) -> None:
    for col in _columns():
        full = column_stats(col, nan_logged, trend=False)
        for values in (array("d", col), col):
            assert _picked_fields(column_glance(values, nan_logged)) == _picked_fields(full), col


def test_a_glance_at_cells_that_are_not_all_doubles_is_the_full_read() -> None:
    for col in ([None, 0.5, None, 0.7], [(1, 4), "0.5", True, "abc", None], ["a", "b"], [], [None]):
        assert _picked_fields(column_glance(col, True)) == _picked_fields(column_stats(col, True, trend=False))


def test_a_glance_leaves_min_and_max_unworked() -> None:
    st = column_glance(array("d", [3.0, 1.0, 2.0]))
    assert st.moves is True and math.isnan(st.lo) and math.isnan(st.hi) and st.trend is None


def test_an_array_of_doubles_gives_the_statistics_of_the_same_list() -> None:
    rng = random.Random(3)
    series = [[rng.gauss(1, 0.2) + i / 500 for i in range(3000)], [float(i // 40) for i in range(2000)],
              [rng.choice([0.0, -0.0, 0.5]) for _ in range(400)], [1.0, _HUGE, 2.0], [0.1, math.nan, math.inf, 0.2]]
    for xs in series:
        a, b = column_stats(array("d", xs), True), column_stats(xs, True)
        assert repr(a) == repr(b)


def _hostile_rows(seed: int) -> list[dict[str, Any]]:
    """A run whose keys change mid-file, resumed from an earlier step, with constant, signed-zero, NaN, inf, huge,
    integer, text and bool columns, and more varying undeclared keys than the column budget."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for step in [*range(120), *range(80, 200)]:  # (the second stretch is a resume from step 80)
        r: dict[str, Any] = {"step": step, "loss": rng.gauss(1, 0.1), "lr": 3e-4, "zero": -0.0,
                             "signed": rng.choice([0.0, -0.0]), "tag": rng.choice(["a", "b"]), "ok": step % 3 == 0,
                             "count": rng.randint(0, 3), "huge": rng.choice([_HUGE, -_HUGE, 1.0])}
        r["kl"] = math.nan if step % 17 == 0 else math.inf if step == 150 else rng.random()
        if step >= 60:  # keys that arrive late, one that stops
            r["reward"] = rng.random()
            r.update({f"env/m{i}": rng.random() if i % 4 else 0.5 for i in range(30)})
        if step < 100:
            r["early"] = rng.random()
        rows.append(r)
    return rows


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_summary_picks_and_prints_the_same_from_glances_as_from_full_statistics(
        seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import steptable.summary.report as report

    stores = [store_of(tmp_path / name / "metrics.jsonl", _hostile_rows(seed + i)) for i, name in enumerate("ab")]
    cases = [[stores[0]], [stores[1]], stores]
    glanced = [report.summarize(runs, now=1.9e9, alerts={}) for runs in cases]
    monkeypatch.setattr(report, "column_glance", lambda values, nan_logged=False: column_stats(values, nan_logged,
                                                                                              trend=False))
    assert [report.summarize(runs, now=1.9e9, alerts={}) for runs in cases] == glanced
    shown = {line.split()[0] for line in glanced[0].splitlines()[2:] if line and not line.startswith("alerts")}
    assert {"loss", "kl", "huge", "count", "env/m1"} <= shown  # varying, with NaN / inf / huge doubles / integers
    assert not shown & {"zero", "signed", "lr", "env/m0", "env/m4", "env/m8"}  # constant, 0.0 against -0.0 too
    assert "resumed 80" in glanced[0]
