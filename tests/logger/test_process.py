"""How a process that logs ends (steptable.logger.process), told by real scripts run in subprocesses and read back
from the run's description, ``steptable runs`` and ``summary``: an exception uncaught in the main thread marks the
run ended by it without a ``with`` block; SIGTERM at its default action marks it interrupted and the process still
dies of signal 15; ends that were not a crash (an error in an earlier REPL line or IPython cell, a handled
exception, another thread's exception, ``sys.exit(0)``) are not marked; handlers and hooks the user or a framework
installed stay theirs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli
from tests.logger.helpers import SIGTERM_IN_A_READ, description, started_script

#: the head of every script: a StepLogger on ``RUN`` (the script's first argument) that logs steps 0-4, no ``with``
HEAD = textwrap.dedent("""
    import os, signal, sys, threading, time
    from steptable import StepLogger
    RUN = sys.argv[1]
""")
LOGGED = HEAD + textwrap.dedent("""
    sl = StepLogger(run_dir=RUN, console=False, alerts=False)
    for step in range(5):
        sl.log({"step": step, "loss": 1.0 / (step + 1)})
""")


def _script(body: str, run: Path, *, head: str = LOGGED, env: dict[str, str] | None = None,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", head + textwrap.dedent(body), str(run)], capture_output=True,
                          text=True, timeout=120, input=stdin, env={**os.environ, **(env or {})})


def _started(body: str, run: Path, *, head: str = LOGGED, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """The script started, once it printed ``ready``."""
    return started_script(head + textwrap.dedent(body), run, env)


def _state(run: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The run's state as summary's sweep line says it (steptable.summary.sweep.run_state)."""
    rc, out, err = run_cli(["summary", str(run), "--top", "1", "--by", "loss"], capsys)
    assert rc == 0, err
    head = out.splitlines()[0]  # "1 run: 1 crashed; 1 with errors"
    assert head.startswith("1 run: 1 "), out
    return head.removeprefix("1 run: 1 ").split(";")[0]


def _runs_line(run: Path, capsys: pytest.CaptureFixture[str]) -> str:
    rc, out, err = run_cli(["runs", str(run)], capsys)
    assert rc == 0, err
    return out.strip()


def _rows(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(("raise_", "status", "end", "state", "said"), [
    ("raise RuntimeError('CUDA out of memory')", 1, "RuntimeError", "crashed", "ended with RuntimeError"),
    ("assert not any([float('nan') != float('nan')]), 'loss is NaN'", 1, "AssertionError", "crashed",
     "ended with AssertionError"),
    ("raise KeyboardInterrupt", -signal.SIGINT, "interrupted", "ended", "interrupted"),
])
def test_an_exception_uncaught_in_a_script_without_a_with_block_marks_the_run_ended_by_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], raise_: str, status: int, end: str, state: str,
        said: str) -> None:
    """``log()`` in a loop, no ``with StepLogger``, the script dies of an exception (an OOM, an assertion, a NaN
    check; a Ctrl-C): the run was closed at exit as ``exited`` and read as live, then stalled, never crashed. It is
    marked ended by that exception as a ``with`` block marks it (a Ctrl-C: interrupted), and the traceback is still
    printed by the hook it replaced."""
    run = tmp_path / "run"
    proc = _script(raise_, run)
    assert proc.returncode == status and "Traceback" in proc.stderr, proc.stderr
    info = description(run)
    assert info.get("end") == end and info["closed"] is not None and info["rows"] == 5
    assert _state(run, capsys) == state
    assert _runs_line(run, capsys).endswith(said)


