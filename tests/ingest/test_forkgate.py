"""forkgate.end: a forked worker is killed and reaped, and no other process is ever signalled in its place, even
where the child was reaped before end() came (SIGCHLD ignored by whoever embeds steptable: the kernel reaps each
child as it exits, and its pid may then be handed to another process)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator

import pytest

from steptable.ingest import forkgate
from tests.helpers import readline_within

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="forkgate forks")

#: a process that answers SIGUSR1 with a line: one killed before it never answers (a pending SIGKILL wins)
_STRANGER = textwrap.dedent("""
    import os, signal, sys
    signal.signal(signal.SIGUSR1, lambda s, f: (sys.stdout.write("alive\\n"), sys.stdout.flush()))
    print(os.getpid(), flush=True)
    while True:
        signal.pause()
""")
#: its launcher exits at once: the stranger is then no child of the test's process (reparented, as any process
#: that later gets a reaped child's pid is)
_LAUNCH = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', sys.argv[1]])"


@contextlib.contextmanager
def stranger() -> Iterator[tuple[int, Callable[[], bool]]]:
    """A live process that is not this one's child: (its pid, whether it is still alive)."""
    launcher = subprocess.Popen([sys.executable, "-c", _LAUNCH, _STRANGER], stdout=subprocess.PIPE, text=True)
    assert launcher.stdout is not None
    pid = 0
    try:
        line = readline_within(launcher.stdout, 60)
        assert line, "the stranger did not start"
        pid = int(line)
        launcher.wait(60)

        def alive() -> bool:
            os.kill(pid, signal.SIGUSR1)
            return readline_within(launcher.stdout, 60) == "alive\n"

        with pytest.raises(ChildProcessError):  # (not ours: as a reaped child's reused pid)
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        assert alive()
        yield pid, alive
    finally:
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if launcher.poll() is None:
            launcher.kill()
        launcher.wait()
        launcher.stdout.close()


@contextlib.contextmanager
def sigchld_ignored() -> Iterator[None]:
    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGCHLD, old)


def reaped(pid: int, within: float = 60.0) -> bool:
    """Wait (at most ``within`` seconds) until ``pid`` no longer names a process."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.005)
    return False


def test_end_never_signals_a_pid_that_is_no_longer_its_child() -> None:
    """A child the kernel reaped (SIGCHLD ignored) before end() came: its pid may name another process by then,
    which end() must leave alone (here: a process that is not ours, under the pid end() is given)."""
    r, w = os.pipe()
    os.close(w)
    with stranger() as (pid, alive):
        forkgate.end(pid, r)
        assert alive()


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfd on this system")
def test_a_child_held_by_its_pidfd_is_never_mistaken_for_the_process_that_got_its_pid() -> None:
    """SIGCHLD ignored: the child exits and is reaped at once; its pid then named another live process (made so
    here by handing end() the stranger's pid for the handle fork() took). The signal goes through the handle, to
    the child that is gone, never to the stranger."""
    with sigchld_ignored(), stranger() as (other, alive):
        r, w = os.pipe()
        pid = forkgate.fork()
        if pid == 0:
            os._exit(0)
        os.close(w)
        assert reaped(pid)
        forkgate._handles[other] = forkgate._handles.pop(pid)  # (its pid reused by the stranger)
        forkgate.end(other, r)
        assert alive()


def stuck_child() -> tuple[int, int]:
    """A child forked by forkgate.fork that never ends by itself: (its pid, the parent's end of its pipe)."""
    r, w = os.pipe()
    pid = forkgate.fork()
    if pid == 0:
        try:
            os.close(r)
            while True:
                signal.pause()
        finally:
            os._exit(1)
    os.close(w)
    return pid, r


def test_a_stuck_child_is_killed_and_reaped() -> None:
    pid, r = stuck_child()
    forkgate.end(pid, r)
    with pytest.raises(ChildProcessError):  # reaped: no zombie left
        os.waitpid(pid, os.WNOHANG)
    assert pid not in forkgate._handles


def test_a_stuck_child_is_killed_with_sigchld_ignored() -> None:
    with sigchld_ignored():
        pid, r = stuck_child()
        forkgate.end(pid, r)
        assert reaped(pid)
