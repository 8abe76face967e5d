"""trackio's rename of a run (``trackio.Api().runs(project)[i].rename(name)``), as a reader that follows the database
sees it: in one transaction it deletes the run's rows and writes them again, with new ids (past every id read), its
``run_id`` and the new name. Read as new rows, they were a resume at the run's first step, every row again.

A run's rows are taken to be renamed where rows of its id come under another name and none of the rows read of it
are left (trackio deletes them all; rows of the old name still there: another name in the same run, read as rows).
The copies are then the run's next rows, as many as were read of it: trackio writes them together; rows the reader
had not reached when they were deleted are among them, in the order trackio read them by (one of its indexes: by
step or by time), and those past the count are taken as new (the right ones where the steps only grow). A database
without run ids (an older trackio) knows its runs by name: a renamed run is read as a new one.
"""

from __future__ import annotations

import sqlite3
from typing import Any


class Renames:
    """Per run (its key): the rows read, the last row id read, and the copies still to come of a rename."""

    def __init__(self) -> None:
        self._count: dict[str, int] = {}
        self._last: dict[str, int] = {}
        self._copies: dict[str, int] = {}

    def gone(self, con: sqlite3.Connection, run: str, run_id: Any) -> bool:
        """Are the rows read of run ``run`` (trackio's ``run_id``, as read) no longer in the database? False for a
        run of which none were read."""
        last = self._last.get(run)
        if last is None:
            return False
        # (the id as read, bytes: cast back to TEXT, as stored, for the comparison to match)
        q = "SELECT 1 FROM metrics WHERE run_id = CAST(? AS TEXT) AND id <= ? LIMIT 1"
        return con.execute(q, (run_id, last)).fetchone() is None

    def renamed(self, run: str) -> None:
        """Run ``run``'s rows were written again: as many copies as were read of it come next."""
        self._copies[run] = self._count.get(run, 0)

    def split(self, run: str, rows: list[Any]) -> tuple[list[Any], list[Any]]:
        """Run ``run``'s next rows (in id order) as (copies of rows read, new rows)."""
        n = self._copies.get(run, 0)
        self._last[run] = rows[-1][0]
        if not n:
            self._count[run] = self._count.get(run, 0) + len(rows)
            return [], rows
        if n > len(rows):
            self._copies[run] = n - len(rows)
        else:
            del self._copies[run]
        copies, rows_new = rows[:n], rows[n:]
        self._count[run] = self._count.get(run, 0) + len(rows_new)
        return copies, rows_new
