"""Runs written by a StepLogger for the logger, command and app tests: the column sets they log, a run ended
in a given way, and the files read back (rows, steps, description)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from steptable import Col, StepLogger
from steptable.logger import writer
from steptable.table import runinfo

RUN_COLS = [Col("step", 5, "step", "d"), Col("loss", 7, "loss", ".3f")]


def description(run: Path, arm: str | None = None) -> dict[str, Any]:
    """The run's description file (steptable.json, or steptable.<arm>.json) as a dict."""
    data: dict[str, Any] = json.loads((run / runinfo.file_name(arm)).read_text())
    return data


def logged_run(run: Path, stop: Callable[[StepLogger], None] | None, rows: int = 5, arm: str | None = None) -> None:
    """``rows`` rows logged inside ``with StepLogger``, then ``stop(logger)`` (raises, or not) inside the block."""
    with StepLogger(RUN_COLS, run_dir=run, arm=arm, console=False, alerts=False) as sl:
        for s in range(rows):
            sl.log({"step": s, "loss": 1 / (s + 1)})
        if stop is not None:
            stop(sl)


def raising(exc: BaseException) -> Callable[[StepLogger], None]:
    """A ``stop`` for :func:`logged_run` that raises ``exc`` inside the ``with`` block."""
    def stop(_sl: StepLogger) -> None:
        raise exc

    return stop


LOSS_COLS = [Col("step", 4, "step", "d", "step"), Col("loss", 7, "loss", None, "loss")]


def jsonl_rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def numpy_full(x: float, shape: tuple[int, ...]) -> Any:
    return np.full(shape, x, dtype=np.float32)


def torch_full(x: float, shape: tuple[int, ...]) -> Any:
    torch = pytest.importorskip("torch")
    return torch.full(shape, x, requires_grad=True)  # (a loss before .detach(): .item() reads it all the same)


ARRAY_MAKERS = [pytest.param(numpy_full, id="numpy"), pytest.param(torch_full, id="torch")]


EMA_COLS = [
    Col("step", 4, "step", "d", "step"), Col("loss", 7, "loss", "+.3f", "loss"), Col("ema", 6, "ema", None, "ema"),
]


def jsonl_steps(path: Path) -> list[int]:
    return [json.loads(line)["step"] for line in path.read_text().splitlines()]


LOGGER_COLS = [
    Col("step", 4, "step", "d", "step"),
    Col("loss", 7, "loss", "+.3f", "loss"),
    Col("frac", 6, "frac", "frac", "passes"),
    Col("sec", 6, "sec", None, "seconds", stream=False),
]


def strict_loads(line: str) -> object:
    """``json.loads`` that refuses NaN and Infinity (strict JSON, as every reader may expect)."""
    def bad(token: str) -> object:
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(line, parse_constant=bad)


TABLE_COLS = [
    Col("step", 5, "step", "d"), Col("loss", 6, "loss", ".3f"), Col("n", 5, "n", None), Col("tag", 6, "tag", None),
    Col("acc", 6, "acc", ".2f"),
]


def closed_field(run: Path, arm: str | None = None) -> Any:
    return json.loads((run / runinfo.file_name(arm)).read_text())["closed"]


CUSTOM_COLS = [
    Col("step", 5, "step", "d", "optimizer step"),
    Col("reward/mean", 7, "rew", "+.3f", "mean reward of the batch", "higher"),
    Col("kl", 8, "kl", ".2e", "KL to the reference policy"),
    Col("secs", 6, "secs", ".1f", "seconds per step", stream=False),
]


def log_rows(run_dir: Path, cols: list[Col] | tuple[Col, ...], rows: list[dict[str, object]], arm: str | None = None,
             close: bool = True) -> list[str]:
    """``rows`` logged by a StepLogger without console or alerts (closed unless ``close`` is false): the lines it
    printed."""
    sl = StepLogger(cols, run_dir=run_dir, arm=arm, console=False, alerts=False)
    printed = [line for r in rows if (line := sl.log(r)) is not None]
    if close:
        sl.close()
    return printed


SIGNED_LOSS_COLS = [Col("step", 4, "step", "d", "step"), Col("loss", 7, "loss", "+.3f", "loss")]


def spike_said_at_exit(run_dir: Path, method: str = "log", console: bool = True) -> int:
    """A script that logs 50 rows with a loss spike at step 45 through ``StepLogger.<method>`` and exits without
    close() (SystemExit(3)): how many of its output lines say the spike (its alert waits for a batch; ``console``
    False says alerts nowhere, so the script prints them)."""
    script = textwrap.dedent(f"""
        import random
        from steptable import Col, StepLogger
        if not {console!r}:
            StepLogger._emit = lambda self, text, level="INFO": print(level, text)
        sl = StepLogger([Col("step", 5, "step", "d"), Col("loss", 7, "loss", "+.3f")], run_dir={str(run_dir)!r},
                        console={console!r})
        rnd = random.Random(3)
        for step in range(50):
            sl.{method}({{"step": step, "loss": 9.0 if step == 45 else 0.5 + rnd.gauss(0, 0.01)}})
        raise SystemExit(3)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    return sum("step 45 loss" in line for line in (proc.stdout + proc.stderr).splitlines())


class Clock:
    """The JSONL writer's monotonic clock, standing still until :meth:`advance` moves it on (by default by the
    interval between two checks that the path leads to the open file: the next row checks)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float | None = None) -> None:
        self.now += writer.CHECK_S if seconds is None else seconds


#: the head of a script: ``Read(value)``, a 0-d tensor whose read (``item()``, where a GPU loop waits) sends the
#: process SIGTERM, so the signal comes while the row that holds it is logged
SIGTERM_IN_A_READ = textwrap.dedent("""
    import os, signal, sys


    class Read:
        ndim = 0

        def __init__(self, value):
            self.value = value

        def item(self):
            os.kill(os.getpid(), signal.SIGTERM)
            return self.value
""")


def opens_non_blocking(path: Path) -> bool:
    """Does steptable.logger.appendfile.open_append open ``path`` (a FIFO with a reader) non-blocking?"""
    from steptable.logger.appendfile import open_append

    probe = open_append(path)
    try:
        return not os.get_blocking(probe)
    finally:
        os.close(probe)


def started_script(script: str, run: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``python -c script RUN`` started (``env`` over this process's), once it printed ``ready``: its first line."""
    proc = subprocess.Popen([sys.executable, "-c", script, str(run)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line != "ready\n":
        proc.kill()
        raise AssertionError(line + proc.communicate()[1])
    return proc
