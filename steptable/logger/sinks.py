"""The loguru sinks setup_logging installs, and steptable's own notices: how a line is written.

A console line goes to stdout between tqdm's progress bars (cleared and redrawn around it) and is flushed at once; a
verbose-file line is appended and flushed, the file made again if it is deleted under the run; a notice (``say``,
``report_once``) goes to stderr the same way and into the verbose file. None of them raises into the caller (a
Ctrl-C excepted). Which sinks are installed, with what filter, format and path, is ``steptable.logger.setup``'s.
"""

from __future__ import annotations

import atexit
import errno
import itertools
import os
import stat
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from steptable.logger.appendfile import open_append
from steptable.table.cells import sanitize
from steptable.table.formatting import char_cells


class ConsoleSink:
    """A loguru sink that writes between tqdm's bars, flushes, and never raises into the caller (a Ctrl-C excepted).

    A stdout that is gone (a closed pipe or file) is reported once on stderr and the console stays silent after it;
    any other failure (a full non-blocking pipe or pty, a full disk under a redirect, a replaced stdout raising) is
    reported once too and costs only the messages written while it lasts (one a full pipe cut ends there). Either
    way the rows still reach the JSONL and the verbose file.
    """

    _numbers = itertools.count()

    def __init__(self) -> None:
        self.failed: BaseException | None = None
        self.torn = False  # a line was cut by a full non-blocking pipe: the next one starts a line of its own
        # its failures' report topic: never one a sink collected before it used (an id() can come back)
        self._topic = f"stdout-{next(self._numbers)}"

    def __call__(self, message: Any) -> None:
        out = sys.stdout
        if self.failed is not None:
            _on_stderr(message)
            return
        if out is None:  # started with stdout closed (`python train.py >&-`): Python gives no stream at all
            self.failed = OSError(errno.EBADF, "no standard output")
            report_once(self._topic, "steptable: console output failed (stdout is closed); rows continue "
                        "in the JSONL and log file")
            _on_stderr(message)
            return
        text = "\n" + str(message) if self.torn else str(message)
        handling = sys.exc_info()[1]  # (a line logged by the trainer's own ``except KeyboardInterrupt:``)
        write = write_plain if _in_child else write_between_bars
        try:
            try:
                write(out, text)
            except UnicodeEncodeError:  # a stdout that cannot encode a character (PYTHONIOENCODING=ascii, C locale)
                write(out, encodable(text, getattr(out, "encoding", None) or "ascii"))
            self.torn = False
        except Exception as e:  # OSError / ValueError from a closed stream, or anything a replaced stdout raises
            raise_interrupt(e, handling)
            # part of the line went out before the pipe filled (EAGAIN): the next line must not be glued to it
            self.torn = self.torn or getattr(e, "characters_written", 0) > 0
            gone = (isinstance(e, OSError) and e.errno in _GONE) or (
                isinstance(e, ValueError) and not isinstance(e, UnicodeError))  # ("I/O operation on closed file")
            if gone:
                self.failed = e
            _failed_on.add(id(out))
            what = "" if gone else "; lines are dropped while it fails"
            report_once(
                self._topic,
                f"steptable: console output failed ({e!r}){what}; rows continue in the JSONL and log file",
            )
            _on_stderr(message)


def _on_stderr(message: Any) -> None:
    """A warning or error the console could not print is said on stderr instead: the run's own files failing (the
    JSONL on a full disk) must not be told only to the stdout that is gone too. Rows and information lines are not."""
    try:
        if message.record["level"].no < _WARNING:
            return
    except Exception:  # (not a loguru message)
        return
    say(str(message).rstrip("\n"), to_file=False)  # (the verbose file has it from its own sink)


_WARNING = 30  # loguru's WARNING level number

_failed_on: set[int] = set()  # id() of each stdout a console sink failed to write to


def _unwritable_stdout_at_exit() -> None:
    """At exit, a stdout the console failed on that still cannot take what is left in its buffer (a full disk, a
    closed pipe) is set aside for os.devnull: Python's own last flush would fail on it and end the process with status
    120, so a run whose every step ran would read as failed to its scheduler. Those lines were told lost already."""
    out = sys.stdout
    if out is None or id(out) not in _failed_on:
        return
    try:
        out.flush()
    except Exception:
        try:
            sys.stdout = open(os.devnull, "w")  # (open until the interpreter ends)
        except OSError:
            pass


# (registered at import, before the logger's own exit hook, so it runs after it: atexit runs the last registered
# first, and that hook may print end-of-run lines to the same stdout)
atexit.register(_unwritable_stdout_at_exit)


#: errors after which stdout will not come back (any other OSError, e.g. EAGAIN or ENOSPC, may pass)
_GONE = frozenset({errno.EPIPE, errno.EBADF, errno.ECONNRESET, errno.ENXIO, errno.ENODEV})


