"""trackio traces and tables: the ``trackio.Trace`` objects a run logged (verl's validation generations), by step,
and the ``trackio.Table`` rows it logged (TRL's completions).

``trackio.log({"val/generations": [trackio.Trace(messages=[...], metadata={...})]}, step=s)`` stores each trace as a
row of the project database's ``traces`` table: ``(run_name, step, key, trace_index, messages, metadata)``, the last
two JSON (a list of ``{role, content}`` and an object). That table is trackio's record of them (the session files
under ``traces/`` are a copy for the Hub). A database from a trackio that predates traces has no such table: no
traces. A table is a value of its metrics row, ``{"_type": "trackio.table", "_value": [row objects]}`` (where it is:
:attr:`steptable.ingest.readers.trackio.TrackioReader.tables`). Read-only, as the metrics are
(:func:`steptable.ingest.readers.trackio.connect`); the JSON is decoded without trusting it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from steptable.ingest.readers.trackiodamage import DAMAGED
from steptable.ingest.readers.trackiodb import connect, text

_DECODE = msgspec.json.Decoder()
#: traces of one step read at most (a viewer shows a page of them; a step is not a whole run's)
MAX_TRACES = 2000


@dataclass(frozen=True, slots=True)
class Trace:
    """One logged trace: the key it was logged under, its place in that list, its messages and metadata as decoded
    (any JSON value: the viewer checks their shape), or ``error`` where they could not be decoded."""

    key: str
    index: int
    messages: Any
    metadata: Any
    error: str = ""


def _of_run(con: sqlite3.Connection, run: str, what: str, more: str = "", args: tuple[Any, ...] = ()) -> list[Any]:
    """``SELECT what FROM traces`` of run ``run`` (then ``more``, with ``args`` after the run's parameters).

    trackio indexes traces by run id, not by name: a name's ids come from the ``configs`` table (indexed by name;
    trackio writes a run's row with its first log, and renames it with the run), so a step's traces, and the steps
    that have some, are read from the index, not by scanning every run's text.
    A database whose ``configs`` has no run ids, or no row for this name, is read by name."""
    by_id = f"SELECT {what} FROM traces WHERE run_id IN (SELECT run_id FROM configs WHERE run_name = ?)"
    try:
        if con.execute("SELECT 1 FROM configs WHERE run_name = ? LIMIT 1", (run,)).fetchone() is not None:
            return con.execute(f"{by_id} {more}", (run, *args)).fetchall()
    except sqlite3.OperationalError as e:
        if "no such column" not in str(e) and "no such table: configs" not in str(e):
            raise
    return con.execute(f"SELECT {what} FROM traces WHERE run_name = ? {more}", (run, *args)).fetchall()


def has_traces(db: Path, run: str) -> bool:
    """Did run ``run`` of database ``db`` log any trace? False where it cannot be told (no table, locked)."""
    try:
        with connect(db) as con:
            return bool(_of_run(con, run, "1", "LIMIT 1"))
    except (sqlite3.Error, *DAMAGED):
        return False


def trace_steps(db: Path, run: str) -> list[int]:
    """The steps at which run ``run`` logged traces, ascending. Raises sqlite3.Error (no table: [])."""
    try:
        with connect(db) as con:
            return [r[0] for r in _of_run(con, run, "DISTINCT step", "ORDER BY step") if type(r[0]) is int]
    except sqlite3.OperationalError as e:
        if "no such table: traces" in str(e):
            return []
        raise


def traces_at(db: Path, run: str, step: int) -> list[Trace]:
    """The traces run ``run`` logged at ``step``, by key and place (at most :data:`MAX_TRACES`). Raises
    sqlite3.Error."""
    with connect(db) as con:
        rows = _of_run(con, run, "key, trace_index, messages, metadata", "AND step = ? ORDER BY key, trace_index"
                       " LIMIT ?", (step, MAX_TRACES))
    out = []
    for key, index, messages, metadata in rows:
        try:
            out.append(Trace(text(key), index if type(index) is int else 0, _decode(messages), _decode(metadata)))
        except (msgspec.DecodeError, TypeError, ValueError) as e:
            out.append(Trace(text(key), index if type(index) is int else 0, None, None, str(e)[:500]))
    return out


def _decode(v: Any) -> Any:
    if v is None:
        return None
    return _DECODE.decode(v if isinstance(v, bytes) else str(v).encode())


def table_rows(db: Path, row_id: int) -> list[Any]:
    """The rows of the tables logged in metrics row ``row_id`` of ``db``, each a JSON value as decoded (TRL's: an
    object of step, prompt, completion, one value per reward function, advantage). Raises sqlite3.Error, or
    msgspec.DecodeError for a row that is no JSON."""
    with connect(db) as con:
        got = con.execute("SELECT metrics FROM metrics WHERE id = ?", (row_id,)).fetchone()
    obj = _decode(got[0]) if got is not None else None
    out: list[Any] = []
    for v in obj.values() if isinstance(obj, dict) else ():
        if isinstance(v, dict) and v.get("_type") == "trackio.table" and isinstance(rows := v.get("_value"), list):
            out += rows
    return out
