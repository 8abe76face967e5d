"""`steptable tail`: a run's table (or normalised rows) on stdout, optionally following the files live.

The same renderer as StepLogger; several runs share one column layout and are printed as labelled blocks.
Bad lines go to stderr as ``path:line: reason``. ``--alerts-only`` prints nothing but alert lines and exits 1
when an error-level alert fired. What is printed is steptable.cli.tailout's Tail; this module is the command.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from typing import Any, TextIO, cast

from steptable.alerts.replaced import read_replaced
from steptable.cli.reading import no_run, non_negative, positive_seconds
from steptable.cli.tailcursor import CursorArg, cursor_line
from steptable.cli.tailout import DEFAULT_WIDTH, Tail
from steptable.ingest import Follower
from steptable.ingest.files.discover import missing_paths, nothing_found
from steptable.table.formatting import sanitize

__all__ = [
    "DEFAULT_WIDTH", "Tail", "add_parser", "cursor_line", "missing_paths", "run",
    "tail_once", "whole_if_needed",
]


def add_parser(sub: Any) -> None:
    """Add the ``tail`` command and its options to ``sub`` (an argparse subparsers object)."""
    t = sub.add_parser(
        "tail", help="print runs as the fixed-width table (or jsonl/csv/md), optionally live",
        description="Print runs as the fixed-width table (or JSONL, CSV, markdown); with -f, keep printing what is "
        "new until stopped. Bad lines go to stderr as path:line: reason.",
        epilog="Exit status: 0 success; 1 an error alert fired (--alerts-only); 2 a usage error, a path that does not "
        "exist, --columns that match no column at all (one-shot), or nothing readable (no metrics file, no readable "
        "row, a run that could not be read). A metrics "
        "file without a row yet is a run just started: 0 and 'no rows yet', but 2 with --alerts-only (nothing was "
        "checked; a trainer that died before its first step must not pass as 'no alerts'). With -f the "
        "same, when the watch ends (Ctrl-C, TERM or HUP, however many; a reader that left): 1 if an error alert "
        "fired at any time, 2 if no readable row was ever found or a path given is not there at the end. Waiting "
        "for a run that has not started yet is normal under -f, but a watch that ends without a row checked "
        "nothing: 2.",
    )  # fmt: skip
    t.add_argument("paths", nargs="+", help="metrics files or directories (searched recursively)")
    t.add_argument(
        "-f", "--follow", action="store_true",
        help="keep printing new rows as they are written, and runs as they appear (until Ctrl-C or TERM)",
    )  # fmt: skip
    t.add_argument(
        "-n", "--last", type=non_negative, default=None,
        help="rows per run to print first (default 20, or all after --since; 0 = all); a run that appears under -f "
        "is printed whole",
    )  # fmt: skip
    t.add_argument(
        "--since", action=CursorArg, default=None, metavar="CURSOR",
        help="only rows (and alerts) after the cursor: STEP (every run's rows at steps after it), or the one the "
        "last line on stderr gave, to pass next time: STEP:CELLS[:EDITS]@RUN for one run (its row at STEP had CELLS "
        "cells when printed, and comes again whole if more were merged into it since, as an evaluation logged after "
        "the step's training metrics is; its rows before had been changed EDITS times, 0 when left out (a cell "
        "merged into an earlier row, a row inserted, a resume): a row changed since comes again, and a resume since "
        "to a step at or before STEP is told, with the rows from it); over several runs a token of each run's "
        "STEP:CELLS:EDITS (a run not in it, as one that appeared since, comes from its start)",
    )
    t.add_argument(
        "--page", type=non_negative, default=None, metavar="N",
        help="with --since or -n: at most N rows, the earliest after the cursor (of the last -n rows), shared among "
        "the runs (as evenly as their rows allow, at least 1 each; the cursor line gives where each run's next page "
        "starts; stderr says how many rows are left); 0 = all",
    )
    t.add_argument("--run", default=None, metavar="NAME", help="only the run with this id or arm (see steptable runs)")
    t.add_argument("--columns", default="", help="comma-separated globs of keys/headers to show (step is kept)")
    t.add_argument(
        "--format",
        choices=("text", "jsonl", "csv", "md"),
        default="text",
        help="the fixed-width table (default), one JSON object a row, CSV (one header: the union of the runs' "
        "columns; under -f a column that appears later adds a header line, said on stderr; text a spreadsheet would "
        "run as a formula, starting with = + - @, gets a leading '), or markdown tables. "
        "Alerts (--alerts-only) follow it too. Under -f, rows lost for good (a file replaced or truncated before "
        "its rest was read, no file holding it) are said in-band and on stderr: a notice line (text), a quote "
        "between two tables (md), an object with kind steptable.gap and no step (jsonl), a line starting with # "
        "(csv: pandas' comment='#' skips it)",
    )
    t.add_argument("--schema", default=None, help="column set to use instead of the detected one")
    t.add_argument("--schema-file", metavar="PATH", default=None,
                   help="a schema file (TOML) to apply; a log directory's steptable.toml applies only "
                   "at or below the paths given")
    t.add_argument(
        "--width", type=non_negative, default=None,
        help=f"max width of the text table in cells (default: the terminal's, {DEFAULT_WIDTH} in a pipe; 0 = any)",
    )
    t.add_argument("--header-every", type=non_negative, default=20, help="repeat the header every N rows (0 = once)")
    t.add_argument("--alerts-only", action="store_true", help="print only alerts; exit 1 if an error alert fired")
    t.add_argument(
        "--poll", type=positive_seconds, default=None, help="poll files every SECONDS instead of notifications"
    )


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``steptable tail`` with the parsed ``args``, printing to ``out`` and ``err`` (stdout and stderr by
    default); returns the exit status (:func:`_status`). Under ``-f`` it returns only when the watch ends."""
    out = out or sys.stdout
    err = err or sys.stderr
    if getattr(args, "page", None) and ((args.since is None and args.last is None) or args.follow):
        _say(err, "steptable tail: --page needs --since or -n, and no -f (pages of rows after a cursor, or of the "
                  "last rows)\n")
        return 2
    if args.follow:
        return _follow(args, out, err)
    status, cursor = tail_once(args, out, err)
    if (getattr(args, "since", None) is not None or getattr(args, "page", None)) and cursor:
        _say(err, cursor)  # (a page of the last rows: where the next page starts)
    return status


