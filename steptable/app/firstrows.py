"""What waits for the app's first data rows to be on screen: garbage collection, paused while the app starts."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from typing import Any, Protocol

#: longest after the app's mount that the callbacks wait for rows (a path with no runs yet shows none)
FIRST_ROWS_WAIT = 3.0


class _Grid(Protocol):
    drawn_rows: bool


class _Host(Protocol):
    def call_after_refresh(self, callback: Callable[..., Any], *args: Any) -> bool: ...

    def set_timer(self, delay: float, callback: Callable[[], Any]) -> Any: ...


class FirstRows:
    """Callbacks run once: after the first refresh that drew a data row of any table, or ``FIRST_ROWS_WAIT`` s after
    ``start``, or at ``finish`` (the app unmounting), whichever comes first.

    Garbage collection is off from ``start`` until then, where it was on: the start's objects (widgets, styles, the
    previews' rows) live on, and a full collection that scans them all fell within the first frame (17-21 ms of
    its ~300 ms of CPU)."""

    def __init__(self, host: _Host, grids: Callable[[], Iterable[_Grid]]) -> None:
        self._host = host
        self._grids = grids
        self._waiting: list[Callable[[], None]] = []
        self._checking = False

    def add(self, callback: Callable[[], None]) -> None:
        self._waiting.append(callback)

    def start(self) -> None:
        """The app is mounted: collection pauses, the wait's limit starts."""
        if gc.isenabled():
            gc.disable()
            self._waiting.append(gc.enable)
        if self._waiting:
            self._host.set_timer(FIRST_ROWS_WAIT, self.finish)

    def check(self) -> None:
        """Rows were taken: look after each refresh until one of them is drawn."""
        if self._waiting and not self._checking:
            self._checking = True
            self._host.call_after_refresh(self._look)

    def _look(self) -> None:
        self._checking = False
        if not self._waiting:
            return
        if any(g.drawn_rows for g in self._grids()):
            self.finish()
        else:
            self.check()

    def finish(self) -> None:
        waiting, self._waiting = self._waiting, []
        for callback in waiting:
            callback()