def write_between_bars(stream: Any, text: str) -> None:
    """``text`` on ``stream``, flushed at once, with tqdm's bars cleared before and redrawn after it (under tqdm's
    lock, so no other thread's bar lands inside it). Left in Python's buffer, a pipe or file (nohup, sbatch,
    ``| tee``) would get rows kilobytes late, glued after a bar's text, and lose them to a SIGKILL.

    The bytes ``tqdm.external_write_mode`` writes, the bars it clears chosen as it chooses them; a bar on the first
    line is cleared with one write and one flush where tqdm's ``clear`` makes four writes and three flushes (each a
    trip through every wrapper of the stream: tqdm's own, and W&B's console capture where wandb is imported)."""
    lock = tqdm.get_lock()
    lock.acquire()
    try:
        cleared = []
        for inst in list(getattr(tqdm, "_instances", ())):
            if hasattr(inst, "start_t") and (inst.fp == stream or all(
                    f in (sys.stdout, sys.stderr) for f in (stream, inst.fp))):
                _clear(inst)
                cleared.append(inst)
        write_plain(stream, text)
        for inst in cleared:
            inst.refresh(nolock=True)
    finally:
        lock.release()


def _clear(bar: Any) -> None:
    """``bar.clear(nolock=True)``'s bytes: at position 0, ``\r``, as many spaces as its last print took, ``\r``,
    in one write (where the bar's status printer is not tqdm's closure over ``last_len``, tqdm's clear)."""
    last = _last_len(bar) if not bar.disable and bar.pos == 0 else None
    if last is None or type(last[0]) is not int:
        bar.clear(nolock=True)
        return
    bar.fp.write("\r" + " " * last[0] + "\r")
    bar.fp.flush()
    last[0] = 0  # (as its clear leaves it: the redraw pads nothing after the bar)


def _last_len(bar: Any) -> list[Any] | None:
    """The cells of ``bar``'s last print, as its status printer (tqdm.status_printer's closure) keeps them: the
    one-item list itself."""
    sp = getattr(bar, "sp", None)
    code = getattr(sp, "__code__", None)
    cells = getattr(sp, "__closure__", None)
    if code is None or cells is None or "last_len" not in code.co_freevars:
        return None
    try:
        last = cells[code.co_freevars.index("last_len")].cell_contents
    except (IndexError, ValueError):
        return None
    return last if type(last) is list and len(last) == 1 else None


def write_plain(stream: Any, text: str) -> None:
    """``text`` on ``stream``, flushed, without tqdm: in a forked child (a DataLoader worker) tqdm's lock may be
    held for good by a thread of the parent that the fork did not copy, and the bars it would redraw are stale."""
    stream.write(text)
    flush = getattr(stream, "flush", None)
    if flush is not None:
        flush()


def raise_interrupt(e: BaseException, handling: BaseException | None = None) -> None:
    """Raise the Ctrl-C (or a signal handler's SystemExit) behind ``e``, if any: one that lands in tqdm's lock
    comes out as the RuntimeError of releasing a lock never taken, and swallowing that would keep training on.
    Not one that was already being ``handling`` when the write began (and so is in every exception's context
    then): a trainer's ``except KeyboardInterrupt:`` that logs and saves a checkpoint must not be cut short by a
    write to a pipe its reader left."""
    old = _chain(handling) if handling is not None else set()
    for cur in _exceptions(e):
        if isinstance(cur, (KeyboardInterrupt, SystemExit)) and id(cur) not in old:
            raise cur from None


def _exceptions(e: BaseException) -> list[BaseException]:
    """``e`` and every exception in its cause/context chain, each once."""
    seen: set[int] = set()
    out: list[BaseException] = []
    todo: list[BaseException] = [e]
    while todo:
        cur = todo.pop()
        if id(cur) not in seen:
            seen.add(id(cur))
            out.append(cur)
            todo.extend(x for x in (cur.__cause__, cur.__context__) if x is not None)
    return out


def _chain(e: BaseException) -> set[int]:
    return {id(x) for x in _exceptions(e)}


def encodable(text: str, encoding: str) -> str:
    """``text`` with each character that ``encoding`` cannot write replaced by as many '?' as the cells it took,
    so a row keeps its width on an ASCII-only terminal."""
    out = []
    for ch, cells in char_cells(text):  # cells in context: an emoji sequence counts once, as it was padded
        try:
            ch.encode(encoding)
        except UnicodeEncodeError:
            out.append("?" * cells)
        except LookupError:  # an unknown encoding name
            out.append(ch if ch.isascii() else "?" * cells)
        else:
            out.append(ch)
    return "".join(out)


#: how often (seconds) the verbose file's path is looked at, for a file deleted or moved away under the run
GONE_CHECK_S = 1.0


