"""SIGTERM seen by a thread of its own, for a process whose main thread may be where no Python handler can run.

One of several processes a launcher started (torchrun, ``accelerate launch``, srun) may wait in a collective or a
device sync that a dead peer never completes. The launcher's SIGTERM then only trips the flag of a Python handler,
which runs once the main thread is back in Python: not before the launcher's SIGKILL (torchrun's after 30 s), so a
handler alone would keep the process 30 s longer and change the signal it dies of.

:func:`watch` has Python's C-level handler write each signal's number to a pipe (``signal.set_wakeup_fd``) that a
daemon thread reads. On SIGTERM, while the handler it watches for is SIGTERM's, it waits :data:`GRACE_S` for that
handler to begin on the main thread (:func:`begin`); where it has not, the thread does the handler's work itself,
:data:`DEADLINE_S` at most, and kills the process with SIGTERM at its default action. Where the handler began, the
process is killed all the same once :data:`DEADLINE_S` have passed (a handler stuck on a lock). Either way it dies
of signal 15 within seconds, as it would without a handler, its runs marked first. A wakeup fd another library set
is left alone: :func:`watch` says so, and the caller installs no handler then; one set after it (asyncio's signal
handlers) leaves the watcher deaf while it is set, the handler on the main thread working as in a process alone.
Where it was given up since (an asyncio loop clears it when it closes: ``asyncio.run`` of a loop that added a
signal handler), :func:`rearm`, called with each row, makes the watcher hear again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

#: seconds the watcher waits for the main thread's handler to begin before it does the handler's work itself
GRACE_S = 0.5
#: seconds after SIGTERM by which the process dies whatever the handler's work is waiting for
DEADLINE_S = 5.0

_claim = threading.Lock()  # held by whoever does the handler's work (the main thread's handler or the watcher)
_began = threading.Event()  # the main thread's handler began
_pipe: tuple[int, int] | None = None  # (read end, write end) of the wakeup fd this process watches
#: seconds between two looks of :func:`rearm` at the wakeup fd
REARM_S = 1.0
_looked = 0.0  # when rearm() last looked


def watch(handler: Callable[[int, FrameType | None], Any], work: Callable[[], None]) -> bool:
    """Watch for SIGTERM while ``handler`` is its Python handler (installed by the caller next), doing ``work``
    where the main thread cannot. Main thread only. False where the wakeup fd is another's (asyncio's, a
    framework's): nothing is watched. True where this process watches already."""
    global _pipe
    if _pipe is not None:
        return True
    r, w = os.pipe()
    try:
        os.set_blocking(w, False)  # (written by the C-level handler: it must never block)
        previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(r)
        os.close(w)
        return False
    if previous != -1:  # another's: given back (its warnings as signal's default has them)
        signal.set_wakeup_fd(previous)
        os.close(r)
        os.close(w)
        return False
    _pipe = (r, w)
    threading.Thread(target=_watch, args=(r, handler, work), name="steptable-sigterm", daemon=True).start()
    return True


def rearm() -> None:
    """Where this process watches, on the main thread, once a :data:`REARM_S` at most: its wakeup fd set again
    where it was given up since (set to none: an asyncio loop's, closed), so that the watcher hears SIGTERM again;
    one another holds now is given back at once. Raises nothing."""
    global _looked
    pipe = _pipe
    if pipe is None:
        return
    now = time.monotonic()
    if now - _looked < REARM_S or threading.current_thread() is not threading.main_thread():
        return
    _looked = now
    with contextlib.suppress(ValueError, OSError):
        previous = signal.set_wakeup_fd(pipe[1], warn_on_full_buffer=False)
        if previous not in (-1, pipe[1]):  # (another's: it stays theirs)
            signal.set_wakeup_fd(previous)


def begin() -> bool:
    """Called first by the handler on the main thread: True where it does the work (the watcher leaves it), False
    where the watcher does it already (or this handler is running already, called again inside itself)."""
    _began.set()
    return _claim.acquire(blocking=False)


def _watch(r: int, handler: Callable[[int, FrameType | None], Any], work: Callable[[], None]) -> None:
    while True:
        try:
            got = os.read(r, 64)
        except InterruptedError:
            continue
        except OSError:  # (closed: a fork's child made it not ours)
            return
        if not got:
            return
        if signal.SIGTERM not in got or signal.getsignal(signal.SIGTERM) is not handler:
            continue  # another signal, or SIGTERM handled by another's handler now (which may compose ours)
        since = time.monotonic()
        if not _began.wait(GRACE_S) and _claim.acquire(blocking=False):
            doing = threading.Thread(target=work, name="steptable-sigterm-work", daemon=True)
            doing.start()
            doing.join(DEADLINE_S)
        else:  # the main thread's handler does the work and kills the process; this is the deadline behind it
            time.sleep(max(DEADLINE_S - (time.monotonic() - since), 0))
        die_of_sigterm()


def die_of_sigterm() -> None:
    """Kill this process with SIGTERM at its default action, from any thread (only the main thread can set a
    disposition through ``signal``: elsewhere libc's ``signal`` does it, the process dying next)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    else:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.signal.restype = ctypes.c_void_p
            libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
            libc.signal(int(signal.SIGTERM), None)  # (NULL: SIG_DFL)
        except Exception:  # (no libc to call: SIGKILL below, the only death left)
            pass
    os.kill(os.getpid(), signal.SIGTERM)  # (delivered before kill() returns where this thread does not block it)
    time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGKILL)


def after_fork_in_child() -> None:
    """In a child made by fork(): nothing is watched there (the watcher thread is the parent's), and the child's
    signals must not reach the parent's pipe."""
    global _pipe, _claim, _began
    _claim, _began = threading.Lock(), threading.Event()
    if _pipe is None:
        return
    r, w = _pipe
    _pipe = None
    with contextlib.suppress(ValueError, OSError):
        previous = signal.set_wakeup_fd(-1)
        if previous != w:  # (another's, set since: it stays)
            signal.set_wakeup_fd(previous)
    for fd in (r, w):
        with contextlib.suppress(OSError):
            os.close(fd)
