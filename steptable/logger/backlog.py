"""The rows a StepLogger wrote without showing them (``StepLogger.record``), whose other work waits for a batch.

Such a row goes to the JSONL at once (a reader of the file sees it as soon as log() would have written it); what
only the end of the run or the alerts need of it waits here and is done for the waiting rows together: the row's
view (nested mappings spread out), its copy for the end-of-run dump, the fit of the columns declared without a
width (the run's description and table.txt at close) and its cells for the alert engine. They wait by the alert
feed's own rules (steptable.logger.alertfeed: BATCH_ROWS rows, BATCH_S seconds since the first, a row BATCH_S
seconds after the one before, a row with a cell that is not a finite number at once), so an alert is said when the
feed would have said it, and the same alerts in the same order; the logger catches up before anything that reads
that state (a row it shows, the dump, the table, the description, close, the interpreter's exit). Rows wait here
only while the feed holds none (rows log() gave it wait there, by their own batch's clock and count), and each
row reaches the feed with the time it came, so the feed batches it as it would have then.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from time import monotonic
from typing import Any

from steptable.alerts.rules import Alert
from steptable.logger.alertfeed import AlertFeed, Batch
from steptable.logger.sinks import report_once
from steptable.logger.writer import error_text
from steptable.table.rowvalues import flat, kept

#: a row of these value types alone waits (anything else, nested mappings and text included, is caught up at once)
NUMBERS = frozenset({float, int})


def step_number(step: Any, default: int) -> int:
    """The step as an int for the alert engine; ``default`` for a step that is not a finite number."""
    try:
        if isinstance(step, bool) or not isinstance(step, (int, float)):
            return default
        return int(step) if math.isfinite(step) else default
    except (OverflowError, ValueError):  # an int past float range
        return default


def _finite(values: Collection[Any]) -> bool:
    """Are ``values`` (floats and ints) all finite? In C: a NaN or an infinity makes their sum one (a sum of finite
    numbers that overflows, or an int past float range beside a float, only says False: a row caught up early)."""
    try:
        total = sum(values)
        return bool(total - total == 0)
    except OverflowError:
        return False


def row_view(cells: dict[str, Any], step: Any) -> dict[str, Any]:
    """The row as the columns and the alerts read it: nested mappings spread out under ``a/b`` keys, as the readers
    of the file name them, and its step."""
    view = flat(cells)
    return view if view.get("step") is not None else {**view, "step": step}


class Backlog:
    """The rows a logger wrote and has not seen yet (see the module). Not thread-safe: used under the logger's lock.
    What a row's work reaches: ``recent`` (the end-of-run dump's rows), ``fit`` (the widths of the columns
    declared without one), ``feed`` (None: no alerts) and ``say`` (its alerts printed); ``topic``: the logger's for
    failures reported once."""

    def __init__(self, recent: deque[dict[str, Any]], fit: Callable[[Mapping[str, Any]], None],
                 feed: AlertFeed | None, say: Callable[[Sequence[Alert]], None], topic: str) -> None:
        self._recent, self._fit, self._feed, self._say, self._topic = recent, fit, feed, say, topic
        #: (step, the frozen cells, wall time, the row's position in the run, monotonic() when it came)
        self._rows: deque[tuple[Any, dict[str, Any], float, int, float]] = deque()
        self._batch = Batch()  # (the feed's rules)

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, step: Any, cells: dict[str, Any], wall: float, index: int, numbers: bool) -> None:
        """Take a row just written (``index``: its position in the run, from 0; ``numbers``: its values are all
        floats and ints, as the caller found: a row of anything else is caught up at once); caught up with the rows
        before it where the alert feed would feed it now."""
        now = monotonic()
        rows = self._rows
        rows.append((step, cells, wall, index, now))
        if (self._batch.due(now, len(rows)) or not (numbers and _finite(cells.values()))
                or (self._feed is not None and self._feed.waiting)):  # (the feed's batch is open)
            self.catch_up()

    def catch_up(self, drain: bool = False) -> None:
        """Do the waiting rows' work, in order (a row that fails leaves those after it waiting), each row fed to
        the alert feed as it came (the alerts of the batches they complete said now); ``drain``: every waiting
        row's alerts are said now."""
        rows, alerts = self._rows, self._feed
        while rows:
            step, cells, wall, index, came = rows.popleft()
            view = row_view(cells, step)
            self._recent.append(kept(view))
            self._fit(view)
            if alerts is not None:
                self._say(alerts.add(step_number(step, index), view, wall, came))
        if drain and alerts is not None:
            self._say(alerts.drain())

    def fit_waiting(self) -> None:
        """Fit the columns declared without a width to the waiting rows, the rest of their work left waiting: for a
        description written from inside a row (a signal handler's close(), which the process may leave by
        ``os._exit``). Their catch-up fits them again, which changes nothing (widths only grow)."""
        for step, cells, *_ in self._rows:
            self._fit(row_view(cells, step))

    def say_waiting(self, lock: threading.RLock, wait: float = -1) -> None:
        """Catch up with the waiting rows and feed every row waiting for its alert batch, their alerts said (at
        close and at the interpreter's exit; ``wait``: seconds the logger's ``lock`` is waited for, -1 without end).
        Raises nothing (a failure is reported once)."""
        if not self._rows and (self._feed is None or not self._feed.waiting):
            return
        try:
            if not lock.acquire(timeout=wait):
                return
            try:
                self.catch_up(drain=True)
            finally:
                lock.release()
        except Exception as e:
            report_once(f"{self._topic}-alerts", f"steptable: the last rows' alerts failed ({error_text(e)})")
