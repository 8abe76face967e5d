"""The StepLoggers alive in this process, told of its forks, of how it ends and of its exit.

A child made by fork() (a DataLoader or pool worker) inherits the parent's loggers and must know it is not their
writer; a process that exits without close() (a script that never calls it, an exception that ends the loop) must
still say the alerts of rows waiting for their batch, and how it ended where the interpreter knows: an exception
uncaught in the main thread (:func:`died_of`). SIGTERM at its default action kills the process with no exit to
hook: where nothing else handles it, a handler marks the runs interrupted first (:func:`_on_sigterm`), after the
rows held for them are given to them (:func:`hold_rows`); on rank 0 of several processes a launcher started, with
steptable.logger.termwatch's thread for a main thread held where the handler cannot run. Each logger is held weakly
from :func:`track` on.
"""

from __future__ import annotations

import atexit
import mmap
import os
import signal
import sys
import threading
import weakref
from types import FrameType, TracebackType
from typing import Any, Protocol

from steptable.logger import termwatch
from steptable.logger.rank import known_rank

#: ``STEPTABLE_SIGTERM=0`` (or off, false, no): no SIGTERM handler is installed (SIGTERM kills at once, as without
#: steptable; the runs it ends read as not closed)
SIGTERM_ENV = "STEPTABLE_SIGTERM"


class ProcessBound(Protocol):
    def after_fork(self) -> None:
        """Called in the child after a fork(): the logger never prints or writes there."""

    def at_exit(self, died: BaseException | None) -> None:
        """Called as the process exits (``died``: :func:`died_of`); raises nothing."""

    def at_sigterm(self) -> None:
        """Called from the SIGTERM handler, the process killed right after (no exit follows); raises nothing, takes
        no lock the interrupted code of this thread holds."""


class RowHolder(Protocol):
    def at_sigterm(self) -> None:
        """Called from the SIGTERM handler before the loggers are: the rows held for a logger given to it (as
        :meth:`ProcessBound.at_sigterm`: raises nothing, takes no lock the interrupted code of this thread holds)."""


_LIVE: weakref.WeakSet[ProcessBound] = weakref.WeakSet()
_HOLDERS: weakref.WeakSet[RowHolder] = weakref.WeakSet()
_exit_hooked = False
_sigterm_ours = False  # our SIGTERM handler was installed in this process (never again, whoever replaces it)
_previous_hook: Any = None  # the sys.excepthook ours passes every exception on to
_uncaught: BaseException | None = None  # what the interpreter reported uncaught in the main thread (see _excepthook)


def track(logger: ProcessBound, sigterm: bool = True) -> None:
    """Tell ``logger`` of this process's forks, of its end and of its exit, as long as it lives. The first call
    hooks the exit and sys.excepthook (chained: the hook found is called as before); a call in the main thread
    with ``sigterm`` installs the SIGTERM handler where SIGTERM has its default action (see
    :func:`_catch_sigterm`)."""
    global _exit_hooked, _previous_hook
    if not _exit_hooked:
        # (registered at the first logger, after loguru's own exit hook: atexit runs the last registered first, and
        # the alerts said at exit go through loguru's handlers)
        atexit.register(_at_exit)
        _previous_hook = sys.excepthook
        sys.excepthook = _excepthook
        _exit_hooked = True
    if sigterm:
        _catch_sigterm()
    _LIVE.add(logger)


def hold_rows(holder: RowHolder) -> None:
    """Tell ``holder`` (something that holds rows for a logger: an adapter's open row) of SIGTERM before the
    loggers, so that they mark the run interrupted with its rows; installs the SIGTERM handler as :func:`track`
    does. Held weakly."""
    _catch_sigterm()
    _HOLDERS.add(holder)


