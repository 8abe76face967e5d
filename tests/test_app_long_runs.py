"""The watch app over runs with long histories: a new row costs the alert thread and the stall check what the new
row costs, not what the history costs (copies of whole columns made a row ~50 ms at 1M rows)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from steptable.app.alerting import AlertScanner
from steptable.app.session import Session
from steptable.ingest import Follower
from tests.app.helpers import app_rows
from tests.helpers import spy_whole_copies, write_rows


def test_the_alert_thread_reads_only_the_new_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, app_rows(0, 300))
    f = Follower([tmp_path])
    f.scan()
    posted: list[Any] = []
    scanner = AlertScanner(lambda: f.stores, posted.append)
    (rid,) = f.stores
    assert scanner.scan(rid, f.stores[rid]) == []
    whole = spy_whole_copies(monkeypatch)
    write_rows(path, app_rows(300, 303, loss=math.nan))
    f.scan()
    found = scanner.scan(rid, f.stores[rid])
    assert whole == []
    # the new rows, and only they, with their own steps: one non-finite alert at the first of them
    assert [(a.step, a.column, a.kind) for a in found] == [(300, "loss", "nonfinite")]
    write_rows(path, app_rows(303, 305))
    f.scan()
    assert scanner.scan(rid, f.stores[rid]) == [] and whole == []


def test_the_alert_thread_after_a_resume_feeds_from_the_resume_point(tmp_path: Path) -> None:
    """A resumed run rewrites steps already fed: those are fed again (with the ranged copies, the offsets must
    still point at the right rows)."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, app_rows(0, 200))
    f = Follower([tmp_path])
    f.scan()
    scanner = AlertScanner(lambda: f.stores, lambda m: None)
    (rid,) = f.stores
    scanner.scan(rid, f.stores[rid])
    write_rows(path, app_rows(150, 160, loss=math.inf))  # resumed from a checkpoint at 150, then diverged
    f.scan()
    found = scanner.scan(rid, f.stores[rid])
    assert [(a.step, a.kind) for a in found] == [(150, "nonfinite")]


def test_the_stall_check_reads_the_last_rows_clock_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, app_rows(0, 500))
    f = Follower([tmp_path])
    f.scan()
    session = Session()
    for rid, store in f.stores.items():
        session.update(rid, store)
    whole = spy_whole_copies(monkeypatch)
    last = 1.7e9 + 2 * 499
    assert session.check_stalls(last + 10) == {}
    stalls = session.check_stalls(last + 3600)
    assert list(stalls.values()) == [pytest.approx(3600)]
    session.events(recent=3)
    assert "wall_times" not in whole and "steps" not in whole


def test_an_alert_found_again_after_a_reset_is_counted_once(tmp_path: Path) -> None:
    """A file read again from the top (moved away and back, rewritten with the same rows) gives the scanner the same
    alerts again: the session's counts and events list them once."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [*app_rows(0, 60), *app_rows(60, 61, loss=math.nan)])
    f = Follower([tmp_path])
    f.scan()
    (rid,) = f.stores
    session = Session()
    session.update(rid, f.stores[rid])
    for _ in range(2):
        scanner = AlertScanner(lambda: f.stores, lambda m: None)  # (a reset: the engine starts over)
        session.add_alerts(rid, scanner.scan(rid, f.stores[rid]))
    assert session.counts == {"E": 1} and len(session.alerts) == 1
