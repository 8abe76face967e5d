"""Sources: one followed file (or HF run directory) feeding one RunStore. Pure; driven by the Follower.

``poll()`` reads what is new and says whether the store changed. Every problem goes to the store's ``bad`` list and
to the ``report`` callable the follower passes (its ``errors``).
"""

from __future__ import annotations

import math
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Protocol

from steptable.ingest.files.discover import Candidate
from steptable.ingest.files.tail import MAX_LINE, FileTail, Lines, Lost, Reset
from steptable.ingest.gaps import GapWatch
from steptable.ingest.parse import BadLine
from steptable.ingest.parsed import Parsed
from steptable.ingest.readers.arms import ArmSplit, writer_groups
from steptable.ingest.readers.console import ConsoleParser
from steptable.ingest.readers.csvlog import CsvParser
from steptable.ingest.readers.jsonl import JsonlParser, LineNo
from steptable.ingest.replacedrows import ResumeReader
from steptable.ingest.rewrite import Rewrite
from steptable.ingest.sidefiles import load_meta, read_regular
from steptable.ingest.store import RunStore
from steptable.table import runinfo

Report = Callable[[BadLine], None]

#: seconds a JSONL last line without its newline must stay unchanged before a follower shows it (a finished run whose
#: writer never ended its last row; a line being written grows well within this)
HELD_QUIET_S = 1.0


def _now() -> float:
    return time.monotonic()


class _Parser(Protocol):
    def reset(self) -> None: ...

    def parse(self, chunk: bytes, lineno: LineNo) -> Parsed: ...


class Source(ABC):
    """One discovered file (or HF run directory) and the RunStore it feeds; :meth:`poll` is the kind's own."""

    def __init__(self, cand: Candidate, report: Report, on_resume: ResumeReader | None = None) -> None:
        self.cand = cand
        self.report = report
        self.store = RunStore(cand.run_id, cand.path, cand.kind, cand.arm, on_resume)
        self.store.side_files = cand.side_files
        self.exposed = cand.confirmed and cand.kind != "console"
        self.dead = False  # not a run after all: the follower drops it
        self.missing = False  # the last poll found no file (deleted, its directory removed or renamed)
        if self.exposed:  # (a log still to show a metrics line reads its config when it does)
            load_meta(self.store, cand, report)

    @abstractmethod
    def poll(self) -> bool:
        """Read what is new; True when a store viewers see changed (a run not shown yet never counts)."""

    def stores(self) -> list[RunStore]:
        """The runs this file holds (one, but for a JSONL shared by the StepLoggers of several arms)."""
        return [self.store]

    def _bad(self, lines: list[BadLine]) -> None:
        for b in lines:
            self.report(b)


