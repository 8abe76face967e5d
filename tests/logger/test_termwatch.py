"""steptable.logger.termwatch: SIGTERM on rank 0 of several (torchrun's, accelerate launch's) whose main thread is
held where no Python handler runs, told by real processes: a C++ wait that never ends (as a device sync on a
collective whose peer died) stands for a hung collective."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.logger.helpers import description, started_script

ROOT = Path(__file__).resolve().parents[2]
RANK_ZERO_OF_TWO = {"WORLD_SIZE": "2", "RANK": "0", "PYTHONPATH": str(ROOT)}


HEAD = textwrap.dedent("""
    import os, signal, sys, time
    from steptable import StepLogger
    sl = StepLogger(run_dir=sys.argv[1], console=False, alerts=False)
    for step in range(5):
        sl.log({"step": step, "loss": 1.0 / (step + 1)})
""")


#: the main thread held in a C++ wait where no Python handler runs (as a device sync on a hung collective), ``ready``
#: said once it is in it (a SIGTERM before would run the handler on the main thread, the watcher untried)
HELD = """
import threading, torch

def ready():
    held = threading.main_thread().ident
    while sys._current_frames()[held].f_code.co_name != "wait":
        time.sleep(0.01)
    time.sleep(0.2)
    print("ready", flush=True)

threading.Thread(target=ready, daemon=True).start()
torch.futures.Future().wait()
"""


def _started(body: str, run: Path) -> subprocess.Popen[str]:
    """A rank 0 of two that logged rows 0-4, then ``body``, once it printed ``ready``."""
    return started_script(HEAD + textwrap.dedent(body), run, RANK_ZERO_OF_TWO)


def test_a_main_thread_held_in_a_c_wait_dies_of_sigterm_with_its_run_marked_interrupted(tmp_path: Path) -> None:
    """The launcher's SIGTERM while the main thread waits where no Python handler runs: the watcher marks the run
    interrupted and the process dies of signal 15, as it would at SIGTERM's default (a handler alone held it until
    the launcher's SIGKILL; without one, the run read as killed, never ended)."""
    torch = pytest.importorskip("torch")
    assert torch is not None
    run = tmp_path / "run"
    proc = _started(HELD, run)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == -signal.SIGTERM, proc.communicate()[1]
    info = description(run)
    assert info.get("end") == "interrupted" and info["rows"] == 5


def test_a_main_thread_in_python_marks_the_run_itself_and_dies_of_sigterm(tmp_path: Path) -> None:
    """The launcher's SIGTERM while the loop runs Python (a preemption): the handler on the main thread marks the
    run, and the process dies of signal 15."""
    run = tmp_path / "run"
    proc = _started("""
        print("ready", flush=True)
        while True:
            time.sleep(0.01)
    """, run)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == -signal.SIGTERM, proc.communicate()[1]
    assert description(run).get("end") == "interrupted"


def test_a_forked_childs_signals_never_reach_the_parents_watcher(tmp_path: Path) -> None:
    """A child made by fork() (a DataLoader worker) shares the parent's pipe: a SIGTERM handled there by the child's
    own handler would write to it, and the parent's watcher would kill the parent. The child has no wakeup fd, and
    the parent's stays."""
    proc = subprocess.run([sys.executable, "-c", HEAD + textwrap.dedent("""
        pid = os.fork()
        if pid == 0:
            os._exit(0 if signal.set_wakeup_fd(-1) == -1 else 1)
        _, status = os.waitpid(pid, 0)
        print("child's", os.WEXITSTATUS(status), "parent's", signal.set_wakeup_fd(-1) != -1)
    """), str(tmp_path / "run")], capture_output=True, text=True, timeout=60, env={**os.environ, **RANK_ZERO_OF_TWO})
    assert proc.returncode == 0 and proc.stdout.split() == ["child's", "0", "parent's", "True"], proc.stderr


def test_a_wakeup_fd_an_asyncio_loop_gave_up_is_watched_again_from_the_next_row(tmp_path: Path) -> None:
    """``asyncio.run`` of a loop that added a signal handler sets its own wakeup fd and clears it when the loop
    closes; the next row sets the watcher's again, and a main thread held in a C wait after it dies of SIGTERM with
    its run marked interrupted (unheard, it would live on until the launcher's SIGKILL)."""
    pytest.importorskip("torch")
    run = tmp_path / "run"
    proc = _started(textwrap.dedent("""
        import asyncio
        from steptable.logger import termwatch
        async def main():
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, lambda: None)
        asyncio.run(main())
        termwatch.REARM_S = 0  # (the row below looks again however soon after the last look)
        sl.log({"step": 5, "loss": 0.1})
    """) + HELD, run)
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(timeout=60) == -signal.SIGTERM, proc.communicate()[1]
    finally:
        proc.kill()
    info = description(run)
    assert info.get("end") == "interrupted" and info["rows"] == 6
