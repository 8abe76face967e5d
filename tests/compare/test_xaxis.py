"""The x axis: steps, cumulative counters, per-step amounts summed, the clock; resumes never count twice."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from steptable.compare import XError, x_values
from tests.compare.helpers import MemRun


def _store(path: Path, rows: list[dict[str, Any]]) -> Any:
    import json

    from steptable.ingest import Follower

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    fol = Follower([path.parent])
    fol.scan()
    fol.finish()
    (store,) = fol.stores.values()
    return store


def test_step_and_named_axes() -> None:
    run = MemRun("a", [0, 2, 4], {"num_tokens": [100.0, 300.0, 600.0], "samples": [8.0, 8.0, 8.0]})
    assert list(x_values(run, "step").values) == [0, 2, 4]
    ax = x_values(run, "tokens")  # TRL's num_tokens: a running total already
    assert (ax.key, ax.mode, list(ax.values)) == ("num_tokens", "cum", [100, 300, 600])
    ax = x_values(run, "samples")  # the same count every step: a per-step amount
    assert (ax.key, ax.mode, list(ax.values)) == ("samples", "sum", [8, 16, 24])
    ax = x_values(run, "samples:cum")  # the guess overridden
    assert ax.mode == "cum" and list(ax.values) == [8, 8, 8]
    with pytest.raises(XError, match="no numeric any of num_tokens"):
        x_values(MemRun("b", [0], {"m": [1.0]}), "tokens")
    with pytest.raises(XError, match="'lr'"):
        x_values(run, "lr")


def test_verl_per_step_tokens_are_summed() -> None:
    per = [1000.0, 1200.0, 900.0, math.nan, 1100.0]  # varying, one step without a value
    ax = x_values(MemRun("a", range(5), {"perf/total_num_tokens": per}), "tokens")
    assert ax.mode == "sum" and list(ax.values) == [1000, 2200, 3100, 3100, 4200]


def test_gaps_and_leading_rows_of_a_counter() -> None:
    ax = x_values(MemRun("a", range(5), {"num_tokens": [math.nan, 10.0, math.nan, 30.0, 40.0]}), "tokens")
    assert list(ax.values) == [-math.inf, 10, 10, 30, 40]
    assert (ax.first, ax.last) == (10, 40)
    assert ax.rows(10, 30) == (1, 4)


def test_a_resume_does_not_count_twice(tmp_path: Path) -> None:
    """Rows 0-99 then a restart from step 50: the store keeps each step once, so the summed tokens count each once."""
    rows = [{"step": s, "perf/total_num_tokens": 10, "loss": 1.0} for s in range(100)]
    rows += [{"step": s, "perf/total_num_tokens": 10, "loss": 1.0} for s in range(50, 150)]
    store = _store(tmp_path / "r" / "metrics.jsonl", rows)
    assert store.resumes == [50]
    ax = x_values(store, "tokens")
    assert ax.values[-1] == 1500  # 150 steps, not 200


def test_a_counter_restarted_at_zero_goes_on() -> None:
    counter = [100.0, 200.0, 300.0, 50.0, 150.0]  # the process restarted without restoring its counter
    ax = x_values(MemRun("a", range(5), {"num_tokens": counter}, resumes=[3]), "tokens")
    assert ax.mode == "cum" and list(ax.values) == [100, 200, 300, 350, 450]


def test_time_from_runtime_or_the_files_clock(tmp_path: Path) -> None:
    ax = x_values(MemRun("a", range(3), {"_runtime": [1.5, 3.0, 4.5]}), "time")
    assert (ax.key, list(ax.values)) == ("_runtime", [1.5, 3.0, 4.5])
    rows = [{"step": s, "ts": 1.8e9 + 2 * s, "m": 1.0} for s in range(10)]
    rows += [{"step": s, "ts": 1.8e9 + 1000 + 2 * s, "m": 1.0} for s in range(5, 10)]  # a restart after downtime
    store = _store(tmp_path / "c" / "metrics.jsonl", rows)
    ax = x_values(store, "time")
    assert ax.mode == "clock" and ax.values[-1] == pytest.approx(2 * 9)  # the downtime counts as one step
    with pytest.raises(XError, match="clock"):
        x_values(MemRun("b", range(3), {"m": [1.0] * 3}, walls=[math.nan] * 3), "time")
