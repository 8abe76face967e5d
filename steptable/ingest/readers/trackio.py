"""trackio databases (``<project>.db`` under ``$TRACKIO_DIR``): one run per run, new rows by id.

trackio keeps a project in SQLite (WAL journal): table ``metrics(id, run_id, timestamp, run_name, step, metrics)``,
``metrics`` a JSON object (a non-finite value stored as the string ``"NaN"``/``"Infinity"``: read as non-finite),
``configs(run_id, run_name, config)``. A run is a ``run_id`` where the table has one (a run started again under its
name without ``resume`` is another run: its key is ``<name>#2``; a resumed one keeps its id), else a ``run_name``.
Rows are read by one query on ids; the ``metrics`` objects of a run are handed to the JSONL reader as one chunk of
lines (its typed batch decode makes columns in C), each with the row's step and clock added (the step: the trainer's
own ``train/global_step`` where the row holds it, trackio's count kept as ``_step``; else trackio's ``step``), and
read one by one only when one is unreadable (then each bad row is reported by its id) or holds those keys inside a
``data`` object. Media values logged in a row (an image, a table...) are left out of it, its tables noted
(:mod:`~steptable.ingest.readers.trackiomedia`). The database is opened read-only (``mode=ro``,
:mod:`~steptable.ingest.readers.trackiodb`): a reader never takes a write lock, and in WAL mode never blocks the
writer; each poll is one short read of the rows past the last id seen, at most :data:`BATCH` rows a read
(:attr:`TrackioReader.more`: rows are left, read on at once). A database that is busy (a writer in rollback-journal
mode) is read at the next poll; one that is damaged is read row by row around the damage, each unreadable id range
reported (:mod:`~steptable.ingest.readers.trackiodamage`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from steptable.ingest.parse import BadLine, flatten, step_of
from steptable.ingest.parsed import Parsed, counter
from steptable.ingest.readers.jsonl import PIECE, JsonlParser
from steptable.ingest.readers.trackerlists import lists_as_text
from steptable.ingest.readers.trackernulls import drop_nulls, without_nones
from steptable.ingest.readers.trackiodamage import DAMAGED, around_damage
from steptable.ingest.readers.trackiodb import connect, text
from steptable.ingest.readers.trackiomedia import MEDIA, table_steps, without_media
from steptable.ingest.readers.trackiorenames import Renames
from steptable.table.stepkeys import TRACKER_STEP_KEYS

#: rows read at most by one :meth:`TrackioReader.read` (its caller reads on while it says there are more: the rows
#: parsed and not yet handed to the runs stay bounded)
BATCH = 200_000
_DECODE = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder().encode
#: lines of a run's first chunk handed on first (the JSONL reader learns the keys; its typed decode takes the rest)
FIRST_LINES = 64
#: the row's own keys: a ``data`` object (verl's envelope, unwrapped by the JSONL reader) must not hold them
_CLASHES = frozenset({"step", "_step", "_timestamp"})
#: the trainer's own step in a row's JSON text (compact, as trackio stores it): its integer value
_OWN_KEY = b'"%s"' % TRACKER_STEP_KEYS[0].encode()
_OWN_VALUE = re.compile(rb'\s*:\s*(-?\d{1,18})\s*[,}]')
#: rows fetched at first, then about :data:`PIECE` bytes of metrics at a time within these bounds: each fetch is
#: decoded while its rows are still in the CPU's cache (20,000 rows of 2 KB fetched at once read 1.6x slower)
FETCH, FETCH_MIN, FETCH_MAX = 128, 32, 4096


def own_step(blob: bytes) -> int | None:
    """The trainer's own step a row's ``metrics`` JSON holds (table.stepkeys.TRACKER_STEP_KEYS: transformers' and
    TRL's callbacks log it in each row and leave trackio to count its ``log`` calls, an evaluation one more), else
    None. A JSON string holds no unescaped quote, so the key found is a key."""
    at = blob.rfind(_OWN_KEY)
    if at < 0:
        return None
    m = _OWN_VALUE.match(blob, at + len(_OWN_KEY))
    return None if m is None else int(m.group(1))


def _unix(ts: Any) -> float | None:
    if not isinstance(ts, (str, bytes)):
        return None
    try:
        return datetime.fromisoformat(text(ts)).timestamp()
    except ValueError:
        return None


class TrackioReader:
    """New rows of a trackio database, by run (its key: :meth:`key`; :attr:`names` gives its name)."""

    def __init__(self, path: Path, label: str) -> None:
        self.path = path
        self.label = label
        self.last_id = 0
        self._sig: tuple[int, ...] | None = None
        self._configs: dict[str, Any] = {}  # trackio run id (older trackio: run name) -> its config
        self.names: dict[str, str] = {}  # run key -> its run name
        self._keys: dict[str, str] = {}  # trackio run id -> run key
        self._ids: dict[str, str] = {}  # run key -> trackio run id
        self._named: dict[str, int] = {}  # run name -> the runs of that name so far
        self._id_col: bool | None = None  # the metrics table has run_id (older trackio: runs by name)
        self._renames = Renames()
        self._other: set[tuple[str, Any]] = set()  # (run key, name) of rows under another name, not a rename
        self.renamed: set[str] = set()  # runs renamed since the last read (handed on as their new name)
        #: run -> (row id, key, step) of each table logged since the last read (handed on as meta)
        self.tables: dict[str, list[tuple[int, str, int]]] = {}
        self._parsers: dict[str, JsonlParser] = {}
        self._clocks: dict[Any, float | None] = {}  # timestamp text -> Unix time (trackio stamps rows in batches)
        self._ends: dict[Any, bytes] = {}
        self._fetch = FETCH
        self.more = False  # the last read stopped at BATCH rows (or ids) with more past them: read again now

    def _signature(self) -> tuple[int, ...]:
        sig: list[int] = []
        for p in (self.path, Path(f"{self.path}-wal")):
            try:
                st = os.stat(p)
                sig += [st.st_ino, st.st_size, st.st_mtime_ns]
            except OSError:
                sig += [0, 0, 0]
        return tuple(sig)

    def changed(self) -> bool:
        """The database (or its WAL) changed since the last read (a stat or two: a quiet run costs no query)."""
        return self._signature() != self._sig

    def read(self) -> tuple[dict[str, list[Parsed]], list[BadLine]]:
        """Rows added since the last read, :data:`BATCH` at most (:attr:`more` set where it stopped there: call
        again at once): run name -> parsed batches (step key ``step``, the row's time as ``_timestamp``), and
        problems (none when the file is gone). Raises sqlite3.OperationalError while the database is locked (read
        again at the next poll)."""
        sig = self._signature()
        bad: list[BadLine] = []
        self.more = False
        if sig[0] == 0:  # gone since the caller looked (deleted): nothing to read, nothing to say
            return {}, []
        if sig[1] == 0:
            self._sig = sig
            return {}, [BadLine(self.label, 0, "empty file (no trackio database yet)")]
        out: dict[str, list[Parsed]] = {}
        taken = 0
        done = True  # (False: stopped before the rows it could read: read again at the next poll)
        with connect(self.path) as con:
            try:
                self._read_configs(con)  # (first: a run's config is there when its store is made)
                cur = con.execute(f"SELECT {self._columns(con)} FROM metrics WHERE id > ? ORDER BY id LIMIT ?",
                                  (self.last_id, BATCH))
                while rows := cur.fetchmany(self._fetch):
                    taken += len(rows)
                    self._take(con, rows, out, bad)
            except DAMAGED as e:
                locked = isinstance(e, sqlite3.OperationalError) and ("locked" in str(e) or "busy" in str(e))
                if not locked:
                    rows, damage, last, self.more = around_damage(con, self._columns, self.last_id, BATCH,
                                                                  self.label, e)
                    self.last_id = max(self.last_id, last)
                    bad += damage
                    taken += len(rows)
                    self._take(con, rows, out, bad)
                elif not taken:
                    raise
                else:  # (the rows taken so far are kept)
                    done = False
        if done and taken < BATCH:
            self._sig = sig
        self.more = self.more or (done and taken >= BATCH)
        for run in self.renamed:
            out.setdefault(run, []).append(Parsed(steps=[], meta={"name": self.names[run]}))
        for run, noted in self.tables.items():
            out.setdefault(run, []).append(Parsed(steps=[], meta={"trackio_tables": noted}))
        self.tables, self.renamed = {}, set()
        return {run: parsed for run, parsed in out.items() if parsed}, bad

    def _take(self, con: sqlite3.Connection, rows: list[Any], out: dict[str, list[Parsed]],
              bad: list[BadLine]) -> None:
        """Rows fetched (in id order) parsed into ``out`` by run; the next fetch sized to about PIECE bytes."""
        if not rows:
            return
        self.last_id = max(self.last_id, rows[-1][0])
        size = sum(len(r[4]) for r in rows if isinstance(r[4], (bytes, str)))
        self._fetch = max(FETCH_MIN, min(FETCH_MAX, PIECE * len(rows) // max(size, 1)))
        runs = {(r[1], r[5] if len(r) > 5 else None) for r in rows}
        by_run: dict[str, list[Any]] = {}
        if len(runs) == 1:
            by_run[self._run(con, *runs.pop())] = rows
        else:
            keys: dict[Any, str] = {}  # (made in the order of the rows: a later run of a name is ``<name>#2``)
            for r in rows:
                key = keys.get(pair := (r[1], r[5] if len(r) > 5 else None))
                if key is None:
                    key = keys[pair] = self._run(con, *pair)
                by_run.setdefault(key, []).append(r)
        for run, got in by_run.items():
            if self._id_col:
                copies, got = self._renames.split(run, got)
                for r in copies:  # (not read again; their tables are noted again: their rows' ids are new)
                    self._unmedia(r)
            # (a log call of traces alone leaves a row of no metrics: trackio keeps the traces in a table of its own)
            got = [r for r in got if r[4] != b"{}"]
            if any(type(r[4]) is bytes and MEDIA in r[4] for r in got):
                got = [r for r in map(self._unmedia, got) if r is not None]
            if got:
                out.setdefault(run, []).extend(self._batch(run, got, bad))

    def _run(self, con: sqlite3.Connection, name: Any, run_id: Any) -> str:
        """The key of the run of rows named ``name`` with trackio's ``run_id`` (:meth:`key`); where a run's rows
        come under another name and those read of it are gone, it was renamed (trackiorenames): it takes the new
        name, and its next rows are the copies."""
        key = self.key(name, run_id)
        if run_id is None or self.names[key] == (named := text(name)) or (key, named) in self._other:
            return key
        if self._renames.gone(con, key, run_id):
            self.names[key] = named
            self.renamed.add(key)
            self._renames.renamed(key)
        else:
            self._other.add((key, named))
        return key

    def _unmedia(self, row: Any) -> Any:
        """``row`` with the media values logged in it left out of its metrics (trackiomedia); None where it held
        media alone (a counter besides: no row of the run's). Its tables are noted in :attr:`tables` (row id, key,
        step)."""
        blob = row[4]
        if type(blob) is not bytes or MEDIA not in blob:
            return row
        try:
            obj = _DECODE.decode(blob)
        except msgspec.DecodeError:
            return row  # (read row by row, and reported, as any bad object)
        if not isinstance(obj, dict):
            return row
        rest, had = without_media(obj)
        if not had:  # (the type's text was inside a string)
            return row
        own = own_step(blob)
        for key, step in table_steps(obj, own if own is not None else row[2]):
            self.tables.setdefault(self.key(row[1], row[5] if len(row) > 5 else None), []).append(
                (row[0], key, step))
        if all(counter(k) for k in rest):
            return None
        return (*row[:4], _ENCODE(rest), *row[5:])

    def _clock(self, ts: Any) -> float | None:
        t = self._clocks.get(ts, False)
        if t is False:
            if len(self._clocks) > 4096:
                self._clocks.clear()
                self._ends.clear()
            t = self._clocks[ts] = _unix(ts)
        return t  # type: ignore[return-value]

    def _end(self, ts: Any) -> bytes:
        """The end of a row's JSON line after its step: its clock, the object's brace, the newline."""
        end = self._ends.get(ts)
        if end is None:
            t = self._clock(ts)
            end = self._ends[ts] = b"}\n" if t is None else b',"_timestamp":%r}\n' % t
        return end

    def _batch(self, run: str, rows: list[Any], bad: list[BadLine]) -> list[Parsed]:
        """One run's new rows as JSON lines for the JSONL reader's batch decode: each ``metrics`` object with
        ``"step":N,"_timestamp":T`` added last (a key of the same name in it is read over, as row by row: JSON's
        last one wins), else (a bad object, a ``data`` envelope holding those keys) row by row. The step is the
        trainer's own where the row holds it (:func:`own_step`; trackio's then kept as ``_step``), else trackio's."""
        parser = self._parsers.get(run)
        if parser is None:
            parser = self._parsers[run] = JsonlParser(self.label)
            parser.step_key = "step"
        first = FIRST_LINES if parser.fast_chunks + parser.slow_chunks == 0 else 0
        chunks = self._lines(rows[:first]) + self._lines(rows[first:])
        if None in chunks:
            return [self._rows(rows, bad)]
        # (a None logged: no value; a list: its text, not a count)
        out = [lists_as_text(parser.parse(drop_nulls(chunk), 1)) for chunk in chunks if chunk]
        # an object that is not one, or verl's envelope holding the row's own keys (unwrapped, they would stand
        # beside them; every key is in the shape: the typed decode fails on one it has not learned): row by row
        data = parser.shape.get("data")
        if any(p.bad for p in out) or (type(data) is dict and not data.keys().isdisjoint(_CLASHES)):
            return [self._rows(rows, bad)]
        return out

    def _lines(self, rows: list[Any]) -> list[bytes | None]:
        """Rows as chunks of JSON lines of about :data:`PIECE` bytes each; [None] when a row cannot be one (its
        step not an integer, its metrics no JSON object's text)."""
        chunks: list[bytes | None] = []
        parts: list[bytes] = []
        add = parts.extend
        ends, end = self._ends, self._end
        size = 0
        for _, _, step, ts, blob, *_ in rows:
            if type(step) is not int or type(blob) is not bytes or blob[-1:] != b"}":
                return [None]
            own = own_step(blob)
            steps = b'"step":%d' % step if own is None else b'"step":%d,"_step":%d' % (own, step)
            add((blob[:-1], b"," + steps if len(blob) > 2 else steps, ends.get(ts) or end(ts)))
            size += len(blob)
            if size >= PIECE:
                chunks.append(b"".join(parts))
                parts.clear()
                size = 0
        if parts:
            chunks.append(b"".join(parts))
        return chunks

    def _rows(self, got: list[Any], bad: list[BadLine]) -> Parsed:
        """Rows one by one (each unreadable one reported by its id)."""
        steps: list[int] = []
        rows: list[dict[str, Any]] = []
        for rid, _, step, ts, blob, *_ in got:
            try:
                obj = _DECODE.decode(blob)
                if type(obj) is not dict:
                    raise ValueError("not an object")
            except (msgspec.DecodeError, ValueError, TypeError) as e:
                bad.append(BadLine(self.label, 0, f"row id {rid}: unreadable metrics ({e}); skipped"))
                continue
            row = without_nones(flatten(obj))
            if isinstance(step, int):
                own = step_of(row.get(TRACKER_STEP_KEYS[0]))
                if own is not None:
                    row["_step"] = step
                row["step"] = step if own is None else own
            else:
                bad.append(BadLine(self.label, 0, f"row id {rid}: step {step!r:.40} is not an integer; skipped"))
                continue
            t = self._clock(ts)
            if t is not None:
                row["_timestamp"] = t
            steps.append(row["step"])
            rows.append(row)
        return lists_as_text(Parsed(steps=steps, rows=rows, step_key="step"))

    def config(self, key: str) -> Any:
        """The config of the run ``key`` (None where there is none)."""
        return self._configs.get(self._ids.get(key, key))

    def key(self, name: Any, run_id: Any = None) -> str:
        """The key of the run named ``name`` with trackio's ``run_id`` (None: runs by name): its name, and for a
        later run of that name ``<name>#<n>``, in the order of their first rows (ids only grow: every reader, at
        any time, names them alike; a config rewritten by a resume moves in its table, so it does not count)."""
        named = text(name)
        if run_id is None:
            self.names.setdefault(named, named)
            return named
        ident = text(run_id)
        got = self._keys.get(ident)
        if got is not None:
            return got
        n = self._named[named] = self._named.get(named, 0) + 1
        key = self._keys[ident] = named if n == 1 else f"{named}#{n}"
        self.names[key], self._ids[key] = named, ident
        return key

    def _columns(self, con: sqlite3.Connection) -> str:
        """The columns a row is read with: ``run_id`` last where the table has it."""
        if self._id_col is None:
            self._id_col = b"run_id" in {r[1] for r in con.execute("PRAGMA table_info(metrics)")}
        return "id, run_name, step, timestamp, metrics" + (", run_id" if self._id_col else "")

    def _read_configs(self, con: sqlite3.Connection) -> None:
        try:
            ids = self._columns(con).endswith("run_id")
            try:
                got = con.execute("SELECT run_name, config" + (", run_id" if ids else "") + " FROM configs ORDER BY id")
            except sqlite3.OperationalError:  # (a configs table of an older trackio: by name)
                got = con.execute("SELECT run_name, config FROM configs ORDER BY id")
            for run, blob, *rid in got:
                ident = text(rid[0] if rid else run)
                if ident not in self._configs:
                    with contextlib.suppress(msgspec.DecodeError, TypeError):
                        self._configs[ident] = _DECODE.decode(blob)
        except (sqlite3.Error, UnicodeDecodeError):
            pass
