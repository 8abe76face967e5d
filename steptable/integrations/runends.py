"""How an adapter's runs end where the framework never closes them: the open runs of this process, closed with an
exception uncaught in the main thread (a ``sys.excepthook`` installed beside the one in place), with the exception
of an IPython cell, at interpreter exit, and when one dropped open is collected.

A run is tracked from :func:`track` until :func:`untrack`; each is held weakly. A run the framework closes at
training's end (``framework_ends``: HF's on_train_end) that is still open at exit, or collected open, never got
there and is marked interrupted. Nothing here raises into training.
"""

from __future__ import annotations

import atexit
import sys
import threading
import weakref
from types import TracebackType
from typing import Any, Protocol

from steptable.logger.sinks import report_once
from steptable.logger.steplogger import StepLogger
from steptable.logger.writer import error_text


class OpenRun(Protocol):
    framework_ends: bool

    def close(self, exc: BaseException | None = None, failed: bool = False, ended_well: bool = False) -> None:
        """Close the run, marked ended by ``exc`` (steptable.integrations.rows.RunLog.close)."""


_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()
_hooked = False
_hook_lock = threading.Lock()


def track(run: OpenRun) -> None:
    """``run`` is open: closed with an uncaught exception, an IPython cell's, or at exit, until :func:`untrack`."""
    _OPEN.add(run)
    _install_hooks()


def untrack(run: OpenRun) -> None:
    _OPEN.discard(run)


def _install_hooks() -> None:
    """Once a process: close open runs with an uncaught exception (then the hook in place runs) and at exit; once an
    IPython shell, with a cell's exception (:func:`_hook_ipython`)."""
    global _hooked
    with _hook_lock:
        if not _hooked:
            _hooked = True
            previous = sys.excepthook

            def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
                for run in list(_OPEN):
                    run.close(exc)
                previous(kind, exc, tb)

            sys.excepthook = hook
            atexit.register(_close_all)
        _hook_ipython()


def _hook_ipython() -> None:
    """In IPython (Jupyter), where a cell's exception never reaches ``sys.excepthook``: once a shell, a cell that
    raised closes with its exception the runs its framework ends (HF's train() raised inside the cell: its
    on_train_end never comes). Other open runs stay open: a loop logged over several cells goes on."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return

    def after_cell(result: Any) -> None:
        exc = getattr(result, "error_in_exec", None)
        if exc is not None:
            for run in list(_OPEN):
                if run.framework_ends:
                    run.close(exc)

    try:  # (made from inside training: nothing here may raise into it)
        shell = ipython.get_ipython()
        if shell is None or getattr(shell, "_steptable_hooked", False):
            return
        shell._steptable_hooked = True
        shell.events.register("post_run_cell", after_cell)
    except Exception as e:  # (an IPython without these events: the run is closed at exit, as before)
        report_once("runlog-ipython", f"steptable: cannot follow IPython's cells ({error_text(e)})")


def _close_all() -> None:
    for run in list(_OPEN):
        # (a run whose framework says when training ends that is open at exit never got there: a caught exception
        # and sys.exit(1), hydra's way; marked as a non-zero exit is)
        run.close(SystemExit(1) if run.framework_ends else None)


def close_collected(last: list[StepLogger], framework_ends: bool) -> None:
    """A run collected open: its StepLogger closed, marked interrupted where the framework would have closed it
    at training's end (its open row, not flushed, is not written)."""
    for lg in last:
        try:
            if framework_ends:
                lg.__exit__(SystemExit, SystemExit(1), None)
            else:
                lg.close()
        except Exception as e:  # (at any point of the program: a collection)
            report_once("runlog-collected", f"steptable: closing a run dropped open failed ({error_text(e)})")