def tail_once(args: argparse.Namespace, out: TextIO, err: TextIO) -> tuple[int, str]:
    """One read of the runs (no -f): what is printed, then the exit status and the cursor's line
    (:func:`cursor_line`): where each run chosen was left (steptable.cli.tailsince.Places.cursor: one run's step
    and row, or a token of every run's; ``--since`` itself when no row is past it, with the runs' last step; none
    when no run has a row and no --since was given). With status 2 no line,
    but for the alerts of the runs read where others could not be checked (no rows yet, a path missing)."""
    tail = Tail(args, out, err)
    # --columns: only the keys they need are stored (steptable.cli.tailkeep)
    follower = Follower(args.paths, poll=args.poll, on_resume=read_replaced, keep=tail.projection())
    follower.scan()
    follower.finish()  # a file that will not grow: its unterminated last line is a row too
    follower = whole_if_needed(tail, follower, args, finish=True)
    try:
        tail.emit(follower)
        if args.alerts_only and follower.stores:  # a stall still going on (a one-shot check by an agent or CI)
            tail.check_stalls(time.time(), tail.chosen(follower))
    except BrokenPipeError:  # the reader left (`| head`): not an error in itself; the status of what was read
        _quiet(out)  # stands (an error alert seen, a --columns typo, a missing path: `set -o pipefail` sees it)
    status, cursor = _status(args, follower, tail, err, live=False), tail.cursor(follower)
    if status == 2 and not (args.alerts_only and cursor is not None):
        return status, ""  # (a cursor past rows not shown as asked, or none read: none to go on from)
    return status, cursor_line(cursor, tail.short_of(follower), len(tail.chosen(follower)))


def whole_if_needed(tail: Tail, follower: Follower, args: argparse.Namespace, finish: bool) -> Follower:
    """``follower``, scanned with the stores ``tail.projection()`` gave it, when what they kept prints what stores of
    every key would; else the runs read again (``finish``: to the end of a file that will not grow) into stores of
    every key (rare: a key that a column selected needs was left out, or headers that rest on values not kept)."""
    if follower.keep is None or tail.projection_holds(tail.chosen(follower)):
        return follower
    whole = Follower(args.paths, poll=args.poll, on_resume=read_replaced)
    whole.scan()
    if finish:
        whole.finish()
    return whole


