"""Helpers of the command tests: ``steptable tail -f`` driven by hand in the test's process (the follower scans
when the test says so, the Tail prints what is new on string streams) or run in a subprocess, the summary command,
and runs that make a point about the output (too wide, of two trainers)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.replaced import read_replaced
from steptable.cli.main import _parser
from steptable.cli.tail import whole_if_needed
from steptable.cli.tailout import Tail
from steptable.ingest import Follower
from tests.helpers import run_cli, write_rows
from tests.library_logs import write_verl_rows


class Live:
    """``steptable tail -f`` driven by hand: write rows, then :meth:`step` prints what is new."""

    def __init__(self, root: Path, argv: list[str]) -> None:
        self.out, self.err = io.StringIO(), io.StringIO()
        self.args = _parser().parse_args(["tail", "-f", *argv, str(root)])
        self.tail = Tail(self.args, self.out, self.err)
        self.follower = Follower([root], on_resume=read_replaced, keep=self.tail.projection())  # as the command
        self.first = True

    def step(self) -> None:
        self.follower.scan()
        if self.first:  # (the first view: as the command, read whole where the projection does not hold)
            self.first = False
            self.follower = whole_if_needed(self.tail, self.follower, self.args, finish=False)
        self.tail.emit(self.follower)


def follow_tail(root: Path, argv: list[str]) -> tuple[Any, Any, io.StringIO, io.StringIO]:
    """(follower, Tail, stdout, stderr) of ``steptable tail -f ARGV ROOT`` (a follower without the replaced rows'
    alerts); :func:`emit` prints what is new."""
    out, err = io.StringIO(), io.StringIO()
    follower = Follower([root])
    return follower, Tail(_parser().parse_args(["tail", "-f", *argv, str(root)]), out, err), out, err


def emit(follower: Any, tail: Any) -> None:
    """One poll of a watch made by :func:`follow_tail`: scan, then print what is new."""
    follower.scan()
    tail.emit(follower)


def run_summary(root: Path, capsys: pytest.CaptureFixture[str], *more: str) -> str:
    """``steptable summary ROOT MORE...`` in this process: its stdout (the status must be 0)."""
    rc, out, err = run_cli(["summary", str(root), *more], capsys)
    assert rc == 0, err
    return out


def block_titles(out: str) -> list[str]:
    """The block title lines of ``tail``'s text output."""
    return [line for line in out.splitlines() if line.startswith("──")]


STOP_SIGNALS = [s for s in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, s)]


def default_signals() -> None:
    """In the child before exec: a test run under nohup or as a background job must still test the handlers (a
    signal ignored at the start stays ignored, on purpose)."""
    for name in STOP_SIGNALS:
        signal.signal(getattr(signal, name), signal.SIG_DFL)


def start_follow(*argv: str) -> subprocess.Popen[str]:
    """``steptable tail -f ARGV`` in a subprocess polling every 50 ms, its stop signals at their defaults."""
    return subprocess.Popen(
        [sys.executable, "-m", "steptable", "tail", "-f", "--poll", "0.05", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=default_signals,
    )  # fmt: skip


def finish(p: subprocess.Popen[str]) -> tuple[str, str]:
    """The rest of stdout and stderr, then the exit. (Not communicate(): it reads the pipes underneath the text
    streams, and would miss what a readline() already took into their buffers.)"""
    assert p.stdout is not None and p.stderr is not None
    out = p.stdout.read()
    err = p.stderr.read()  # (a few lines: it cannot fill the pipe while stdout is read)
    p.wait(timeout=60)
    return out, err


def write_wide_run(tmp_path: Path) -> Path:
    """A run of 40 metrics, too many for a terminal's width: its directory."""
    rows = [{"step": s, **{f"metric_{i:02d}": 0.1 * i + s for i in range(40)}} for s in range(3)]
    write_rows(tmp_path / "wide" / "metrics.jsonl", rows)
    return tmp_path / "wide"


def write_mixed_runs(root: Path, steps: range) -> None:
    """A verl run and a generic run under ``root``, both logging ``steps``."""
    verl = {"actor/pg_loss": 0.1, "critic/score/mean": 0.2, "actor/entropy": 0.5}
    write_verl_rows(root / "verl" / "exp.jsonl", [(s, verl) for s in steps])
    write_rows(root / "gen" / "metrics.jsonl", [{"step": s, "foo": 0.1, "bar": s} for s in steps])
