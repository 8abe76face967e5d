"""A trackio database as SQLite: opened read-only without ever blocking its writer, recognised by its schema, its
TEXT read as bytes.

:func:`connect` opens a database read-only (``mode=ro``, ``PRAGMA query_only``): a reader never takes a write lock,
and in WAL mode never blocks the writer; it waits at most 50 ms for a lock. TEXT comes back as bytes, so a damaged
page's bytes that are not UTF-8 never raise inside SQLite's own decode (:func:`text` reads them, replaced). Every
error a ``with connect(...)`` block lets out is a ``sqlite3.Error``. :func:`is_trackio` tells a trackio database
from another SQLite file (a damaged one is still recognised, for the reader to report).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from steptable.ingest.files.regular import open_regular
from steptable.ingest.readers.trackiodamage import DAMAGED, why

SQLITE_MAGIC = b"SQLite format 3\x00"


@contextlib.contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection that waits at most 50 ms for a lock (then the poll gives up until the next one). TEXT
    comes back as bytes: a damaged page can hold bytes that are not UTF-8, which SQLite's own decode would raise on
    (names and clocks go through :func:`text`; the metrics objects are handed on as bytes anyway). Any error the
    block lets out is a ``sqlite3.Error`` (a UnicodeDecodeError of :data:`DAMAGED` becomes a DatabaseError)."""
    uri = Path(os.path.abspath(path)).as_uri() + "?mode=ro"
    con = sqlite3.connect(uri, uri=True, timeout=0.05, check_same_thread=False)
    con.text_factory = bytes
    try:
        con.execute("PRAGMA query_only = 1")
        yield con
    except UnicodeDecodeError as e:
        raise sqlite3.DatabaseError(why(e)) from e
    finally:
        con.close()


def text(v: Any) -> str:
    """A TEXT value read as bytes, as a string (bytes that are not UTF-8 replaced)."""
    return v.decode("utf-8", "replace") if type(v) is bytes else str(v)


def is_trackio(path: Path) -> bool:
    """A SQLite file with trackio's ``metrics`` table: its schema text near the start (a damaged database is still
    recognised, and reported by the reader), else asked of SQLite."""
    try:
        with open_regular(path) as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    if not head.startswith(SQLITE_MAGIC):
        return False
    if b"CREATE TABLE metrics" in head and b"run_name" in head:
        return True
    try:
        with connect(path) as con:
            cols = {text(r[1]) for r in con.execute("PRAGMA table_info(metrics)")}
    except sqlite3.OperationalError:  # locked, or not a database
        return False
    except DAMAGED:  # damaged where its schema is: the reader reports what it can read
        return True
    return {"id", "run_name", "step", "metrics"} <= cols