def test_a_crash_in_a_module_run_with_dash_m_marks_the_run_too(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m train`` (runpy), the logger a local of the function that raises: the traceback keeps it alive
    to the exit, and the run is marked ended by the exception."""
    run = tmp_path / "run"
    (tmp_path / "train.py").write_text(HEAD + textwrap.dedent("""
        def train():
            sl = StepLogger(run_dir=RUN, console=False, alerts=False)
            for step in range(3):
                sl.log({"step": step, "loss": 0.5})
            raise MemoryError("CUDA out of memory")
        train()
    """))
    proc = subprocess.run([sys.executable, "-m", "train", str(run)], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])})
    assert proc.returncode == 1, proc.stderr
    assert description(run).get("end") == "MemoryError" and _state(run, capsys) == "crashed"


ENDED_WELL = {
    "handled": """
        try:
            raise RuntimeError("CUDA out of memory")
        except RuntimeError:
            pass
    """,
    "exit 0": "sys.exit(0)",
    "another thread's exception": """
        t = threading.Thread(target=lambda: 1 / 0)
        t.start()
        t.join()
        sl.log({"step": 5, "loss": 0.1})
    """,
    "an error reported by hand": """
        try:
            1 / 0
        except ZeroDivisionError:
            sys.excepthook(*sys.exc_info())  # (as a GUI loop or code.interact reports one, and goes on)
    """,
}


@pytest.mark.parametrize("body", list(ENDED_WELL.values()), ids=list(ENDED_WELL))
def test_a_script_that_ended_well_is_not_marked_ended_by_an_exception(tmp_path: Path, body: str,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    proc = _script(body, run)
    assert proc.returncode == 0, proc.stderr
    info = description(run)
    assert "end" not in info and info["closed"] is None and info["exited"] is not None
    assert _state(run, capsys) != "crashed"


def _raising_session(run: Path) -> str:
    """Lines typed into an interactive session: a logger on ``run``, a row, a line that raises, another row."""
    return f"""from steptable import StepLogger
sl = StepLogger(run_dir={str(run)!r}, console=False, alerts=False)
sl.log({{"step": 0, "loss": 1.0}})
1 / 0
sl.log({{"step": 1, "loss": 0.5}})
"""


def test_an_error_in_an_earlier_repl_line_is_no_crash(tmp_path: Path) -> None:
    """``python -i``, or a console a script opens: a line raised (reported through sys.excepthook, sys.last_value
    set), the session went on and ended normally: not a run ended by that error."""
    run = tmp_path / "run"
    lines = _raising_session(run)
    proc = subprocess.run([sys.executable, "-i"], input=lines, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "ZeroDivisionError" in proc.stderr, proc.stderr
    info = description(run)
    assert "end" not in info and info["closed"] is None
    # a console opened by the script (code.interact: a debugging session), an error in it, the script gone on
    inner = tmp_path / "inner"
    proc = _script("""
        import code
        code.interact(local={"sl": sl})
        sl.log({"step": 5, "loss": 0.1})
    """, inner, stdin="1 / 0\n")
    assert proc.returncode == 0 and "ZeroDivisionError" in proc.stderr, proc.stderr
    assert "end" not in description(inner)


def test_an_error_in_an_earlier_ipython_cell_is_no_crash(tmp_path: Path) -> None:
    """IPython (as a Jupyter kernel runs cells): a cell raised, later cells ran, the shell was left normally. IPython
    reports a cell's error itself (sys.last_value is set, sys.excepthook is not called): not a run ended by it."""
    pytest.importorskip("IPython")
    run = tmp_path / "run"
    cells = _raising_session(run) + "exit\n"
    proc = subprocess.run([sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner", "--quick",
                           "--HistoryManager.enabled=False"], input=cells, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "IPYTHONDIR": str(tmp_path / "ipython")})
    assert proc.returncode == 0 and "ZeroDivisionError" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert [r["step"] for r in _rows(run)] == [0, 1]
    info = description(run)
    assert "end" not in info and info["closed"] is None


