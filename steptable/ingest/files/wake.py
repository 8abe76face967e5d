"""How a Follower is woken: file notifications (watchfiles, debounced), with a stat of every followed file when
events are quiet and a full re-check every ``recheck`` seconds, or stat polling when asked for or when notification
is unavailable or fails. Each wake-up runs one of the Follower's passes and hands the changed runs to ``on_change``."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from steptable.ingest.files.follow import Follower

FALLBACK_POLL = 0.5  # seconds between polls when notification is unavailable
DEBOUNCE_MS = 40  # longest a burst of events is gathered before it is handled
IDLE_POLL = 0.5  # with notification: seconds without events after which every source is stat'ed anyway
STEP_MS = 10


def follow(follower: Follower, stop: threading.Event, on_change: Callable[[set[str]], None]) -> None:
    """Keep ``follower`` up to date until ``stop`` is set (blocking)."""
    _emit(follower.scan(), on_change)
    if follower.poll is None:
        try:
            _run_notify(follower, stop, on_change)
            return
        except Exception as e:  # no inotify, too many watches, a vanished root...: poll instead
            if stop.is_set():
                return
            follower.note(f"file notification failed ({type(e).__name__}: {e}); polling every {FALLBACK_POLL} s")
    _run_poll(follower, stop, on_change, follower.poll or FALLBACK_POLL)


class _Either:
    """``is_set()`` of either event: watchfiles stops on it (the user's stop, or our restart)."""

    def __init__(self, a: threading.Event, b: threading.Event) -> None:
        self.a, self.b = a, b

    def is_set(self) -> bool:
        return self.a.is_set() or self.b.is_set()


def _emit(changed: set[str], on_change: Callable[[set[str]], None]) -> None:
    if changed:
        on_change(changed)


def _run_poll(
    follower: Follower, stop: threading.Event, on_change: Callable[[set[str]], None], interval: float
) -> None:
    follower.mode = "poll"
    last_full = time.monotonic()
    while True:
        t0 = time.monotonic()
        full = follower.recheck_due(last_full)
        if full:
            last_full = t0
        _emit(follower.tick(discover=full), on_change)
        if stop.wait(max(0.0, interval - (time.monotonic() - t0))):
            return

def _run_notify(follower: Follower, stop: threading.Event, on_change: Callable[[set[str]], None]) -> None:
    import watchfiles  # imported here: ``scan()`` users never pay for it

    follower.mode = "notify"
    while not stop.is_set():
        targets = [r for r in follower.roots if os.path.exists(r)]
        if not targets:  # nothing to watch yet: look again every re-check
            if stop.wait(follower.recheck):
                return
            _emit(follower.scan(), on_change)
            continue
        restart = threading.Event()
        idents = _root_idents(follower.roots)
        last_full = time.monotonic()
        idle_ms = max(int(min(follower.recheck, IDLE_POLL) * 1000), 50)
        for changes in watchfiles.watch(*targets, stop_event=_Either(stop, restart), debounce=DEBOUNCE_MS,
                                        step=STEP_MS, rust_timeout=idle_ms, yield_on_timeout=True,
                                        raise_interrupt=False, ignore_permission_denied=True):
            if changes:
                changed = follower.on_events({Path(p) for _, p in changes})
            else:  # idle: stat every source (cheap), for events lost before the watch began or dropped
                changed = follower.tick(discover=False)
            if follower.recheck_due(last_full):
                last_full = time.monotonic()
                changed |= follower.scan()
                if _root_idents(follower.roots) != idents:  # a root appeared, vanished or was replaced: watch anew
                    restart.set()
            _emit(changed, on_change)

def _root_idents(roots: list[Path]) -> list[Any]:
    out: list[Any] = []
    for r in roots:
        try:
            st = r.stat()
            out.append((st.st_dev, st.st_ino))
        except OSError:
            out.append(None)
    return out
