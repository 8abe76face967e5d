"""When a one-shot command may fork worker processes: the gates ``summary``'s split read
(steptable.ingest.splitread) and its alert pass (steptable.summary.alertpass) share.

A fork copies the whole process, so only where that is safe and pays: a POSIX system other than macOS (whose system
libraries may not survive a fork without exec), a process with no other thread (a lock another thread holds would
stay held in the child for ever: the MCP server runs commands in threads, and stays one process), and cores that no
other process is running on right now (a worker on a busy core only shares it: the same wall time, plus the fork's
cost). Children end with ``os._exit`` (never the parent's exit handlers or buffers); a child that dies or does not
answer by :func:`deadline` is killed and its work done in the parent.
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


def end(pid: int, fd: int) -> None:
    """End child ``pid`` (killed, done or not) and reap it; close ``fd``, the parent's end of its pipe."""
    try:
        os.kill(pid, signal.SIGKILL)  # (one already gone: its pid is ours until waited for)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # (reaped already: SIGCHLD ignored by whoever embeds this)
        pass
    os.close(fd)