def _status(args: argparse.Namespace, follower: Follower, tail: Tail, err: TextIO, live: bool) -> int:
    """The exit status of what was read: 2 when nothing readable was found (a mistyped path, garbage) or a path is
    missing or unreadable, else 1 after an error alert, else 0. Under -f the same, of the state when it stopped
    (a run that appeared while following counts; a row read then lost to a rotation too), and 2 when no row was
    ever read."""
    chosen = tail.chosen(follower)
    read = tail.read_rows or any(len(s) for s in chosen)
    if not read and not follower.stores:  # --alerts-only too: a mistyped path in CI must not pass as "no alerts"
        _say(err, f"steptable tail: {sanitize(nothing_found(args.paths))}\n")
        return 2
    if not chosen:  # --run named none of the runs found
        _say(err, no_run("tail", args.run, follower.stores))
        return 2
    paths = ", ".join(sanitize(str(s.path)) for s in chosen)
    if not read and follower.read_nothing():  # not a quiet success, even for --alerts-only
        _say(err, f"steptable tail: no readable rows in {paths}\n")
        return 2
    if not read and live:  # a watch that ends without a row checked nothing (one-shot: a run just started)
        _say(err, f"steptable tail: no rows in {paths}\n")
        return 2
    if not read:
        _say(err, f"steptable tail: no rows yet in {paths}" + (": nothing checked\n" if args.alerts_only else "\n"))
        if args.alerts_only:  # a check of nothing: a trainer that died before its first row must not pass CI
            return 2
    status = 1 if tail.alerts.error_alert else 0
    if not live and tail.filter_missed():  # a mistyped filter showed the step column only
        status = 2
    empty = [s for s in chosen if not len(s)]
    if read and empty and args.alerts_only and not live:  # one run of several died before its first row
        _say(err, f"steptable tail: no rows yet in {', '.join(sanitize(str(s.path)) for s in empty)}: nothing "
                  "checked there\n")
        status = 2
    if _say_missing(args, err):  # --alerts-only of some runs must not pass for "no alerts" in all
        status = 2
    if unread := follower.unreadable():
        _say(err, f"steptable tail: could not read {sanitize(', '.join(unread))}\n")
        status = 2
    return status


