"""When a one-shot command may fork worker processes: the gates ``summary``'s split read
(steptable.ingest.splitread) and its alert pass (steptable.summary.alertpass) share.

A fork copies the whole process, so only where that is safe and pays: a POSIX system other than macOS (whose system
libraries may not survive a fork without exec), a process with no other thread (a lock another thread holds would
stay held in the child for ever: the MCP server runs commands in threads, and stays one process), and cores that no
other process is running on right now (a worker on a busy core only shares it: the same wall time, plus the fork's
cost). Children end with ``os._exit`` (never the parent's exit handlers or buffers); a child that dies or does not
answer by :func:`deadline` is killed and its work done in the parent. Children are made by :func:`fork` and ended by
:func:`end`, which never signals a pid that is no longer this process's child.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

#: Linux: the runnable count right now is the 4th field's numerator ("2/91")
LOADAVG = "/proc/loadavg"
#: the fewest seconds a child is waited for once the parent has done its share (then 3x the time since the fork)
WAIT_S = 20.0


def forkable() -> bool:
    """Forking is safe here: POSIX but not macOS, and this process runs no other thread."""
    if not hasattr(os, "fork") or sys.platform == "darwin":
        return False
    return threading.active_count() == 1 and threading.current_thread() is threading.main_thread()


def free_cores() -> int:
    """The cores this process may use that no other process is running on right now (this one's included)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # (no affinity call on this system)
        cores = os.cpu_count() or 1
    return max(1, min(cores, cores - running_elsewhere()))


def running_elsewhere() -> int:
    """Processes (threads) runnable besides this one: the fewest of a few looks over a millisecond (a kernel
    thread's moment on a core is no busy core); 0 where the system does not say."""
    seen = []
    try:
        for _ in range(5):
            with open(LOADAVG, "rb") as f:
                seen.append(int(f.read().split()[3].split(b"/")[0]) - 1)
            time.sleep(0.0002)
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, min(seen))


def deadline(forked_at: float) -> float:
    """The ``time.monotonic()`` past which children forked at ``forked_at`` are given up, asked now (the parent
    has done its share): a child that takes that much longer than the parent is stuck, not slow."""
    now = time.monotonic()
    return now + max(WAIT_S, 3 * (now - forked_at))


#: the children :func:`fork` made and :func:`end` has not ended: pid -> a pidfd (a handle on that very process),
#: None where the system has none, or _GONE where the child was reaped before one was taken
_handles: dict[int, int | None] = {}
_GONE = -1


def fork() -> int:
    """``os.fork()``; in the parent, the child held by a pidfd where the system has one (Linux 5.3+), for
    :func:`end`. Raises OSError as ``os.fork`` does."""
    pid = os.fork()
    if pid > 0:
        _handles[pid] = _pidfd(pid)
    return pid


def _pidfd(pid: int) -> int | None:
    """A pidfd of child ``pid``; _GONE where the child was reaped already (SIGCHLD ignored: the kernel reaps it as
    it exits, and its pid may name another process by now); None where the system has no pidfd."""
    if not hasattr(os, "pidfd_open"):
        return None
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return _GONE
    except OSError:  # (ENOSYS: a kernel without pidfds)
        return None
    if not _unreaped(pid, fd):  # (the pid was reused before the handle was taken: not our child)
        os.close(fd)
        return _GONE
    return fd


def _unreaped(pid: int, pidfd: int | None = None) -> bool:
    """Is ``pid`` (``pidfd`` where given) a child of this process not reaped yet, running or a zombie? (A zombie
    holds its pid, so a signal to it reaches no other process.) True where the system cannot say."""
    which = (os.P_PID, pid) if pidfd is None else (getattr(os, "P_PIDFD", -1), pidfd)
    try:
        os.waitid(*which, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    except (OSError, AttributeError):  # (no waitid, or no P_PIDFD: the kernel or the platform)
        return True
    return True


def end(pid: int, fd: int) -> None:
    """End child ``pid`` (killed, done or not) and reap it; close ``fd``, the parent's end of its pipe. A child
    already reaped (SIGCHLD ignored by whoever embeds this, or reaped by another waiter) is never signalled: its
    pid may name another process by now. Through the child's pidfd where :func:`fork` took one, else by its pid
    where it is still this process's child (a moment apart: a child that exits and is reaped in between, and whose
    pid is handed on in that moment, is what the pidfd rules out)."""
    handle = _handles.pop(pid, None)
    try:
        if handle is None:
            if _unreaped(pid):
                _kill_and_reap(pid)
        elif handle != _GONE:
            try:
                _kill_and_reap(pid, handle)
            finally:
                os.close(handle)
    finally:
        os.close(fd)


def _kill_and_reap(pid: int, pidfd: int | None = None) -> None:
    try:
        if pidfd is None:
            os.kill(pid, signal.SIGKILL)
        else:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:  # (exited, and reaped already through SIGCHLD ignored: nothing to kill)
        pass
    try:
        if pidfd is not None and hasattr(os, "P_PIDFD"):
            os.waitid(os.P_PIDFD, pidfd, os.WEXITED)
        else:
            os.waitpid(pid, 0)
    except ChildProcessError:  # (reaped already: SIGCHLD ignored)
        pass
