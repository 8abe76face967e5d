"""steptable.ingest.files.wake: how a Follower is woken in its thread: file notifications alone deliver,
and polling takes over when notification fails."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import steptable.ingest.files.wake as wake_mod
from steptable.ingest import Follower
from tests.helpers import write_rows
from tests.ingest.helpers import rew_rows


def run_loop(f: Follower) -> tuple[threading.Event, threading.Thread, list[set[str]], threading.Event]:
    stop = threading.Event()
    got = threading.Event()
    seen: list[set[str]] = []

    def on_change(ids: set[str]) -> None:
        seen.append(ids)
        got.set()

    t = threading.Thread(target=f.run, args=(stop, on_change), daemon=True)
    t.start()
    return stop, t, seen, got


def wait_for(cond: Any, got: threading.Event, timeout: float = 10.0) -> None:
    while not cond():
        got.clear()
        if cond():
            return
        assert got.wait(timeout), "no change reported"


@pytest.mark.parametrize("poll", [0.05, None], ids=["polling", "notify"])
def test_threaded_loop_follows_appends_and_new_runs(tmp_path: Path, poll: float | None) -> None:
    root = tmp_path / "logs"
    write_rows(root / "a" / "metrics.jsonl", rew_rows(0, 2))
    f = Follower([root], poll=poll, recheck=0.2 if poll else 60.0)  # notify: events alone must do it
    stop, t, seen, got = run_loop(f)
    try:
        wait_for(lambda: "a/metrics.jsonl" in f.stores and len(f.stores["a/metrics.jsonl"]) == 2, got)
        write_rows(root / "a" / "metrics.jsonl", rew_rows(2, 5))
        wait_for(lambda: len(f.stores["a/metrics.jsonl"]) == 5, got)
        write_rows(root / "b" / "metrics.jsonl", rew_rows(0, 1))
        wait_for(lambda: "b/metrics.jsonl" in f.stores and len(f.stores["b/metrics.jsonl"]) == 1, got)
    finally:
        stop.set()
        t.join(5)
    assert not t.is_alive() and f.mode == ("poll" if poll else "notify")
    assert {"a/metrics.jsonl"} in seen and f.errors == []


def test_notify_events_alone_deliver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No idle stat, no re-check: once the watch is up, appends and new runs arrive through events only."""
    monkeypatch.setattr(wake_mod, "IDLE_POLL", 60.0)
    root = tmp_path / "logs"
    write_rows(root / "a" / "metrics.jsonl", rew_rows(0, 1))
    f = Follower([root], recheck=60.0)
    stop, t, _, got = run_loop(f)
    try:
        wait_for(lambda: "a/metrics.jsonl" in f.stores, got)
        store = f.stores["a/metrics.jsonl"]
        for n in range(1, 100):  # until the watch is up (rows appended before it are seen by the next event)
            write_rows(root / "a" / "metrics.jsonl", rew_rows(n, n + 1))
            if got.wait(0.1) and len(store) == n + 1:
                break
            got.clear()
        assert len(store) == n + 1
        write_rows(root / "b" / "metrics.jsonl", rew_rows(0, 1))
        wait_for(lambda: "b/metrics.jsonl" in f.stores and len(f.stores["b/metrics.jsonl"]) == 1, got)
    finally:
        stop.set()
        t.join(5)


def test_notify_failure_falls_back_to_polling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import watchfiles

    def broken(*args: Any, **kw: Any) -> Any:
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watchfiles, "watch", broken)
    write_rows(tmp_path / "a" / "metrics.jsonl", rew_rows(0, 1))
    f = Follower([tmp_path], recheck=0.2)
    stop, t, _, got = run_loop(f)
    try:
        wait_for(lambda: "a/metrics.jsonl" in f.stores, got)
        write_rows(tmp_path / "a" / "metrics.jsonl", rew_rows(1, 2))
        wait_for(lambda: len(f.stores["a/metrics.jsonl"]) == 2, got)
    finally:
        stop.set()
        t.join(5)
    assert f.mode == "poll" and "polling every" in f.errors[0]
