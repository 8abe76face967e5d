"""The StepLogger's alert engine, fed rows in batches: the alerts of streaming each row through
:meth:`AlertEngine.update`, at a fraction of the cost where the rows are quiet.

Rows wait (only the cells the engine watches) until BATCH_ROWS have come or BATCH_S seconds have passed since the
first of them, whichever is first, and go through steptable.alerts.history's bulk path together (quiet stretches
advanced at once, the rest row by row: the same alerts, in the same order, as row by row). So a spike or a level
alert is said up to BATCH_ROWS rows (or the next row after BATCH_S seconds) after the row it names, which its line
says (``step N ...``). A row that comes BATCH_S seconds or more after the one before it (a slow run: minutes a step)
is fed at once, so a slow run's alerts are not a step late. A row with a watched cell that is not a finite number (a
NaN loss) is fed at once, with the rows before it: its alert is never late. :meth:`AlertFeed.drain` feeds what
waits (at the end of the run).
"""

from __future__ import annotations

from collections.abc import Mapping
from time import monotonic
from typing import Any

from steptable.alerts.engine import AlertEngine
from steptable.alerts.history import feed_columns
from steptable.alerts.rules import Alert

#: rows that wait for the batch at most (a spike in a 12 ms-a-step run is said within 0.8 s) ...
BATCH_ROWS = 64
#: ... and seconds since the first of them (a slow run's rows are fed one or two at a time)
BATCH_S = 2.0


class Batch:
    """When rows waiting for a batch are due: ``rows`` of them, ``seconds`` since the first, or a row ``seconds``
    after the one before (rows this far apart gain nothing by waiting for the next). Defaults: BATCH_ROWS,
    BATCH_S."""

    def __init__(self, rows: int | None = None, seconds: float | None = None) -> None:
        self.rows = max(int(BATCH_ROWS if rows is None else rows), 1)
        self.seconds = BATCH_S if seconds is None else seconds
        self._first = 0.0  # when the first waiting row came
        self._last = -float("inf")  # when the last row came

    def due(self, now: float, waiting: int) -> bool:
        """A row came at ``now`` (monotonic), ``waiting`` rows waiting with it: are they due?"""
        slow = now - self._last >= self.seconds
        self._last = now
        if waiting <= 1:
            self._first = now
        return slow or waiting >= self.rows or now - self._first >= self.seconds


class _Rows:
    """The waiting rows as history.feed_columns reads its store: ``value(i, key)`` (None: the row has no such key)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def value(self, i: int, key: str) -> Any:
        return self.rows[i].get(key)


class AlertFeed:
    """``engine`` fed in batches (see the module). Not thread-safe: the StepLogger calls it under its lock."""

    def __init__(self, engine: AlertEngine, rows: int | None = None, seconds: float | None = None) -> None:
        self.engine = engine
        self.batch = Batch(rows, seconds)
        self._wanted = engine.config.watched()
        self._steps: list[int] = []
        self._walls: list[float] = []
        self._cells: list[dict[str, Any]] = []

    @property
    def waiting(self) -> int:
        """Rows taken and not fed yet."""
        return len(self._steps)

    def add(self, step: int, row: Mapping[str, Any], wall: float, came: float | None = None) -> list[Alert]:
        """Take one row (as :meth:`AlertEngine.update` would: its step, raw cells, wall time); the alerts of the
        batch it completes (empty while the batch waits). ``came``: the monotonic() time the row came, where it is
        fed later (its batch is the one it would have joined then); None: now."""
        wanted = self._wanted
        cells = {k: v for k, v in row.items() if k in wanted}
        self._steps.append(step)
        self._walls.append(wall)
        self._cells.append(cells)
        due = self.batch.due(monotonic() if came is None else came, len(self._steps))
        if due or any(not (type(v) is float or type(v) is int) or v - v != 0 for v in cells.values()):
            return self.drain()
        return []

    def drain(self) -> list[Alert]:
        """Feed every waiting row now; their alerts."""
        steps, walls, rows = self._steps, self._walls, self._cells
        if not steps:
            return []
        self._steps, self._walls, self._cells = [], [], []
        keys = list(dict.fromkeys(k for r in rows for k in r))
        cols = [(k, [r.get(k) for r in rows]) for k in keys]
        return feed_columns(self.engine, _Rows(rows), cols, steps, walls, 0, len(steps), 0)
