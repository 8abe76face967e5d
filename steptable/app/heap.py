"""The watch's long-lived heap kept out of the garbage collector's full passes (``gc.freeze``).

A watch holds its modules, Textual's widgets, a sweep's thousands of run digests and every run's stores as long as
it runs (~220,000 tracked objects on a 2,000-run sweep). CPython's full collections walk them all: 30-160 ms of the
UI thread every few seconds, which is a new row's or a new run's way to the screen stopped for that long. Once the
first data is in (``settle``), what the process holds is frozen: the collector's passes then walk only what came
after. Objects that die later are still freed by their reference counts; only reference cycles among the frozen
ones wait for ``release`` (a few hundred garbage objects at the freeze: not worth a full collection first).
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_holders = 0


def settle() -> None:
    """Freeze what the process holds now; each call is undone by one ``release`` (any thread)."""
    global _holders
    with _lock:
        _holders += 1
        gc.freeze()


def release() -> None:
    """Undo one ``settle``; the last one gives the frozen objects back to the collector."""
    global _holders
    with _lock:
        _holders = max(0, _holders - 1)
        if not _holders:
            gc.unfreeze()
