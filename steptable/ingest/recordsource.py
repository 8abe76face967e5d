"""Sources of runs kept in record files and databases: W&B run files, TensorBoard run directories, trackio projects.

Each follows its run live like :class:`~steptable.ingest.source.TailSource` follows a JSONL: a poll reads what was
written since the last one (a record cut by a concurrent write waits for its second half) and feeds the store. Each
format is decoded with the standard library alone (no wandb, tensorboard or trackio needed to read). A format's
reader (and sqlite3) is imported when a run of it is opened: reading one format does not pay for the others'.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from steptable.ingest.files.bytetail import CHUNK, ByteTail
from steptable.ingest.files.discover import Candidate
from steptable.ingest.files.siblings import last_change
from steptable.ingest.files.wandbpieces import pieces_of
from steptable.ingest.parse import BadLine
from steptable.ingest.parsed import WALL_KEYS, Parsed
from steptable.ingest.readers.tbcurves import Curve, curve_dirs, event_names, event_order
from steptable.ingest.replacedrows import ResumeReader
from steptable.ingest.source import Report, Source
from steptable.ingest.store import RunStore
from steptable.table import runinfo

if TYPE_CHECKING:
    from steptable.ingest.readers.trackio import TrackioReader

RECORD_KINDS = frozenset({"wandb", "tensorboard", "trackio"})
#: bytes of a W&B run file read at a time (a read is parsed while it is still in the CPU's cache: a 70 MB run reads
#: about 10% faster than in one read)
WANDB_READ = 1 << 20
#: a TensorBoard run's directory changed this recently (seconds) is listed again at the next poll
RECENT_S = 1.0


class _RecordParser(Protocol):
    def reset(self) -> None: ...

    def parse(self, data: bytes | memoryview, base: int, final: bool = False) -> tuple[int, Parsed]: ...


class _CurveParser:
    """An ``add_scalars`` curve's event parser: its tags become the run's columns for that curve (``loss/train``)."""

    def __init__(self, parser: _RecordParser, curve: Curve) -> None:
        self._parser = parser
        self._curve = curve

    @property
    def more(self) -> bool:
        return bool(getattr(self._parser, "more", False))

    def reset(self) -> None:
        self._parser.reset()

    def parse(self, data: bytes | memoryview, base: int, final: bool = False) -> tuple[int, Parsed]:
        used, parsed = self._parser.parse(data, base, final)
        keep = {parsed.step_key, *WALL_KEYS}
        column = self._curve.column
        if parsed.rows is not None:
            parsed.rows = [{(k if k in keep else column(k)): v for k, v in row.items()} for row in parsed.rows]
        if parsed.cols is not None:
            parsed.cols = {(k if k in keep else column(k)): v for k, v in parsed.cols.items()}
            if parsed.int_keys is not None:
                parsed.int_keys = frozenset(k if k in keep else column(k) for k in parsed.int_keys)
        return used, parsed


class _Base(Source):
    def __init__(self, cand: Candidate, report: Report, on_resume: ResumeReader | None) -> None:
        super().__init__(cand, report, on_resume)
        self.exposed = True
        self._live = False
        self._told: set[str] = set()

    def _tell(self, store: RunStore, bad: BadLine) -> None:
        """Report ``bad`` once (a file that cannot be read is not reported again on every poll)."""
        if bad.reason in self._told:
            return
        self._told.add(bad.reason)
        store.add_bad([bad])
        self.report(bad)

    def _apply(self, store: RunStore, parsed: Parsed, now: float | None) -> bool:
        meta = parsed.meta
        changed = False
        if meta:
            with store.lock:
                if isinstance(name := meta.get("name"), str) and name:
                    store.arm = name
                if "config" in meta:
                    store.meta["config"] = meta["config"]
                if "runinfo" in meta:
                    store.meta["runinfo"] = meta["runinfo"]
                if "tables" in meta:  # (a W&B run's: each wandb.Table file's step; of each of its files)
                    store.meta["tables"] = {**store.meta.get("tables", {}), **meta["tables"]}
                for many in ("texts", "trackio_tables"):  # (TensorBoard's text summaries, trackio's tables)
                    if many in meta:  # (a reader takes a copy)
                        store.meta.setdefault(many, []).extend(meta[many])
            parsed.meta = {}
            changed = True
        if parsed.steps or parsed.bad:
            store.add(parsed, now)
            self._bad(parsed.bad)
            changed = True
        return changed


class RecordSource(_Base):
    """A W&B run file (with those of the processes that resumed it: steptable.ingest.files.wandbpieces), or a
    TensorBoard run directory (its event files read in name order, merged by step)."""

    def __init__(self, cand: Candidate, report: Report, on_resume: ResumeReader | None = None) -> None:
        super().__init__(cand, report, on_resume)
        self._files: dict[Path, tuple[ByteTail, _RecordParser]] = {}
        self._dir_sig: tuple[int, ...] | None = None
        self._curves: dict[Path, Curve] = {}  # a TensorBoard run's add_scalars directories
        self._below: list[Path] = []  # the directories below its own looked in for them
        self._curve_of: dict[Path, Curve] = {}
        self.tail: ByteTail | None = None  # the file read last (the follower checks its progress)
        self._begun: list[Path] = []  # a W&B run's files whose rows have begun, in order
        self._earlier: list[dict[str, Any]] = []  # how the processes before its resumes ended (runinfo.earlier)
        self._now: float | None = None  # the arrival time given to rows read now (NaN: read before the run was live)

    def watch_paths(self) -> list[Path]:
        """Paths whose change events concern this run (a TensorBoard run's directory gains new files)."""
        return [self.cand.run_dir] if self.cand.kind == "tensorboard" else []

    def _paths(self) -> list[Path]:
        if self.cand.kind == "wandb":
            return self._wandb_paths()
        d = Path(self.cand.key)
        pending = any(c.pending for c in self._curves.values())  # (its first scalar changes no directory's time)
        try:
            sig = (os.stat(d).st_mtime_ns, *(os.stat(c).st_mtime_ns for c in self._below))
        except OSError:
            sig = ()
        if sig == self._dir_sig and not pending:
            return list(self._files)
        # (a directory changed again within the clock tick of this look keeps its time: looked at until it is older)
        self._dir_sig = sig if sig and time.time() - max(sig) / 1e9 > RECENT_S else None
        try:
            self._curves, self._below = curve_dirs(d)
            found = [d / n for n in event_names(d)]
        except OSError:
            return list(self._files)
        for c, curve in self._curves.items():
            if curve.pending:
                continue
            try:
                names = event_names(c)
            except OSError:
                continue
            for n in names:
                self._curve_of[c / n] = curve
                found.append(c / n)
        new = sorted((p for p in found if p not in self._files), key=lambda p: event_order(p.name))
        return [*self._files, *new]

    def _wandb_paths(self) -> list[Path]:
        """The W&B run's file and those of the processes that resumed it (listed again where a directory was made
        beside it since, or one of its id was not judged yet: a resume that starts while the run is followed)."""
        path = self.cand.path
        if self.cand.alone:
            return [path]
        try:
            sig: tuple[int, ...] = (os.stat(path.parent.parent).st_mtime_ns,)
        except OSError:
            sig = ()
        if self._files and sig == self._dir_sig:
            return list(self._files)
        found, settled = pieces_of(path)
        self._dir_sig = sig if settled and sig and time.time() - sig[0] / 1e9 > RECENT_S else None
        return [*self._files, *(p for p in found if p not in self._files)]

    def _piece(self, store: RunStore, path: Path, parsed: Parsed) -> None:
        """What one file of a W&B run says, as the run's: its tables' paths under its own directory; where it is a
        resume's first rows, how the file before it ended kept as an earlier end (an exit code; no exit record: a
        process that stopped without a close) at the step resumed at, and the run no longer ended; its own end
        with those earlier ones."""
        meta = parsed.meta
        if tables := meta.get("tables"):
            meta["tables"] = {str(path.parent / "files" / rel): step for rel, step in tables.items()}
        if parsed.steps and path not in self._begun:
            if self._begun:
                before = store.meta.get("runinfo")
                closed, end = runinfo.closed_at(before), runinfo.ended_by(before)
                if closed is None:
                    end, closed = runinfo.UNCLOSED, last_change(self._begun[-1])
                if end is not None and closed is not None and type(at := parsed.steps[0]) is int:
                    self._earlier.append({"end": end, "resumed_at": at, "closed": closed})
                with store.lock:
                    store.meta["runinfo"] = {"closed": None, "earlier": self._earlier[-runinfo.MAX_EARLIER:]}
            self._begun.append(path)
        if "runinfo" in meta and self._earlier:
            meta["runinfo"] = {**meta["runinfo"], "earlier": self._earlier[-runinfo.MAX_EARLIER:]}

    def _parser(self, path: Path) -> tuple[ByteTail, _RecordParser]:
        got = self._files.get(path)
        if got is None:
            parser: _RecordParser
            if self.cand.kind == "wandb":
                from steptable.ingest.readers.wandb import WandbParser
                before = self._files[next(reversed(self._files))][1] if self._files else None
                parser = WandbParser(str(path), before if isinstance(before, WandbParser) else None)
            else:
                from steptable.ingest.readers.tensorboard import EventParser
                parser = EventParser(str(path))
                if (curve := self._curve_of.get(path)) is not None:
                    parser = _CurveParser(parser, curve)
            got = self._files[path] = (ByteTail(path, WANDB_READ if self.cand.kind == "wandb" else CHUNK), parser)
        return got

    def poll(self) -> bool:
        return self._read(final=False)

    def finish(self) -> bool:
        """One-shot reads: a record cut at the end of a file is reported (a follower waits for its rest)."""
        return self._read(final=True)

    def _read(self, final: bool) -> bool:
        changed = False
        self._now = None if self._live else math.nan
        for _ in range(2):  # (a later file found reset: the run read again from its first file, once a call)
            missing, again = True, False
            for path in self._paths():
                got, again = self._read_file(path, final)
                changed = changed or got
                if again:
                    break
                missing = missing and self._files[path][0].missing
            if not again:
                break
        self.missing = missing and bool(self._files)
        self._live = True
        return changed

    def _read_file(self, path: Path, final: bool) -> tuple[bool, bool]:
        """Read what ``path`` (one of the run's files) gained: (whether the run changed, whether the run is to be
        read again from its first file: this file, not the first, was found truncated or replaced)."""
        store = self.store
        tail, parser = self._parser(path)
        self.tail = tail
        changed = False
        while True:
            try:
                reset, grew = tail.read()
            except OSError as e:
                self._tell(store, BadLine(str(path), 0, f"unreadable ({e.strerror or e})"))
                break
            if reset:
                for t, p in self._files.values():  # the run is read again from its first file
                    if t is not tail or path != next(iter(self._files)):
                        t.pending, t.base, t.read_to = b"", 0, 0
                    p.reset()
                store.reset()
                store.meta.pop("texts", None)  # (found again as the files are read again)
                self._begun, self._earlier = [], []
                self._now = math.nan
                if path != next(iter(self._files)):  # (its rows go after the files before it)
                    return True, True
                changed = True
            if not (grew or reset or final):
                break
            data, off = tail.pending, 0
            while True:  # (a parser may stop early on a large read: ``more``; it reads on past ``off``)
                view = data if off == 0 else memoryview(data)[off:]
                used, parsed = parser.parse(view, tail.base + off, final and not tail.more)
                off += used
                if self.cand.kind == "wandb":
                    self._piece(store, path, parsed)
                changed = self._apply(store, parsed, self._now) or changed
                if not (getattr(parser, "more", False) and used):
                    break
            tail.consume(off)
            if not grew:
                break
        return changed, False


class TrackioSource(_Base):
    """A trackio project database: one store per run (``<project>.db#<key>``: its name, ``<name>#2`` for a later run
    of that name; armed with the name, the new one where it is renamed while read: the key stays)."""

    def __init__(self, cand: Candidate, report: Report, on_resume: ResumeReader | None = None) -> None:
        super().__init__(cand, report, on_resume)
        from steptable.ingest.readers.trackio import TrackioReader
        self.reader: TrackioReader = TrackioReader(cand.path, str(cand.path))
        self.runs: dict[str, RunStore] = {}

    def stores(self) -> list[RunStore]:
        return list(self.runs.values())

    def watch_paths(self) -> list[Path]:
        return [Path(f"{self.cand.path}-wal")]

    def poll(self) -> bool:
        if not os.path.exists(self.cand.path):
            self.missing = True
            return False
        self.missing = False
        if not self.reader.changed():
            return False
        now = None if self._live else math.nan
        changed = False
        while True:  # (a read stops at the reader's BATCH rows: one poll reads them all, each batch handed on)
            got = self._read_batch(now)
            if got is None:
                return changed
            changed = got or changed
            if not self.reader.more:
                return changed

    def _read_batch(self, now: float | None) -> bool | None:
        """One read of the reader handed to the runs: whether they changed; None where the database could not be
        read now (locked by a writer: read at the next poll; deleted: missing)."""
        import sqlite3  # (imported with the reader: a no-op here)

        try:
            got, bad = self.reader.read()
        except sqlite3.Error as e:
            if "locked" in str(e) or "busy" in str(e):
                return None
            if not os.path.exists(self.cand.path):  # deleted since it was looked at: missing, not unreadable
                self.missing = True
                return None
            self._tell(self.store, BadLine(str(self.cand.path), 0, f"unreadable ({e})"))
            return True
        self._live = True
        changed = False
        for b in bad:
            target = next(iter(self.runs.values()), self.store)
            self._tell(target, b)
            changed = True
        for run, batches in got.items():
            store = self._run(run)
            for parsed in batches:
                changed = self._apply(store, parsed, now) or changed
            if store.meta.get("trackio_run") != (name := self.reader.names.get(run, run)):  # (renamed: its arm too)
                with store.lock:
                    store.meta["trackio_run"] = name
        return changed

    def finish(self) -> bool:
        if not self.runs and self.store.bad_count:
            self.runs[""] = self.store  # nothing but problems: the file is listed with them
            return True
        return False

    def _run(self, key: str) -> RunStore:
        store = self.runs.get(key)
        if store is None:
            name = self.reader.names.get(key, key)
            store = RunStore(f"{self.cand.run_id}#{key}", self.cand.path, "trackio", name, self.store.on_resume)
            store.side_files = self.cand.side_files
            store.meta["trackio_run"] = name  # (its traces are looked up by it: steptable.ingest.readers.trackiotraces)
            config: Any = self.reader.config(key)
            if isinstance(config, dict):
                store.meta["config"] = config
            self.runs[key] = store
        return store