def test_sys_excepthook_is_chained_and_a_later_one_stays(tmp_path: Path) -> None:
    """A hook installed before the first logger is still called (after the run is noted as crashed); one the user
    installs after it is never replaced by a later logger, and leaves the run unmarked where it does not call ours,
    marked where it passes the exception on to it."""
    before = _script("""
        def mine(tp, value, tb):
            print("mine:", tp.__name__, flush=True)
        sys.excepthook = mine
        sl = StepLogger(run_dir=RUN, console=False, alerts=False)
        sl.log({"step": 0, "loss": 1.0})
        raise ValueError("x")
    """, tmp_path / "before", head=HEAD)
    assert before.returncode == 1 and before.stdout == "mine: ValueError\n", before.stderr
    assert description(tmp_path / "before").get("end") == "ValueError"
    after = _script("""
        def mine(tp, value, tb):
            print("mine:", tp.__name__, flush=True)
        sys.excepthook = mine
        again = StepLogger(run_dir=RUN + "2", console=False, alerts=False)
        print("kept:", sys.excepthook is mine, flush=True)
        raise ValueError("x")
    """, tmp_path / "after")
    assert after.returncode == 1 and after.stdout == "kept: True\nmine: ValueError\n", after.stderr
    assert "end" not in description(tmp_path / "after")
    chained = _script("""
        found = sys.excepthook
        def passes_on(tp, value, tb):  # (wandb's, installed at wandb.init)
            print("passed on:", tp.__name__, flush=True)
            found(tp, value, tb)
        sys.excepthook = passes_on
        raise ValueError("x")
    """, tmp_path / "chained")
    assert chained.returncode == 1 and chained.stdout == "passed on: ValueError\n", chained.stderr
    assert description(tmp_path / "chained").get("end") == "ValueError"


