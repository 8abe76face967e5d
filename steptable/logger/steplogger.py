"""StepLogger: the in-process consumer. One fixed-width row per step on stdout, every raw row in JSONL.

    step_log = StepLogger(cols, run_dir="logs/routeA", arm="routeA")   # cols None: chosen from the first row
    for step in range(n):
        step_log.log({"step": step, "rew": r, ...})
    step_log.close()

Printing goes through loguru (so the verbose file sink sees every row) and from there through ``tqdm.write``
(see :func:`steptable.setup_logging`). Nothing here raises into the training loop: I/O failures are reported once
and the run goes on.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from steptable.alerts.engine import AlertEngine
from steptable.alerts.rules import Alert
from steptable.logger import process, tablefile, termwatch
from steptable.logger.alertfeed import AlertFeed
from steptable.logger.autocols import AutoColumns
from steptable.logger.backlog import Backlog, row_view, step_number
from steptable.logger.closing import Closer
from steptable.logger.consolenotes import ConsoleNotes
from steptable.logger.logcols import LoggerColumns
from steptable.logger.rank import LazyRank
from steptable.logger.rowrecord import read_row, record_of
from steptable.logger.setup import emit, warn
from steptable.logger.sinks import report_once
from steptable.logger.writer import RunWriter, absolute, error_text
from steptable.logger.writerlock import WriterLock
from steptable.schemas.arrange import EMPTY_KEY, EMPTY_KEY_NOTE
from steptable.table import render, runinfo
from steptable.table.columns import Col, validate
from steptable.table.rowvalues import freeze, kept

JSONL_NAME = "metrics.jsonl"
TABLE_NAME = tablefile.TABLE_NAME

#: each logger's number, for its report topics (an id() can come back once a logger is collected)
_NUMBERS = itertools.count()


class StepLogger:
    """Render raw per-step metrics with one column registry, and keep every raw row.

    cols          the column set (``routing_columns(...)`` or your own ``Col`` list); None: automatic columns,
                  chosen from the first row's keys and values (steptable.logger.autocols: the schema the readers
                  would detect, the rest ranked by how much they tell, fitted to the terminal's width) and laid out
                  again when a row brings a key none before it had (its legend line and the header printed then);
                  an ``AutoColumns`` for automatic columns with its own expected keys or schema
    run_dir       where ``metrics.jsonl`` (and at close ``table.txt``) go; None = console only. A file renamed away
                  (a log rotation) or deleted mid-run is noticed at the first row written 0.25 s or more after the
                  writer's last check (steptable.logger.writer.CHECK_S), and at close: rows before that go where the
                  rows before them went, the rest to the file at the path; said once
    arm           the experiment arm, written into every JSONL row
    header_every  repeat the header after N lines (rows and alert lines) without one (0 = once): 25 keeps one in
                  the last 30 lines of a log with room for a few lines of other output (a header printed because
                  a column widened starts the count again; a column that can be printed narrower waits for it)
    alerts        watch the rows with steptable.alerts.engine and log W/E lines as problems start: a non-finite
                  value's at once, the others when their batch is fed (steptable.logger.alertfeed: up to 64 rows
                  or 2 s late, the line naming its step)
    dump_rows     rows of the all-column table printed at close where no ``table.txt`` is written (with one, a line
                  that points to it is printed instead)
    rank          override the detected global rank; only rank 0 prints and writes (detected: a launcher's RANK,
                  else torch.distributed's rank, looked for at each row until its process group is made)
    console       False writes the JSONL only (no rows through loguru), e.g. when a TUI owns the terminal
    """

    def __init__(
        self,
        cols: Sequence[Col] | AutoColumns | None = None,
        run_dir: str | os.PathLike[str] | None = None,
        arm: str | None = None,
        *,
        header_every: int = 25,
        alerts: bool = True,
        dump_rows: int = 5,
        rank: int | None = None,
        console: bool = True,
    ) -> None:
        #: automatic columns: chosen at the first row, laid out again for new keys (None: the caller's columns)
        self._auto: AutoColumns | None
        if cols is None or isinstance(cols, AutoColumns):
            self._auto = AutoColumns() if cols is None else cols
            self._set_cols(())
        else:
            self._auto = None
            self._set_cols(validate(cols))
        self.arm = arm
        self.header_every = max(int(header_every), 0)
        self.dump_rows = max(int(dump_rows), 0)
        # No launcher's variable and no process group yet (torch.multiprocessing.spawn, the logger made before
        # init_process_group): every process would take itself for rank 0. Asked again at each row until known.
        self._rank = LazyRank(rank)
        self.console = console
        self.run_dir = absolute(run_dir) if run_dir is not None else None  # (a later os.chdir moves no file)
        self.jsonl_path = self.run_dir / JSONL_NAME if self.run_dir is not None else None
        self._writer = RunWriter(self.jsonl_path, self._warn) if self.jsonl_path is not None else None
        self._writer_lock = WriterLock(self.jsonl_path, arm) if self.jsonl_path is not None else None
        self._second: int | None = None  # our pid, where another live process held the lock: it marks our rows
        self._recent: deque[dict[str, Any]] = deque(maxlen=max(self.dump_rows, 1))
        self._rows = 0
        self._notes = ConsoleNotes(self.header_every, None if run_dir is None else TABLE_NAME)  # legend, header
        self._lost = 0  # rows log() failed on (each failure kind is reported once; close() says how many)
        self._closed = False
        # log() may be called from several threads (an eval thread beside the loop): rows, header cadence and the
        # writer's pending queue are shared state. Uncontended, the lock costs well under a microsecond per row.
        self._lock = threading.RLock()
        self._alerts = AlertFeed(AlertEngine()) if alerts else None
        self._forked = False  # set in a child process created by fork(): it never prints or writes
        self._owner: int | None = None  # the thread inside log() now
        #: rows logged from inside log() (signal handlers), each with whether it is shown
        self._deferred: deque[tuple[dict[str, Any], bool]] = deque()
        self._end: str | None = None  # how the ``with`` block ended when not normally (steptable.table.runinfo.end_of)
        self._topic = f"steplogger-{next(_NUMBERS)}"  # failures are reported once per logger and kind
        self._closer = Closer(self)  # the run's description, close(), table.txt and the end-of-run dump
        # record()'s rows: their view, dump row, fit and alerts done in batches
        self._backlog = Backlog(self._recent, lambda view: self._cols.fit_widths(view), self._alerts, self._say,
                               self._topic)
        # (after_fork, at_exit, at_sigterm; a rank known to write nothing needs no SIGTERM handler: one would only
        # keep its process alive while its main thread waits in a hung collective)
        process.track(self, sigterm=self._rank.unknown or self._rank.value == 0)

    def _set_cols(self, cols: Sequence[Col]) -> None:
        # automatic columns are kept within the row's room as they widen (the caller's are printed as declared)
        self._cols = LoggerColumns(cols, room=None if self._auto is None else self._auto.room)

    @property
    def cols(self) -> tuple[Col, ...]:
        """Every column (streamed and dump-only), those declared without a width fitted so far."""
        return self._cols.cols

    @property
    def stream_cols(self) -> tuple[Col, ...]:
        return self._cols.stream_cols

    # ------------------------------------------------------------------------------------------------ rendering
    def header(self) -> str:
        """The header of the printed rows (their columns as fitted so far: see steptable.logger.consolecols)."""
        return render.header(self._cols.layout.cols)

    def row(self, cells: Mapping[str, Any]) -> str:
        return self._cols.layout.row(cells)

    def legend(self) -> str:
        """The meaning of each printed column whose header is not its key (an abbreviation's line names the key) and
        of each dump-only column; one printed under its own key reads as what was logged and is left out (every
        column's meaning: ``steptable legend``, the watch app's legend pane)."""
        self._caught_up()
        return render.legend(self._cols.legend_cols())

    # ------------------------------------------------------------------------------------------------ the loop
    @property
    def is_writer(self) -> bool:
        rank = self._rank  # (asked once a row: no call once the rank is known)
        return (rank() if rank.unknown else rank.value) == 0

    @property
    def rank(self) -> int:
        """The global rank (0 until something says it); only rank 0 prints and writes."""
        return self._rank.value

    def log(self, cells: Mapping[str, Any]) -> str | None:
        """Write the raw row to JSONL, print its rendered line (header/legend as due), emit alerts.

        Returns the rendered line (None on non-zero ranks, which print and write nothing).
        """
        return self._take(cells, True)

    def record(self, cells: Mapping[str, Any]) -> None:
        """Write the raw row to JSONL and watch it for alerts, as :meth:`log` does, without laying it out or
        rendering it: for a logger whose rows no console shows (``console=False``). The line is written at once;
        the rest of the row's work waits for a batch of rows (steptable.logger.backlog: each alert said when log()
        would say it). ``table.txt``, the dump and the run's description are the same either way."""
        self._take(cells, False)

    def _take(self, cells: Mapping[str, Any], show: bool) -> str | None:
        if not self.is_writer:
            if (note := self._rank.note()) is not None:
                report_once(f"{self._topic}-rank", note)
            return None
        if self._forked:
            if process.first_child_to_tell():  # (said once in all: a DataLoader forks new workers every epoch)
                report_once(
                    f"{self._topic}-forked",
                    "steptable: StepLogger.log called in a forked child process (a DataLoader or pool worker); only "
                    "the process that made the logger writes its rows: make the StepLogger in the child to log from "
                    "there",
                )
            return None
        if self._closed:
            self._after_close()
            return None
        termwatch.rearm()  # (a wakeup fd given up since, as asyncio gives it up: SIGTERM heard again)
        me = threading.get_ident()
        if self._owner == me:
            # Called again from inside log() on this thread (a signal handler, a __float__ that logs): writing now
            # would interleave with the row in progress. The row is read now and logged right after that one.
            self._deferred.append((freeze(cells), show))
            return None
        try:
            with self._lock:
                if self._closed:  # (closed by another thread while this one waited for the lock)
                    self._after_close()
                    return None
                self._owner = me
                try:
                    line = self._log(cells, show)
                    self._log_deferred()
                finally:
                    self._leave()
                return line
        except Exception as e:  # the loop must survive anything we do wrong
            self._lost += 1
            self._failed(e)
            return None

    def _failed(self, e: Exception) -> None:
        """A row's work failed with ``e``: said once per kind (its text may quote a path or a value: made inert)."""
        report_once(f"{self._topic}-{type(e).__name__}",
                    f"steptable: StepLogger.log failed ({error_text(e)}); training goes on")

    def _after_close(self) -> None:
        """A row refused: the logger is closed (said once)."""
        report_once(f"{self._topic}-closed", "steptable: StepLogger.log called after close(); row not recorded")

    def _log(self, raw: Mapping[str, Any], show: bool = True) -> str:
        cells, numbers = read_row(raw)
        # (a None is "not given" here too: the row's position, this logger's arm, our clock)
        step = self._rows if cells.get("step") is None else cells["step"]
        ns = time.time_ns()
        now = ns / 1e9
        record = record_of(cells, step, self.arm, ns, numbers, self._topic)
        first = self._rows == 0
        grown = False
        # automatic columns: from the first row, again for a row with new keys (before the description: it names them)
        if self._auto is not None and (first or not self._auto.knows(cells)):
            if first and self.jsonl_path is not None and self._auto.path == JSONL_NAME:
                self._auto.path = self.jsonl_path  # (user schemas beside the run apply)
            if first and self._writer is not None:  # a resumed run keeps the columns its earlier process had
                self._auto.expect_more(runinfo.column_keys(self._closer.before()))
            cols = self._auto.columns(cells, step, first, self._topic)
            if cols is not None:
                self._set_cols(cols)
                grown = not first
        if self._writer is not None:
            if first:  # before the first row: a reader that sees the row sees whose arm it is
                if self._writer_lock is not None:
                    self._second = self._writer_lock.take(f"{self._topic}-two-writers")
                self._closer.describe(None, step, self._writer_lock is not None and self._writer_lock.held)
            elif grown:  # (the description names the columns)
                self._closer.describe(None)
            if self._second is not None:  # readers show this process's rows apart from the lock holder's
                record[runinfo.WRITER_KEY] = self._second
            deleted = self._writer.deleted
            self._write(self._writer, record)
            if self._writer.deleted != deleted and self._writer_lock is not None:  # (its lock may be gone too)
                self._second = self._second or self._writer_lock.again(f"{self._topic}-two-writers")
        else:
            self._rows += 1
        if not show:  # (what only the alerts and the end of the run need of the row waits for a batch)
            self._backlog.add(step, cells, now, self._rows - 1, numbers)
            return ""
        self._backlog.catch_up()  # (rows record() wrote before this one: in order)
        view = row_view(cells, step)
        self._recent.append(kept(view))
        line = self._show(view, first, grown)
        if self._alerts is not None:
            self._say(self._alerts.add(step_number(step, self._rows - 1), view, now))
        return line

    def _write(self, w: RunWriter, record: dict[str, Any]) -> None:
        """Write the row and count it; a signal handler's exception in the write (``sys.exit(1)``, a Ctrl-C) counts
        it where the writer took it (written, or kept for close), so the run's count is the JSONL's."""
        taken = w.written + w.pending + w.dropped
        try:
            w.write(record)
        except BaseException:
            if w.written + w.pending + w.dropped > taken:
                self._rows += 1
            raise
        self._rows += 1

    def _show(self, view: Mapping[str, Any], first: bool, grown: bool) -> str:
        """Print ``view``'s row (the legend, the columns left out and the header as due: see ConsoleNotes); the
        row's line."""
        # The columns fitted to the row's values (those declared without a width too, as the run's description
        # gives them); the row was counted at its write: a failure below must not bring the legend back next step.
        cols = self._cols
        cols.fit_widths(view)
        widened = cols.layout.update(view)  # a column grows to this row's value: its header again
        room, unshown = (self._auto.room, self._auto.dropped) if self._auto is not None else (None, [])
        # (an automatic layout would show every key: the empty one cannot be a column, so it is said)
        empty = None if self._auto is None or "" not in view else EMPTY_KEY if self._writer is None else EMPTY_KEY_NOTE
        for text in self._notes.before_row(cols.layout, cols.legend_cols(), first, grown, widened, room, unshown,
                                           empty):
            self._emit(text)
        line = self.row(view)
        self._emit(line)
        return line

    def _say(self, alerts: Sequence[Alert]) -> None:
        for alert in alerts:
            self._notes.since_header += 1  # a line of the log too: the header's cadence counts lines
            self._emit(alert.message_line(), level="ERROR" if alert.level == "E" else "WARNING")

    def _emit(self, text: str, level: str = "INFO") -> None:
        emit(text, level, self.console)

    def _warn(self, text: str) -> None:
        warn(f"steptable: {text}", self.console)

    # ------------------------------------------------------------------------------------------------ the end
    def dump(self) -> str:
        """Every column (streamed and dump-only) for the last ``dump_rows`` rows, with the legend of the dump."""
        self._caught_up()
        return self._closer.dump()

    def write_table(self) -> Path | None:
        """Write the arm's rows (the last ``tablefile.MAX_ROWS`` of a longer run), every column, beside the JSONL (read
        back from it): ``table.txt``, or ``table.<arm>.txt`` where arms share it. None without a regular JSONL."""
        self._caught_up()
        return self._closer.write_table()

    def _caught_up(self) -> None:
        """The rows record() left waiting, seen now (steptable.logger.backlog): the columns fitted, the dump rows.
        Raises nothing (a row whose work fails is reported once, as record() reports it; training goes on). From
        inside log() on this thread (a signal handler), the rows seen so far: the row in progress comes first."""
        me = threading.get_ident()
        if self._owner == me:
            return
        try:
            with self._lock:
                self._owner = me  # (a row a signal handler logs meanwhile comes after the waiting rows, as in log())
                try:
                    self._backlog.catch_up()
                    self._log_deferred()
                finally:
                    self._leave()
        except Exception as e:
            self._failed(e)

    def close(self, end: str | None = None, *, ended_well: bool = False) -> None:
        """Final flush, the run marked ended, ``table.txt``, the end-of-run dump. Idempotent; raises nothing of its
        own, but an interrupt (Ctrl-C) during it is raised again once the run is marked ended (not the table).
        Called while an exception is being handled (from a ``finally`` it passes through, or an ``except``: a sweep
        that catches an OOM and goes on), the run is marked ended by it, as ``with StepLogger(...)`` marks it.
        ``end``: how the run ended where the caller knows better (a trainer that reports a failed run:
        ``steptable.table.runinfo.INTERRUPTED`` or an error's type name). ``ended_well``: the caller knows the run
        ended normally (a trainer's own end of training), whatever exception is being handled around the call (a
        retry inside the ``except`` of the failed attempt)."""
        if not self._closed and self._end is None and not ended_well:
            self._end = end or runinfo.end_of(sys.exc_info()[1])
        self._closer.close()

    def after_fork(self) -> None:
        """In a child made by fork(): this logger never prints or writes here (steptable.logger.process)."""
        self._forked = True
        self._lock = threading.RLock()  # the parent's lock may have been held by another thread at the fork
        if self._writer_lock is not None:
            self._writer_lock.after_fork()

    def at_exit(self, died: BaseException | None = None) -> None:
        """The process exits without close() (``died``: the exception that ended it): see Closer.at_exit."""
        self._closer.at_exit(died)

    def at_sigterm(self) -> None:
        """SIGTERM kills the process next: the run marked interrupted (see Closer.at_sigterm)."""
        self._closer.at_sigterm()

    def _leave(self) -> None:
        """The end of this thread's turn inside log() (or a catch-up): a close() called from inside it (a signal
        handler's) is done now, also where the handler's sys.exit() left the row (close(); exit)."""
        self._owner = None
        if self._closer.due:
            self._closer.close_now()

    def _log_deferred(self) -> None:
        """Log the rows logged from inside log() (a signal handler's) that the end of that row did not reach: an
        exception left it (the handler's ``close(); sys.exit()``, a Ctrl-C in the same row)."""
        while self._deferred:
            self._log(*self._deferred.popleft())

    def _final_flush(self) -> None:
        self._backlog.say_waiting(self._lock)  # (before the file closes: a failure there must not keep it open)
        if self._writer is not None:
            self._writer.close()
        if self._writer_lock is not None:
            self._writer_lock.release()

    def _final_dump(self) -> None:
        if self._rows:
            # lines after the first indented as the sink's "I " indents the first: the dump's table sits under the
            # streamed rows, column for column
            self._emit(self._closer.console_end().replace("\n", "\n  "), level="INFO")

    def __enter__(self) -> StepLogger:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close, the run marked as ended by what left the block: a crash or a Ctrl-C must not read as a run that
        finished (steptable.table.runinfo.end_of). Closed already (a SIGTERM handler's ``close(); sys.exit(1)``): the
        description says it again, with how the block ended."""
        self._closer.exit(runinfo.end_of(exc))