class FileSink:
    """The verbose log file as a loguru sink: opened on first use, flushed per message, never raising. A failure
    (disk full) is reported once; later messages try again. A file deleted or moved away (its directory deleted) is
    reported once and made again at its path.

    ``where``, when given, says which path the file should have now (a rank learnt after setup_logging moves it).
    """

    def __init__(self, path: Path, where: Callable[[], Path] | None = None) -> None:
        self.path = path
        self._where = where
        self._fh: Any = None
        self._checked = 0.0  # when the path was last seen to lead to the open file
        self.stopped = False

    def write(self, message: Any) -> None:
        with _file_lock:  # (loguru's handler lock does not cover note())
            told = self._write(str(message))
        for topic, text in told:  # (said outside the lock: say() takes tqdm's, which a caller may hold)
            report_once(topic, text, to_file=False)

    def note(self, text: str) -> None:
        """One of steptable's notices, a line in the file's format."""
        if not self.stopped:
            self.write(f"{datetime.now():%Y-%m-%d %H:%M:%S.%f}"[:-3] + f" | WARNING  | steptable | {text}\n")

    def _write(self, text: str) -> list[tuple[str, str]]:
        told = []
        try:
            if self._where is not None and (path := self._where()) != self.path:
                told += self._close()
                self.path = path
            if self._fh is not None and self._gone():
                told += self._close()
                told.append((f"logfile-gone:{self.path}", f"steptable: the verbose log {self.path} was deleted or "
                             "moved during the run; lines from here on go to a new file at that path"))
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = open(open_append(self.path), "a", encoding="utf-8", errors="replace")
                self._checked = time.monotonic()
            self._fh.write(text)
            self._fh.flush()
        except (OSError, ValueError) as e:
            self._close()  # (its close fails the same way: the failure is this one)
            told.append((f"logfile-write:{self.path}", f"steptable: cannot write the verbose log {self.path} ({e})"))
        return told

    def _gone(self) -> bool:
        """Does the path no longer lead to the open file? Asked at most once a second (two stat calls)."""
        now = time.monotonic()
        if now - self._checked < GONE_CHECK_S:
            return False
        self._checked = now
        st = os.fstat(self._fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # (a FIFO or /dev/stdout at the path: nothing to make again)
            return False
        try:
            at = os.stat(self.path)
        except FileNotFoundError:
            return True
        except OSError:  # (unreadable now: the open file may still be the right one)
            return False
        return (at.st_dev, at.st_ino) != (st.st_dev, st.st_ino)

    def stop(self) -> None:
        """(loguru, when the handler is removed: notices stop too)"""
        self.stopped = True
        for topic, text in self._close():
            report_once(topic, text, to_file=False)

    def _close(self) -> list[tuple[str, str]]:
        """The file closed; what to tell: a close(2) that failed (NFS, a quota: lines its cache could not write)."""
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.close()
            except OSError as e:
                if e.errno != errno.EBADF:  # (nothing was open to close)
                    return [(f"logfile-close:{self.path}", f"steptable: closing the verbose log {self.path} failed "
                             f"({e}); its last lines may be missing from it")]
            except ValueError:
                pass
        return []


_file_lock = threading.RLock()


def _after_fork_in_child() -> None:
    global _file_lock, _in_child
    _file_lock = threading.RLock()  # another thread of the parent may have held it at the fork
    _in_child = True  # (a flag: no getpid() call per message)


_in_child = False  # a forked child of the process that set the sinks up (setup_logging in it clears it)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


_reported: set[str] = set()
_file_sink: FileSink | None = None  # the verbose file, which steptable's notices also go to (set by setup_logging)


def report_once(topic: str, text: str, to_file: bool = True) -> None:
    """Say ``text`` the first time ``topic`` comes up (see :func:`say`); never raises."""
    if topic in _reported:
        return
    _reported.add(topic)
    say(text, to_file)


def say(text: str, to_file: bool = True) -> None:
    """``text`` on stderr, a line, between tqdm's bars; and in the verbose file when setup_logging made one (not
    ``to_file`` from inside that file's sink). Never raises (a Ctrl-C that lands in it goes on)."""
    line = sanitize(text.rstrip("\n"))  # notices name paths and keys, which may hold escape sequences
    err = sys.stderr
    handling = sys.exc_info()[1]
    if err is not None:
        try:  # (in a forked child tqdm's lock may be held for good, and its bars are stale)
            (write_plain if _in_child else write_between_bars)(err, line + "\n")
        except Exception as e:
            raise_interrupt(e, handling)
            try:  # a bar that could not be cleared: plainly
                write_plain(err, line + "\n")
            except Exception:  # stderr gone too: nothing left to tell
                pass
    sink = _file_sink
    if to_file and sink is not None and not _in_child:
        # Into the file directly, not through loguru: its other sinks (the console's, one the trainer added on
        # stderr) would show it a second time.
        try:
            sink.note(line)
        except Exception:
            pass