def test_sigterm_at_its_default_marks_the_run_interrupted_and_the_process_dies_of_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A scheduler's SIGTERM (preemption, a time limit), SIGTERM at its default action: the process died at once,
    no exit ran, and the run read as live, then stalled, never ended. It is marked interrupted first, as Lightning
    marks a fit SIGTERM stopped, and the parent still sees the process die of signal 15."""
    run = tmp_path / "run"
    proc = _started("""
        print("ready", flush=True)
        time.sleep(60)
    """, run)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == -signal.SIGTERM, proc.communicate()[1]
    info = description(run)
    assert info.get("end") == "interrupted" and info["closed"] is not None and info["rows"] == 5
    assert _state(run, capsys) == "ended"
    assert _runs_line(run, capsys).endswith("interrupted")


def test_sigterm_inside_log_marks_the_run_and_leaves_whole_rows(tmp_path: Path) -> None:
    """SIGTERM while a row is logged on the main thread (a device value's read, where a GPU loop waits): the handler
    runs inside log(), which holds the logger's lock: no deadlock, the run marked interrupted with the rows written
    whole, and the process dies of signal 15."""
    run = tmp_path / "run"
    proc = _script("""
        sl.record({"step": 5, "loss": 0.25})
        sl.log({"step": 6, "loss": Read(0.125)})
        print("not killed", flush=True)
    """, run, head=SIGTERM_IN_A_READ + LOGGED)
    assert proc.returncode == -signal.SIGTERM and "not killed" not in proc.stdout, proc.stderr
    assert [r["step"] for r in _rows(run)] == [0, 1, 2, 3, 4, 5]
    info = description(run)
    assert info.get("end") == "interrupted" and info["rows"] == 6


def test_sigterm_while_close_flushes_marks_the_run_interrupted(tmp_path: Path) -> None:
    """SIGTERM during close(), before close() marked the run ended (its final flush: rows a slow disk or pipe
    still holds): the run is marked interrupted, with its rows, and the process dies of signal 15."""
    run = tmp_path / "run"
    proc = _script("""
        flush = sl._final_flush
        def slow_flush():
            os.kill(os.getpid(), signal.SIGTERM)
            flush()
        sl._final_flush = slow_flush
        sl.close()
        print("not killed", flush=True)
    """, run)
    assert proc.returncode == -signal.SIGTERM and "not killed" not in proc.stdout, proc.stderr
    info = description(run)
    assert info.get("end") == "interrupted" and info["closed"] is not None and info["rows"] == 5


def test_sigterm_while_another_thread_holds_the_logger_is_no_deadlock(tmp_path: Path) -> None:
    """Another thread holds the logger's lock and never lets go (stuck inside a row): the handler waits for it a
    while, marks the run all the same and the process dies of signal 15."""
    run = tmp_path / "run"
    proc = _started("""
        threading.Thread(target=sl._lock.acquire, daemon=True).start()
        time.sleep(0.2)
        print("ready", flush=True)
        time.sleep(60)
    """, run)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == -signal.SIGTERM
    assert description(run).get("end") == "interrupted"


HANDLED_ELSEWHERE = {
    # the user's, before the logger: never replaced
    "the user's, before": ("""
        signal.signal(signal.SIGTERM, lambda s, f: sys.exit(7))
        sl = StepLogger(run_dir=RUN, console=False, alerts=False)
        sl.log({"step": 0, "loss": 1.0})
    """, 7),
    # the user's, after the logger: it replaces ours, which never runs
    "the user's, after": ("""
        sl = StepLogger(run_dir=RUN, console=False, alerts=False)
        sl.log({"step": 0, "loss": 1.0})
        signal.signal(signal.SIGTERM, lambda s, f: sys.exit(7))
    """, 7),
    # composed with the handler found, after the logger, as Lightning's fit does: ours, called by it, does nothing
    # (SIG_DFL, had it been found, would not have been called: the fit goes on to stop by itself)
    "composed, after": ("""
        sl = StepLogger(run_dir=RUN, console=False, alerts=False)
        sl.log({"step": 0, "loss": 1.0})
        found, seen = signal.getsignal(signal.SIGTERM), []
        def compose(s, f):
            seen.append(s)
            if callable(found):
                found(s, f)
        signal.signal(signal.SIGTERM, compose)
        print("ready", flush=True)
        while not seen:
            time.sleep(0.01)
        sys.exit(7)
    """, 7),
    # a C extension's, which signal.getsignal reports as SIG_DFL (faulthandler's: a traceback, then the default)
    "a C extension's, before": ("""
        import faulthandler
        faulthandler.register(signal.SIGTERM, chain=True)
        sl = StepLogger(run_dir=RUN, console=False, alerts=False)
        sl.log({"step": 0, "loss": 1.0})
    """, -signal.SIGTERM),
    # off by the environment: SIGTERM at its default, as without steptable
    "STEPTABLE_SIGTERM=0": ("""
        os.environ["STEPTABLE_SIGTERM"] = "0"
        sl = StepLogger(run_dir=RUN, console=False, alerts=False)
        sl.log({"step": 0, "loss": 1.0})
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    """, -signal.SIGTERM),
}


@pytest.mark.parametrize(("body", "status"), list(HANDLED_ELSEWHERE.values()), ids=list(HANDLED_ELSEWHERE))
def test_a_sigterm_handler_installed_by_someone_else_stays_theirs(tmp_path: Path, body: str, status: int) -> None:
    run = tmp_path / "run"
    body = textwrap.dedent(body)
    if "print(\"ready\"" not in body:
        body += 'print("ready", flush=True)\ntime.sleep(60)\n'
    proc = _started(body, run, head=HEAD)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == status, proc.communicate()[1]
    info = description(run)
    assert "end" not in info and info["closed"] is None


def test_a_rank_that_writes_nothing_leaves_sigterm_at_its_default(tmp_path: Path) -> None:
    """torchrun's rank 1 (its RANK): it writes no run, and a handler would only delay its death where its main
    thread waits in a hung collective; rank 0 and a rank not known yet (spawn, before the process group) get one."""
    caught = {}
    for rank in ("1", "0", None):
        proc = _script(f"""
            {f"os.environ['RANK'] = {rank!r}" if rank else "os.environ.pop('RANK', None)"}
            StepLogger(run_dir=RUN, console=False, alerts=False)
            print(signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
        """, tmp_path / "run", head=HEAD)
        caught[rank] = proc.stdout.strip()
    assert caught == {"1": "False", "0": "True", None: "True"}


@pytest.mark.parametrize(("env", "caught"), [({"WORLD_SIZE": "2", "RANK": "0"}, True), ({"SLURM_NTASKS": "4"}, False),
                                             ({"WORLD_SIZE": "2", "RANK": "1"}, False), ({"WORLD_SIZE": "1"}, True)])
def test_a_process_of_several_catches_sigterm_on_rank_zero_only(tmp_path: Path, env: dict[str, str],
                                                                  caught: bool) -> None:
    """Rank 0 of several (torchrun, srun) catches SIGTERM, with steptable.logger.termwatch's watcher for a main thread
    held in a collective; a rank that writes nothing, or one whose rank no launcher says (srun's SLURM_NTASKS
    without its SLURM_PROCID), leaves it at its default. A world of one is a process alone."""
    proc = _script("""
        StepLogger(run_dir=RUN, console=False, alerts=False)
        print(signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
    """, tmp_path / "run", head=HEAD, env={"RANK": "", "SLURM_PROCID": "", **env})
    assert proc.stdout.strip() == str(caught), proc.stderr


def test_rank_zero_of_several_leaves_sigterm_at_its_default_where_another_has_the_wakeup_fd(tmp_path: Path) -> None:
    """Another library's wakeup fd (asyncio's signal handlers): no watcher can be had, and a handler without it would
    hold a process stuck in a collective until the launcher's SIGKILL: none is installed, the wakeup fd stays theirs."""
    proc = _script("""
        r, w = os.pipe()
        os.set_blocking(w, False)
        signal.set_wakeup_fd(w)
        StepLogger(run_dir=RUN, console=False, alerts=False)
        print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, signal.set_wakeup_fd(-1) == w)
    """, tmp_path / "run", head=HEAD, env={"WORLD_SIZE": "2", "RANK": "0"})
    assert proc.stdout.split() == ["True", "True"], proc.stderr


def test_a_forked_child_dies_of_sigterm_at_once_and_leaves_the_parents_run(tmp_path: Path) -> None:
    """A child made by fork() (a pool worker) is not the run's process: SIGTERM is at its default there again."""
    run = tmp_path / "run"
    proc = _script("""
        pid = os.fork()
        if pid == 0:
            if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                os.kill(os.getpid(), signal.SIGTERM)
            os._exit(3)
        _, status = os.waitpid(pid, 0)
        print("child", os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
        print("parent's", signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
    """, run)
    assert proc.returncode == 0 and proc.stdout.splitlines() == [f"child {int(signal.SIGTERM)}", "parent's True"], \
        proc.stderr
    info = description(run)
    assert "end" not in info and info["closed"] is None


def test_a_lightning_fit_stopped_by_sigterm_stops_as_lightning_stops_it(tmp_path: Path) -> None:
    """A plain StepLogger made before the fit (its SIGTERM handler installed first), then a Lightning fit that
    SIGTERM stops: Lightning composes its handler with ours, which, called by it, does nothing; the fit stops by
    itself (SIGTERMException: status 0), its run marked interrupted, as a plain logger's run SIGTERM ends is."""
    pytest.importorskip("lightning.pytorch")
    run = tmp_path / "run"
    proc = _script("""
        import torch
        import lightning.pytorch as L
        from steptable.integrations.lightning import StepTableLogger

        sl = StepLogger(run_dir=RUN + "-plain", console=False, alerts=False)
        sl.log({"step": 0, "loss": 1.0})

        class Preempted(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.layer = torch.nn.Linear(1, 1)

            def training_step(self, batch, i):
                if self.global_step == 5:
                    os.kill(os.getpid(), signal.SIGTERM)
                loss = torch.nn.functional.mse_loss(self.layer(batch[0]), batch[1])
                self.log("train_loss", loss)
                return loss

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.05)

        x = torch.randn(256, 1, generator=torch.Generator().manual_seed(0))
        data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, 2 * x + 1), batch_size=8)
        trainer = L.Trainer(max_steps=30, log_every_n_steps=1, logger=StepTableLogger(RUN, console=False),
                            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                            accelerator="cpu", devices=1)
        trainer.fit(Preempted(), data)
    """, run, head=HEAD)
    assert proc.returncode == 0, proc.stderr
    assert description(run).get("end") == "interrupted"
    assert [r["step"] for r in _rows(run)][-1] == 5  # (the step SIGTERM came in: Lightning ends it)
