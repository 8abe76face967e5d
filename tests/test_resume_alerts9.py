"""A run restarted from a checkpoint: the alerts of the rows the restart replaced (why it was restarted) are still
said by a reader that meets the file after the restart."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, write_rows

from steptable.ingest import Follower
from steptable.ingest.store import MAX_REPLACED_ALERTS


def _rows(steps: range, rng: random.Random, nan_from: float = math.inf) -> list[dict[str, Any]]:
    return [{"step": s, "loss": math.nan if s >= nan_from else 0.1 + rng.gauss(0, 0.01),
             "grad_norm": 0.5 + rng.gauss(0, 0.05)} for s in steps]


def test_a_nan_before_a_restart_is_still_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The loss went NaN at step 1090, the run was restarted from its step-1000 checkpoint: summary an hour later
    said "alerts 0" (the NaN rows were replaced), and nothing told why the run had been restarted."""
    rng = random.Random(0)
    write_rows(tmp_path / "r" / "metrics.jsonl", _rows(range(1100), rng, nan_from=1090) + _rows(range(1000, 1150), rng))
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0, err
    assert "E step 1090 loss non-finite (nan) after 1090 finite steps (a row the resume at step 1000 replaced)" in out
    assert "resumed 1000" in out
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)  # exit 1 on it, as before the restart
    assert rc == 1 and "step 1090 loss non-finite (nan)" in out and "the resume at step 1000 replaced" in out, err


def test_a_clean_restart_says_nothing_and_replaced_alerts_are_bounded(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(1)
    write_rows(tmp_path / "r" / "metrics.jsonl", _rows(range(600), rng) + _rows(range(500, 700), rng))
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "alerts 0" in out and "replaced" not in out, out
    # a run restarted again and again after a NaN: the first alerts of the replaced rows are kept, no more
    rows: list[dict[str, Any]] = []
    for _ in range(3 * MAX_REPLACED_ALERTS):
        rows += _rows(range(40), rng, nan_from=30)
    write_rows(tmp_path / "many" / "metrics.jsonl", rows)
    f = Follower([tmp_path / "many"])
    f.scan()
    (store,) = f.stores.values()
    assert len(store.replaced) == MAX_REPLACED_ALERTS and all(a.step == 30 for a in store.replaced)


def test_the_app_says_them_once_whether_or_not_it_saw_the_rows(tmp_path: Path) -> None:
    from steptable.app.alerting import AlertScanner

    rng = random.Random(2)
    crashed, again = _rows(range(1100), rng, nan_from=1090), _rows(range(1000, 1150), rng)
    # opened after the restart: the replaced rows' alert, said once
    write_rows(tmp_path / "late" / "r" / "metrics.jsonl", crashed + again)
    f = Follower([tmp_path / "late"])
    f.scan()
    scanner = AlertScanner(lambda: f.stores, lambda m: None)
    (rid,) = f.stores
    found = scanner.scan(rid, f.stores[rid])
    assert [(a.level, a.step, a.kind) for a in found] == [("E", 1090, "nonfinite")]
    assert "replaced" in found[0].message and scanner.scan(rid, f.stores[rid]) == []
    # open while the run crashed: said when the rows came, not again at the restart
    path = tmp_path / "live" / "r" / "metrics.jsonl"
    write_rows(path, crashed)
    f = Follower([tmp_path / "live"])
    f.scan()
    scanner = AlertScanner(lambda: f.stores, lambda m: None)
    (rid,) = f.stores
    assert [(a.step, a.kind) for a in scanner.scan(rid, f.stores[rid])] == [(1090, "nonfinite")]
    write_rows(path, again)
    f.scan()
    assert scanner.scan(rid, f.stores[rid]) == []