class TailSource(Source):
    """A JSONL metrics file or a console log, tailed."""

    def __init__(self, cand: Candidate, report: Report, max_line: int = MAX_LINE,
                 on_resume: ResumeReader | None = None) -> None:
        super().__init__(cand, report, on_resume)
        label = str(cand.path)
        self.tail = FileTail(cand.path, label, max_line=max_line)
        self.parser: _Parser = (
            ConsoleParser(label) if cand.kind == "console" else CsvParser(label) if cand.kind == "csv"
            else JsonlParser(label)
        )
        self._live = False  # the file's first content has been read: later rows arrive as it is written
        # the steptable.json read last for each store: (path, mtime, size)
        self._info_sig: dict[str, tuple[str, int, int]] = {}
        self._rejected: set[tuple[str, int, int]] = set()
        # a JSONL written by the StepLoggers of several arms: the stores of the arms after the file's first
        self._arms = ArmSplit(cand.path) if cand.kind == "jsonl" else None
        self.arm_stores: dict[str, RunStore] = {}
        self.writer_stores: dict[str, RunStore] = {}  # rows a second process wrote into an arm (writer_pid)
        # the unfinished last line: (the tail's offset, when it was first seen at it), and, once shown, the rows each
        # store had before it (taken back before the line is read again, grown or whole)
        self._quiet: tuple[int, float] | None = None
        self._shown_held: dict[int, tuple[RunStore, int]] = {}
        self._gaps = GapWatch()  # the file went with its rest unread: do the next rows show rows lost?
        self._rewrite: Rewrite | None = None  # a CSV rewritten from the top, read aside until it settles

    def stores(self) -> list[RunStore]:
        # (dict order: an arm's store never goes away)
        return [self.store, *self.arm_stores.values(), *self.writer_stores.values()]

    def _add(self, store: RunStore, parsed: Parsed, now: float | None) -> None:
        """Add a parsed chunk: to ``store``, or split among the arms that share the file, and the rows a second
        writer of an arm marked as its own to a store of their own."""
        parts = self._arms.groups(parsed) if self._arms is not None and store is self.store else [(None, parsed)]
        for arm, part in parts:
            target = store
            if arm is not None:
                got = self.arm_stores.get(arm)  # (an empty store is falsy: a reset arm's is not made again)
                target = got if got is not None else self._arm_store(arm)
            for pid, rows in writer_groups(part) if self.cand.kind == "jsonl" else [(None, part)]:
                (target if pid is None else self._second_writer(target, pid)).add(rows, now)

    def _second_writer(self, first: RunStore, pid: int) -> RunStore:
        """The store of the rows process ``pid`` wrote into ``first``'s arm while another process held its writer
        lock: made the first time, said once (two writers, not a resume on every row that interleaves)."""
        key = f"{first.run}~writer{pid}"
        got = self.writer_stores.get(key)
        if got is not None:
            return got
        st = RunStore(key, self.cand.path, self.cand.kind, first.arm, self.store.on_resume, self.store.keep)
        st.side_files = self.cand.side_files
        st.meta["two_writers"] = f"the rows process {pid} wrote beside {first.run}'s writer"
        first.meta["two_writers"] = f"process {pid} writes this arm too; its rows are run {key}"
        self.writer_stores[key] = st
        arm = f" (arm {first.arm})" if first.arm else ""
        self._bad([BadLine(str(self.cand.path), 0, f"two writers{arm}: process {pid} writes these rows too (a "
                           f"second StepLogger on this run directory and arm); its rows are shown apart as {key}")])
        return st

    def _arm_store(self, arm: str) -> RunStore:
        st = RunStore(f"{self.cand.run_id}#{arm}", self.cand.path, self.cand.kind, arm, self.store.on_resume,
                      self.store.keep)
        st.side_files = self.cand.side_files
        self.arm_stores[arm] = st
        return st

    def poll(self) -> bool:
        changed = False
        store = self.store if self._rewrite is None else self._rewrite.store
        # Rows already in the file when it is first read (or re-read after a reset) have no known arrival time.
        now = None if self._live else math.nan
        offset = self.tail.offset
        for ev in self.tail.poll():  # (read lazily: a chunk that fails costs that chunk, not the blocks after it)
            if self._shown_held:
                self._take_back_held()  # the held line ended or the file was reset: read again as it is now
                changed = True
            if isinstance(ev, Reset) and self.cand.kind == "csv" and (len(self.store) or self._rewrite is not None):
                # SB3 and Lightning rewrite a CSV from the top when they add a key: read it aside while the rows
                # shown stay, until it settles (steptable.ingest.rewrite)
                self.parser.reset()
                self._rewrite = Rewrite(self.store, ev.in_place, self.tail.offset, _now())
                store = self._rewrite.store
                now = math.nan
            elif isinstance(ev, Reset):
                self.parser.reset()
                store.reset()
                for other in [*self.arm_stores.values(), *self.writer_stores.values()]:
                    other.reset()
                now = math.nan
                changed = True
            elif isinstance(ev, Lost):
                self._gaps.broken(self.stores(), str(self.cand.path), ev.offset, ev.reason)
            elif isinstance(ev, BadLine):
                store.add_bad([ev])
                self._bad([ev])
                changed = True
            elif isinstance(ev, Lines):
                parsed = self.parser.parse(ev.data, ev.first_line)  # lines are counted only if needed
                if parsed.steps or parsed.bad:
                    self._add(store, parsed, now)
                    if store is self.store:
                        self._bad(parsed.bad)
                        changed = True
                    elif self._rewrite is not None:
                        self._rewrite.bad += parsed.bad
        if self._rewrite is not None:
            changed = self._settle() or changed
        for st, gap in self._gaps.judge():
            st.add_gap(gap)
            said = gap.message() if st is self.store else f"arm {st.arm}: {gap.message()}"
            self._bad([BadLine(str(self.cand.path), 0, said)])
            changed = True
        if self._shown_held and self.tail.offset != offset:  # the held line grew, still without its newline
            self._take_back_held()
            changed = True
        changed = self._show_held() or changed
        self._live = self.tail.opened
        # (a file never opened may be gone before its first read, or be a link that now leads nowhere)
        self.missing = self.tail.missing or (not self.tail.opened and not os.path.exists(self.cand.path))
        if self.cand.kind == "jsonl":  # after the rows: the arm they name picks the logger's description
            changed = any([self._runinfo(st) for st in self.stores()]) or changed
        return self._expose(changed)

    def _settle(self, final: bool = False) -> bool:
        """Apply a rewritten CSV's content to the rows shown once it settles (:meth:`Rewrite.verdict`; ``final``:
        the read ends); True when it did."""
        rw = self._rewrite
        if rw is None or (verdict := rw.verdict(self.tail.offset, _now(), final)) is None:
            return False
        self._rewrite = None
        rw.apply(verdict)
        self._bad(rw.bad)
        return True

    def _runinfo(self, store: RunStore) -> bool:
        """Read the StepLogger's description of ``store``'s rows (table.runinfo) when it appears or changes: two
        stats a poll. True when it changed (the run ended, for one)."""
        for path in runinfo.candidates(self.cand.path, store.arm):
            try:
                st = os.stat(path)
            except OSError:
                continue
            sig = (str(path), st.st_mtime_ns, st.st_size)
            if sig == self._info_sig.get(store.run):
                return False
            if sig in self._rejected:  # read before and not valid (another file's, a newer version): not again
                continue
            try:
                info = runinfo.parse(read_regular(path, runinfo.MAX_BYTES), self.cand.path)
            except OSError:
                info = None
            if info is None:
                if len(self._rejected) < 64:
                    self._rejected.add(sig)
                continue
            self._info_sig[store.run] = sig
            with store.lock:
                store.meta["runinfo"] = info
            return True
        return False

    def _show_held(self) -> bool:
        """A follower shows a JSONL last line without its newline once it has not grown for ``HELD_QUIET_S`` and
        parses as a whole row (as a one-shot read does at once): a finished run's writer may never end its last row,
        and it may hold the run's final evaluation. The parser reads it without moving on (its row count and last
        step are restored): the line is read again when it grows or ends, its row taken back first, so it is
        replaced, never shown twice."""
        if self.cand.kind != "jsonl" or self._shown_held or not self.tail.pending:
            self._quiet = None
            return False
        t = _now()
        if self._quiet is None or self._quiet[0] != self.tail.offset:
            self._quiet = (self.tail.offset, t)
            return False
        if t - self._quiet[1] < HELD_QUIET_S:
            return False
        ev = self.tail.final_line()
        if ev is None or not isinstance(self.parser, JsonlParser):
            return False
        before = {id(st): (st, len(st)) for st in self.stores()}
        kept = self.parser.ordinal, self.parser.last_step
        parsed = self.parser.parse(ev.data, ev.first_line)
        self.parser.ordinal, self.parser.last_step = kept
        if not parsed.steps:
            self._quiet = (self.tail.offset, math.inf)  # not a whole row: wait for more bytes
            return False
        parsed.bad.clear()  # (reported when the line is read for good)
        self._add(self.store, parsed, None)
        self._shown_held = {**before, **{id(st): (st, 0) for st in self.stores() if id(st) not in before}}
        return True

    def _take_back_held(self) -> None:
        for st, n in self._shown_held.values():
            st.withdraw(n)
        self._shown_held = {}
        self._quiet = None

    def finish(self) -> bool:
        """One-shot reads: parse a JSONL last line that has no newline (a follower never calls this).

        Only a line that parses whole counts: a cut JSON object never does, and a cut line is one being written (or
        a crash's partial line), not a bad one. A console or CSV line without its newline is not read at all: cut
        in a number it still parses, as a wrong value (``lr:1`` of ``lr:1e-06``, step 61 of 6144), and a trainer's
        block-buffered stdout leaves its log cut mid-line for minutes at a time."""
        if isinstance(self.parser, CsvParser):
            return self._flush_csv()
        if self.cand.kind != "jsonl":
            return False
        ev = self.tail.final_line()
        if ev is None:
            return False
        parsed = self.parser.parse(ev.data, ev.first_line)
        if not parsed.steps:
            return False
        parsed.bad.clear()
        self._add(self.store, parsed, math.nan)  # one-shot reads only: the line was there before the read
        for st in self.stores():
            self._runinfo(st)
        return self._expose(True)

    def carry_on(self, parts: Iterable[Parsed]) -> bool:
        """A one-shot first read whose rest another process parsed (steptable.ingest.splitread), from the state this
        source's parser and tail are in now: its chunks are added as :meth:`poll` adds a first read's (in file order,
        arrival times unknown), then what a poll does after its rows. Returns whether viewers see a change. A bug of
        ours adding a chunk costs that chunk, as in a poll: the rest are added, then the first such error is raised."""
        failed: Exception | None = None
        for parsed in parts:
            try:
                self._add(self.store, parsed, math.nan)
            except Exception as e:  # (a poll's tail has read past the chunk: the follower polls on, for the rest)
                failed = failed or e
                continue
            self._bad(parsed.bad)  # (what the store adds: past its most keys)
        for st in self.stores():
            self._runinfo(st)
        if failed is not None:
            raise failed
        return self._expose(True)

    def read_on(self) -> bool:
        """:meth:`poll` for the rest of a one-shot first read that stopped early (``FileTail.stop``): its rows too
        were in the file before the read (arrival times unknown)."""
        self._live = False
        return self.poll()

    def _flush_csv(self) -> bool:
        """A CSV record still open at the end of a one-shot read (:meth:`CsvParser.flush`), and a rewritten CSV's
        content, which nothing more will add to, applied as it is."""
        parsed = self.parser.flush() if isinstance(self.parser, CsvParser) else None
        if parsed is not None and (parsed.steps or parsed.bad):
            if self._rewrite is not None:
                self._add(self._rewrite.store, parsed, math.nan)
                self._rewrite.bad += parsed.bad
            else:
                self._add(self.store, parsed, math.nan)
                self._bad(parsed.bad)
                return self._expose(True)
        return self._settle(final=True) and self._expose(True)

    def _expose(self, changed: bool) -> bool:
        store = self.store
        if not self.exposed and len(store):
            self.exposed = True
            load_meta(store, self.cand, self.report)
        elif not self.exposed and not self.cand.confirmed and self.tail.opened:
            # A log that was not named explicitly and shows no metrics line (a README.txt, a server log, a training
            # log still loading its model): not a run for now. The follower searches what it grows by and takes
            # it back, read from the start, at its first metrics line; meanwhile it costs no poll.
            self.dead = True
        return changed and self.exposed


def make_source(
    cand: Candidate, report: Report, max_line: int = MAX_LINE, on_resume: ResumeReader | None = None,
    keep: Callable[[str], bool] | None = None,
) -> Source:
    """The source of ``cand``: a StateSource for an HF ``trainer_state.json`` run, else a TailSource. ``keep``: the
    projection of a TailSource's stores (RunStore); CSV logs and the other kinds store every key."""
    if cand.kind == "trainer_state":  # (an HF run directory: steptable.ingest.statesource)
        from steptable.ingest.statesource import StateSource

        return StateSource(cand, report, on_resume)
    if cand.kind in ("wandb", "tensorboard", "trackio"):  # (record files and databases: steptable.ingest.recordsource)
        from steptable.ingest.recordsource import RecordSource, TrackioSource

        return (TrackioSource if cand.kind == "trackio" else RecordSource)(cand, report, on_resume)
    src = TailSource(cand, report, max_line, on_resume)
    # (before its first read; not a CSV: a rewritten one is settled by comparing and copying whole stored rows)
    src.store.keep = keep if cand.kind != "csv" else None
    return src