def _follow(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Follow until a stop signal, a reader that left or a failed stdout. The follower thread does all the reading
    and printing (the first view included: a long first read must not hold up Ctrl-C); this thread waits for a
    signal, checks stalls and, at the end, works out the status."""
    signals = _StopSignals()  # first: a TERM from now on ends the watch with its status
    try:
        for p in missing_paths(args.paths):  # followed anyway: a run that has not started yet is picked up then
            err.write(f"steptable tail: no such path (yet): {sanitize(p)}\n")
        err.flush()
        stop = threading.Event()  # set: the follower ends, and the gates end any printing under way
        tail = Tail(args, cast(TextIO, _Gate(out, stop)), cast(TextIO, _Gate(err, stop)))
        follower = Follower(args.paths, poll=args.poll, on_resume=read_replaced, keep=tail.projection())
        lock = threading.Lock()  # one printer at a time: the follower thread's emits, this thread's stall checks
        failed: list[BaseException] = []
        viewed = threading.Event()  # the first view was printed: what a stop during a later read leaves checked

        def emit() -> None:
            with lock:
                if stop.is_set():
                    return
                try:
                    tail.emit(follower)
                except _Halted:
                    pass
                except OSError as e:  # a closed pipe, a full disk under stdout: the main thread ends the command
                    failed.append(e)
                    stop.set()

        def work() -> None:
            nonlocal follower
            try:
                signals.keep_out()
                follower.scan()
                follower = whole_if_needed(tail, follower, args, finish=False)
                emit()  # the first view: -n rows of each run found now
                viewed.set()
                follower.run(stop, lambda _runs: emit())
            except BaseException as e:  # said by the main thread (a traceback there is one of the command's)
                failed.append(e)
                stop.set()

        worker = threading.Thread(target=work, daemon=True, name="steptable-tail")
        worker.start()
        due = time.monotonic() + STALL_CHECK_S
        try:
            while worker.is_alive() and not signals.received:
                worker.join(timeout=WAKE_S)  # (a signal's handler runs in this thread; it only takes note)
                if args.alerts_only and time.monotonic() >= due and not stop.is_set():
                    due = time.monotonic() + STALL_CHECK_S
                    with lock:
                        tail.check_stalls(time.time(), tail.chosen(follower))
        except (_Halted, KeyboardInterrupt):  # (KeyboardInterrupt: where no handler could be set)
            pass
        except OSError as e:
            failed.append(e)
        stop.set()
        if lock.acquire(timeout=STOP_WAIT_S):  # a print under way ends at its next line: let that line out whole
            lock.release()
        worker.join(timeout=STOP_WAIT_S)  # its pass over the files ends (the status reads what it found)
        if failed and not isinstance(failed[0], BrokenPipeError):
            raise failed[0]  # the CLI says a failed stdout in one line (status 2)
        try:
            out.flush()
        except OSError as e:
            if not (isinstance(e, BrokenPipeError) or signals.received):  # (a hang-up: the terminal is gone)
                raise
            failed.append(e)
        if failed:
            _quiet(out)
        if worker.is_alive():  # a read the stop cannot cut short: the state it changes is not read from here
            return _status_of_a_read_cut_short(args, tail, err, viewed.is_set())
        return _status(args, follower, tail, err, live=True)
    finally:
        signals.restore()


def _status_of_a_read_cut_short(args: argparse.Namespace, tail: Tail, err: TextIO, viewed: bool) -> int:
    """The exit status of a watch stopped while its follower was still reading (a first read of many runs, a long
    pass) and did not end within :data:`STOP_WAIT_S`: that of the rows checked before that read, as :func:`_status`
    would give it then (2 before the first view: nothing was checked)."""
    if not viewed:
        _say(err, "steptable tail: stopped before the first read ended: nothing checked\n")
        return 2
    if not tail.read_rows:
        _say(err, "steptable tail: stopped during a read, with no row read before it: nothing checked\n")
        return 2
    return 2 if _say_missing(args, err) else 1 if tail.alerts.error_alert else 0


def _say_missing(args: argparse.Namespace, err: TextIO) -> bool:
    """Say each path given that does not exist (now); whether there was one."""
    missing = missing_paths(args.paths)
    for p in missing:
        _say(err, f"steptable tail: no such path: {sanitize(p)}\n")
    return bool(missing)


STALL_CHECK_S = 5.0  # seconds between stall checks of --alerts-only
WAKE_S = 0.1  # the longest a stop signal waits to be seen
STOP_WAIT_S = 2.0  # at a stop, the longest wait for the printing under way to end


class _Halted(Exception):
    """Printing was stopped: the follow loop is ending."""


class _Gate:
    """A stream that raises _Halted once ``stop`` is set: printing under way ends at a line's end, never in the
    middle of one, and the follower thread is not writing when the interpreter ends (its last flush would wait
    for that thread's lock)."""

    def __init__(self, stream: TextIO, stop: threading.Event) -> None:
        self.stream, self.stop = stream, stop

    def write(self, text: str) -> int:
        if self.stop.is_set():
            raise _Halted
        return self.stream.write(text)

    def flush(self) -> None:
        if self.stop.is_set():
            raise _Halted
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()


class _StopSignals:
    """TERM, INT and HUP end the watch, whatever their number and timing. The handler only takes note: no exception
    raised at an arbitrary point (in the middle of a line, in a ``finally``) and no lock taken. Other threads block
    them (:meth:`keep_out`), so they reach the main thread only; once one came, the main thread blocks them too and
    the process ends with its own status: a second signal (coreutils `timeout` sends TERM to the child and then to
    its process group; a double Ctrl-C) neither kills it nor changes that. (Blocked, not handled or ignored: the
    interpreter puts the default action back on handled signals as it exits, and a signal noted just before a
    switch to SIG_IGN is reported as a "race condition".) A signal ignored at the start (nohup, a background job)
    stays ignored."""

    def __init__(self) -> None:
        self.received = 0
        self.old: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return  # (handlers can only be set there)
        for name in ("SIGTERM", "SIGINT", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is None:  # (no SIGHUP on Windows)
                continue
            try:
                old = signal.getsignal(sig)
                if old == signal.SIG_IGN:
                    continue
                signal.signal(sig, self._note)
            except (ValueError, OSError):
                continue
            self.old[sig] = signal.SIG_DFL if old is None else old

    def keep_out(self) -> None:
        """In a thread started for the watch (and the threads it starts): these signals are the main thread's."""
        if self.old and hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, set(self.old))

    def _note(self, signum: int, _frame: Any) -> None:
        self.received = self.received or signum
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, set(self.old))
        else:  # (Windows)
            for sig in self.old:
                signal.signal(sig, signal.SIG_IGN)

    def restore(self) -> None:
        if self.received:
            return
        for sig, old in self.old.items():
            signal.signal(sig, old)


def _quiet(stream: TextIO) -> None:
    """The reader left: what is still buffered goes to /dev/null (the interpreter's last flush must not fail)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, stream.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError):  # (not a file: a StringIO)
        pass


def _say(err: TextIO, text: str) -> None:
    """A last line on stderr; a stderr gone (a hang-up) must not turn the status into a traceback."""
    try:
        err.write(text)
        err.flush()
    except (OSError, ValueError):
        pass
