"""A damaged trackio database read around its damage: past the last id read, one id at a time, so that a damaged page
costs the rows on it and not the rest; each range of unreadable ids reported.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from steptable.ingest.parse import BadLine

#: what reading a damaged database raises: SQLite's errors, and UnicodeDecodeError where SQLite's message quotes a
#: damaged schema's bytes that are not UTF-8 (Python decodes the message before it can raise the error)
DAMAGED = (sqlite3.DatabaseError, UnicodeDecodeError)
#: ids tried one by one past the last readable row of a damaged database whose last id is unknown
MAX_PROBE = 1000


def why(e: BaseException) -> str:
    """What went wrong, for a report (a message that could not be decoded is said as what it means)."""
    return "its schema is unreadable" if isinstance(e, UnicodeDecodeError) else str(e)


def around_damage(con: sqlite3.Connection, columns: Callable[[sqlite3.Connection], str], after: int, batch: int,
                  label: str, err: Exception) -> tuple[list[Any], list[BadLine], int, bool]:
    """The rows past id ``after`` (``batch`` ids at most), each read alone with ``columns(con)``: (the rows read,
    the problems, the last id passed, whether ids are left past it). The last id passed is ``after`` where none was
    read nor found unreadable: ids past the damage are read next time only if new ones come."""
    bad = [BadLine(label, 0, f"database damaged ({why(err)}); reading row by row")]
    hi = None
    for q in ("SELECT seq FROM sqlite_sequence WHERE name = 'metrics'", "SELECT max(id) FROM metrics"):
        try:
            top = con.execute(q).fetchone()
            hi = int(top[0])
            break
        except (*DAMAGED, TypeError, ValueError, IndexError):
            continue
    rows: list[Any] = []
    lost: list[int] = []
    rid = after
    stop = min(hi, after + batch) if hi is not None else after + batch
    while rid < stop:
        rid += 1
        try:
            r = con.execute(f"SELECT {columns(con)} FROM metrics WHERE id = ?", (rid,)).fetchone()
        except DAMAGED:
            lost.append(rid)
            if hi is None and len(lost) >= MAX_PROBE and (not rows or rid - rows[-1][0] >= MAX_PROBE):
                break  # no known last id and nothing readable for a while: the rest is gone
            continue
        if r is not None:
            rows.append(r)
    if lost:
        bad.append(BadLine(label, 0, f"rows id {lost[0]}-{lost[-1]}: {len(lost)} unreadable; skipped"))
    if not (rows or lost):
        return rows, bad, after, False
    last = max([after, *lost, *(r[0] for r in rows)])
    return rows, bad, last, hi is not None and last < hi