def _excepthook(tp: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    """sys.excepthook (called by the interpreter, or by a hook installed later that passes it on: wandb's): notes
    an exception the interpreter reports as uncaught in the main thread, then calls the hook it replaced."""
    global _uncaught
    if _unwound(value, tb):
        _uncaught = value
    (_previous_hook or sys.__excepthook__)(tp, value, tb)


def _unwound(value: BaseException | None, tb: TracebackType | None) -> bool:
    """Did ``value`` unwind the main thread's whole stack, the interpreter reporting it (sys.last_exc or
    sys.last_value is it)? Its traceback starts at a frame nothing called (the script's module, runpy's for ``-m``,
    a REPL line's), not at one a console (code.interact) or an event loop ran and then goes on; a hook called by
    hand for an error that was handled leaves sys.last_value unset."""
    return (value is not None and tb is not None and tb.tb_frame.f_back is None
            and threading.current_thread() is threading.main_thread()
            and (getattr(sys, "last_exc", None) is value or getattr(sys, "last_value", None) is value))


def died_of() -> BaseException | None:
    """At exit: the exception that ended the process, uncaught in its main thread (an OOM, an assertion, a Ctrl-C),
    as the interpreter reported it through sys.excepthook; None for any other end (a normal one, ``sys.exit(n)``,
    which the interpreter reports to no hook; an interactive session, a REPL or ``python -i``, that went on after
    an error; IPython and Jupyter, which report a cell's error themselves; an exception that ended another thread:
    the process went on; a hook installed after ours that does not call it)."""
    if _uncaught is None or hasattr(sys, "ps1") or sys.flags.interactive or sys.flags.inspect:
        return None
    return _uncaught


def _sigterm_off() -> bool:
    return os.environ.get(SIGTERM_ENV, "").strip().lower() in ("0", "off", "false", "no")


#: what launchers of several processes (torchrun, accelerate, deepspeed, srun, mpirun) set to their number
WORLD_SIZE_ENV = ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


def one_of_several() -> bool:
    """Is this process one of several that a launcher started (any of :data:`WORLD_SIZE_ENV` above 1)?"""
    for name in WORLD_SIZE_ENV:
        try:
            if int(os.environ.get(name, "1") or "1") > 1:
                return True
        except ValueError:
            continue
    return False


def _catch_sigterm() -> None:
    """Install :func:`_on_sigterm` once per process: in the main thread (only it can), on POSIX, where SIGTERM has
    its default action (nothing caught it: not the user, Lightning, accelerate or a C extension), unless
    :data:`SIGTERM_ENV` turns it off. In one of several processes (:func:`one_of_several`) only on rank 0 as the
    launcher's environment or the process group says it, and with steptable.logger.termwatch's watcher: when a
    peer dies, the launcher sends SIGTERM to ranks that may wait in a collective, where a Python handler cannot
    run before the launcher's SIGKILL; the watcher does the handler's work there and the process dies of SIGTERM
    as it would have. Where it cannot watch (another's wakeup fd), no handler."""
    global _sigterm_ours
    if _sigterm_ours or os.name != "posix" or threading.current_thread() is not threading.main_thread() \
            or _sigterm_off():
        return
    several = one_of_several()
    if several and known_rank() != 0:
        return
    try:
        if signal.getsignal(signal.SIGTERM) != signal.SIG_DFL or _caught_below_python(signal.SIGTERM):
            return
        if several and not termwatch.watch(_on_sigterm, _mark_interrupted):
            return
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError, RuntimeError):
        return
    _sigterm_ours = True


def _caught_below_python(signum: int) -> bool:
    """Does a handler Python does not know of catch ``signum`` (one a C extension set with sigaction, which
    signal.getsignal still reports as SIG_DFL)? Read from /proc/self/status (Linux); False where it cannot be."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (a scheduler's preemption or time limit): every live logger marks its run interrupted, then SIGTERM
    is sent again at its default action, so the process dies of it as it would have (its parent sees signal 15).
    Called by a handler installed after this one that passes the signal on (Lightning composes its own with the
    one it finds): nothing, as the default action it would have found is never called."""
    if signal.getsignal(signal.SIGTERM) is not _on_sigterm:
        return
    if not termwatch.begin():  # (the watcher does it: this thread was held past its grace, or this runs twice)
        return
    _mark_interrupted()
    termwatch.die_of_sigterm()


def _mark_interrupted() -> None:
    """SIGTERM's work before the process dies of it: the rows held for loggers given to them, then every live
    logger's run marked interrupted. Raises nothing."""
    for holder in list(_HOLDERS):  # (first: a row it gives may make a logger, which marks its run below)
        try:
            holder.at_sigterm()
        except Exception:
            pass
    for logger in list(_LIVE):
        try:
            logger.at_sigterm()
        except Exception:  # (it raises nothing; the process must die of the signal all the same)
            pass


#: one byte shared (an anonymous shared mapping) by this process and every process forked from it, a child's
#: children too: set by the first of them that says a notice meant for them all (a DataLoader forks its workers
#: again every epoch, and each new worker's own report_once would say it again)
_TOLD_IN_A_CHILD = mmap.mmap(-1, 1)


def first_child_to_tell() -> bool:
    """In a forked child: True the first time any child of this process (or of its children) asks, False after
    that (two children asking at the same instant may both get True). Never raises."""
    try:
        if _TOLD_IN_A_CHILD[0]:
            return False
        _TOLD_IN_A_CHILD[0] = 1
    except (ValueError, OSError):  # (a closed or missing mapping: say it, as before)
        pass
    return True


def _after_fork_in_child() -> None:
    global _sigterm_ours
    termwatch.after_fork_in_child()  # (first: the child's signals must never reach the parent's watcher)
    for logger in list(_LIVE):
        logger.after_fork()
    if _sigterm_ours:  # the child's runs are not its own: SIGTERM kills it at once, as before (a logger it makes
        _sigterm_ours = False  # there installs the handler again)
        try:
            if signal.getsignal(signal.SIGTERM) is _on_sigterm:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
        except (ValueError, OSError, RuntimeError):
            pass


def _at_exit() -> None:
    died = died_of()
    for logger in list(_LIVE):
        logger.at_exit(died)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
