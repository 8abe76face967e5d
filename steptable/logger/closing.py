"""The end of a StepLogger's run: close()'s steps, the run's description marked ended, ``table.txt`` and the
end-of-run dump; and the ends without close() that steptable.logger.process tells of (the exit, an exception
uncaught in the main thread, SIGTERM), which mark the description only.

:class:`Closer` is owned by one :class:`~steptable.logger.steplogger.StepLogger` and works on its state: the loop's
rows, lock, writer and run description stay the logger's, and close() runs its ``_final_flush`` and ``_final_dump``
(looked up on it at close). Contracts: close() is idempotent and raises nothing of its
own (an interrupt during it is raised again once the run is marked ended); each step runs whatever the one before
did, and a failed step is reported once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from steptable.ingest.files.siblings import last_change
from steptable.ingest.sidefiles import read_regular
from steptable.logger import tablefile
from steptable.logger.sinks import report_once
from steptable.logger.wholefile import write_description
from steptable.logger.writer import error_text
from steptable.table import render, runinfo
from steptable.table.formatting import sanitize

if TYPE_CHECKING:
    from steptable.logger.steplogger import StepLogger


class Closer:
    """The closing of ``sl``'s run: the final flush, the run marked ended in its description (written at the first
    row too: :meth:`describe`), ``table.txt``, the end-of-run dump."""

    def __init__(self, sl: StepLogger) -> None:
        self._sl = sl
        self.due = False  # close() was called from inside log(): done when that call ends (see :meth:`close_now`)
        self._marked_ended = False  # steptable.json says the run ended (close() got that far)
        self._table: Path | None = None
        self._table_note = "all rows"
        self._table_cols = "every column"
        self._started = 0.0  # when the first row came (the description's start)
        self._closed_at: float | None = None  # when the description said the run ended
        self._earlier: list[tuple[str, int, float]] = []  # how earlier processes of the run ended (runinfo.earlier)
        self._before: dict[str, Any] | None = None  # the description an earlier process left (see :meth:`before`)
        self._read_before = False

    def describe(self, closed: float | None, first_step: Any = None, alone: bool = False,
                 exited: float | None = None) -> None:
        """``steptable.json`` beside the JSONL: the logger's columns, and whether the run has ended (``closed``: when;
        None at the first row, and where the automatic columns grew; see steptable.table.runinfo). The start is the
        first description's. At the first row (its step ``first_step``) the description an earlier process left is
        read first: where it ended with an error or an interruption, or was killed (it neither closed its logger
        nor exited, though this process ``alone`` writes the arm now: it holds the writer lock, that process is
        gone), that end and this resume are kept in the new one (it would be forgotten). ``exited``: the process
        exits without close() (when). Readers do without it, so a failure is reported once and nothing else
        happens."""
        sl = self._sl
        if sl.run_dir is None or sl.jsonl_path is None:
            return
        if closed is None and not self._started:
            self._started = time.time()
            self._earlier = self._ends_before(first_step, alone)
        self._closed_at = closed
        try:  # (anything: the description must never cost a row)
            arm = None if sl.arm is None else str(sl.arm)
            sl.run_dir.mkdir(parents=True, exist_ok=True)
            info = runinfo.describe(sl.cols, arm, sl.jsonl_path.name, self._started, closed, sl._rows, sl._end,
                                    self._earlier, exited)
            write_description(sl.run_dir, info)
        except Exception as e:
            report_once(f"{sl._topic}-runinfo",
                        f"steptable: cannot write {runinfo.file_name(sl.arm)} ({error_text(e)})")

    def at_exit(self, died: BaseException | None) -> None:
        """StepLogger.at_exit: the process exits (steptable.logger.process). Where close() did not: the rows logged
        from inside a row that an exception then left are logged, the description marked exited (not killed), or
        ended by ``died`` (an exception uncaught in the main thread, as a ``with`` block it left marks it), and the
        alerts of rows still waiting for their batch said. The logger's lock is waited for 1 s at most."""
        sl = self._sl
        if sl._closed or sl._forked:
            return
        if sl._lock.acquire(timeout=1.0):
            try:  # rows a signal handler logged inside a row that its sys.exit() then left
                sl._log_deferred()
            except Exception as e:
                sl._failed(e)
            finally:
                self.exiting(died)  # (raises nothing)
                sl._lock.release()
        sl._backlog.say_waiting(sl._lock, wait=1.0)

    def exiting(self, died: BaseException | None = None) -> None:
        """The process exits and the run was not closed: its description says it exited (``exited``: a process
        that resumes the run then knows this one was not killed), or, where an exception uncaught in the main
        thread ended it (``died``: steptable.logger.process.died_of), that the run ended by it, as a ``with`` block
        left by it says. Called with the logger's lock held."""
        sl = self._sl
        end = runinfo.end_of(died)
        if end is not None:
            self.mark(end)
        elif not sl._closed and sl.is_writer and not sl._forked and sl._rows:
            self.describe(None, exited=time.time())

    def mark(self, end: str) -> None:
        """The run marked ended now by ``end`` (steptable.table.runinfo.end_of), where it was not closed and a
        process ends without close(): the description only, the rows, files and lock left as they are (an exit
        or a signal ends the process next; inside close(), where it has not marked the run ended yet). Its columns
        fitted to the rows record() left waiting first."""
        sl = self._sl
        if self._marked_ended or not sl.is_writer or sl._forked or not sl._rows:
            return
        sl._end = sl._end or end
        self._fit_waiting()
        self.describe(time.time())

    def at_sigterm(self) -> None:
        """SIGTERM ends the process at its default action next (steptable.logger.process): the run marked
        interrupted. Inside log() on this thread (the handler runs between two of its steps), without the logger's
        lock: that row is written and counted, or neither, and the description is a file of its own, written whole.
        Another thread's row in progress is waited for, 1 s at most (a thread stuck inside a row, or waiting on
        this one, must not keep the process from dying: the run is marked all the same). Inside close() (this
        thread's, which holds the lock) before it marked the run ended: marked too."""
        sl = self._sl
        if (sl._closed and self._marked_ended) or sl._forked:
            return
        if sl._owner == threading.get_ident():
            self.mark(runinfo.INTERRUPTED)
            return
        held = sl._lock.acquire(timeout=1.0)
        try:
            self.mark(runinfo.INTERRUPTED)
        finally:
            if held:
                sl._lock.release()

    def _fit_waiting(self) -> None:
        try:
            self._sl._backlog.fit_waiting()
        except Exception as e:
            report_once(f"{self._sl._topic}-close-fit", f"steptable: StepLogger.close: fitting the columns failed "
                        f"({error_text(e)})")

    def _ends_before(self, first_step: Any, alone: bool) -> list[tuple[str, int, float]]:
        """The earlier ends the run's description holds, and the one of the process before this (resumed at
        ``first_step``) where it did not end normally: its end, or, neither closed nor exited while this process is
        ``alone``, runinfo.UNCLOSED at the JSONL's last change (when it was last heard of; with arms sharing the
        file, maybe another arm's row); none where there is no description of this JSONL."""
        sl = self._sl
        info = self.before()
        if info is None or sl.jsonl_path is None:
            return []
        ends = runinfo.earlier(info)
        end, closed = runinfo.ended_by(info), runinfo.closed_at(info)
        if type(first_step) is int:
            if end is not None and closed is not None:
                ends.append((end, first_step, closed))
            elif closed is None and alone and not (info or {}).get("exited") and \
                    (last := last_change(sl.jsonl_path)) is not None:
                ends.append((runinfo.UNCLOSED, first_step, last))
        return ends[-runinfo.MAX_EARLIER:]

    def before(self) -> dict[str, Any] | None:
        """The description of this JSONL that an earlier process of the run left (read once, before this process
        writes its own at the first row), or None (a new run, or one that cannot be read)."""
        sl = self._sl
        if not self._read_before and sl.run_dir is not None and sl.jsonl_path is not None:
            self._read_before = True
            try:
                data = read_regular(sl.run_dir / runinfo.file_name(sl.arm), runinfo.MAX_BYTES)
                self._before = runinfo.parse(data, sl.jsonl_path)
            except Exception:  # (nothing to keep, and no row lost)
                self._before = None
        return self._before

    def dump(self) -> str:
        """Every column (streamed and dump-only, but those the console left out to fit its width) for the last
        ``dump_rows`` rows, with the legend of the dump."""
        sl = self._sl
        rows = list(sl._recent)[-sl.dump_rows :] if sl.dump_rows else []
        parts = [self._end_words()]
        if rows:
            # (its own notations: bare headers; the columns left out to keep the rows within the terminal stay out)
            cols = [c for c in sl._cols.shown(sl._cols.layout.bare) if c.key not in sl._cols.layout.hidden]
            parts.append(render.table(cols, rows))
        extra = [c for c in sl.cols if not c.stream]
        if extra:
            parts.append(render.legend(extra, title="dump-only columns:"))
        if self._table is not None:
            parts.append(f"{self._table_note}, {self._table_cols}: {sanitize(str(self._table))}")  # (run_dir's text)
        return "\n".join(parts)

    def console_end(self) -> str:
        """What the console gets at close: with ``table.txt`` written, one line that points to it (its last rows
        are the rows printed just above, and it holds every column of every row: a dump of them would be paid for
        again in every log of the run); without one, :meth:`dump`."""
        if self._table is None:
            return self.dump()
        return f"{self._end_words()}; {self._table_note}, {self._table_cols}: {sanitize(str(self._table))}"

    def _end_words(self) -> str:
        sl = self._sl
        return (f"end of run: {sl._rows} rows" + (f", arm {sanitize(str(sl.arm))}" if sl.arm else "")
                + (f", {runinfo.end_words(sl._end)}" if sl._end else ""))

    def write_table(self) -> Path | None:
        """Write the arm's rows (the last ``tablefile.MAX_ROWS`` of a longer run), every column, beside the JSONL (read
        back from it): ``table.txt``, or ``table.<arm>.txt`` where arms share it. None without a regular JSONL."""
        sl = self._sl
        if sl.run_dir is None or sl.jsonl_path is None:
            return None
        # (the keys an automatic row had no room for too: the line that named them pointed here)
        have = {c.key for c in sl.cols}
        extra = [] if sl._auto is None else [c for c in sl._auto.left_out if c.key not in have]
        done = tablefile.write_table(sl.cols, sl.jsonl_path, sl.run_dir, sl.arm, sl.header_every, extra=extra)
        if done is None:
            return None
        self._table_note = done.note(sl._rows, sl._writer.why_missing(sl._rows) if sl._writer else "")
        self._table_cols = done.columns()
        return done.path

    def close(self) -> None:
        """StepLogger.close: see there. From inside log() on this thread, only marked :attr:`due` (and the run
        marked ended now)."""
        sl = self._sl
        if sl._owner == threading.get_ident():  # from inside log() (a signal handler): once that row is done
            if sl._closed:  # (a catch-up after close: a dump() then)
                return
            self.due = True
            if sl.is_writer and not sl._forked and sl._rows:
                # and the run marked ended now: a handler that goes on to os._exit() never comes back to the row
                # (its columns fitted to the rows record() left waiting first: the description gives their widths)
                self._fit_waiting()
                self.describe(time.time())
            return
        try:
            with sl._lock:
                self.close_now()
        except (KeyboardInterrupt, SystemExit):
            # A second Ctrl-C while the first one's close() runs (or a SIGTERM handler's exit): the run marked
            # ended once more where it was cut short, else it reads as stalled for ever; then raised.
            self._mark_ended_again()
            raise

    def close_now(self) -> None:
        """close()'s steps, the logger's lock held."""
        sl = self._sl
        if sl._closed or not sl.is_writer or sl._forked:
            sl._closed = True  # a forked child leaves the file, the table and the dump to its parent
            return
        sl._closed = True
        steps: tuple[tuple[str, Callable[[], None]], ...] = (
            ("logging the rows logged from inside a row", sl._log_deferred),
            ("the final flush", sl._final_flush),
            # before table.txt (slow on a long run): a job killed meanwhile must not read as a stalled run forever
            ("marking the run ended", self._describe_closed),
            ("writing table.txt", self._write_table_at_close),
            ("the end-of-run dump", sl._final_dump),
        )
        stop: BaseException | None = None
        for what, run in steps:  # each runs whatever the one before did (after an interrupt, all but the table)
            try:
                if stop is None or run != self._write_table_at_close:
                    run()
            except Exception as e:
                report_once(f"{sl._topic}-close-{what}",
                            f"steptable: StepLogger.close: {what} failed ({error_text(e)})")
            except BaseException as e:  # Ctrl-C, SystemExit from a signal handler: the user's, raised below
                stop = stop or e
        if sl._lost:  # the failures were reported once each; say how many rows they cost in all
            report_once(f"{sl._topic}-lost", f"steptable: {sl._lost} row(s) could not be logged in this run")
        if stop is not None:
            raise stop

    def _write_table_at_close(self) -> None:
        if self._sl._rows:
            self._table = self._sl.write_table()

    def _describe_closed(self) -> None:
        if self._sl._rows:
            self.describe(time.time())  # the run ended: readers stop watching it for a stall
            self._marked_ended = True

    def _mark_ended_again(self) -> None:
        """After an interrupt in close(): the run marked ended if that was cut short or never reached."""
        sl = self._sl
        if not self._marked_ended and sl._rows and sl.is_writer and not sl._forked:
            with sl._lock:
                self.describe(time.time())
                self._marked_ended = True

    def exit(self, end: str | None) -> None:
        """StepLogger.__exit__ with ``end`` (steptable.table.runinfo.end_of of what left the block): see there."""
        sl = self._sl
        if not sl._closed:
            sl._end = end
            self.close()  # (not StepLogger.close: a block that ended well says so, whatever an outer except handles)
            return
        if end is None:
            return
        with sl._lock:
            sl._end = end
            if self._closed_at is not None and sl.is_writer and not sl._forked:
                self.describe(self._closed_at)
