"""``steptable watch`` in a real pty ends soon after q, Ctrl-C or TERM while its reader parses a pathological line
(a 4 MB list of bare NaN: the slowest repair path, seconds of parsing): the reader is off the UI's thread and the
process does not wait for it, and the terminal is put back. The bound here is generous (a shared machine); the
figure (under 1 s) is bench/bench_watch_exit.py's."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.app.helpers import PtyWatch

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty") or sys.platform == "win32", reason="no ptys here")

BOUND_S = 5.0


def raw(out: bytes) -> bool:
    """The app has hidden the cursor after entering the alternate screen: the pty is in raw mode (keys are keys, a
    Ctrl-C is not a SIGINT)."""
    at = out.find(b"\x1b[?1049h")
    return at >= 0 and b"\x1b[?25l" in out[at:]


@pytest.fixture(scope="module")
def nan_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nan") / "metrics.jsonl"
    rows = b"".join(b'{"step":%d,"loss":0.5}\n' % i for i in range(1000))
    path.write_bytes(rows + b'{"step":1000,"x":[' + b",".join([b"NaN"] * 1_000_000) + b"]}\n")
    return path


@pytest.mark.parametrize("stop", ["TERM", "q", "ctrl-c"])
def test_watch_ends_within_the_bound_while_parsing_the_worst_line(nan_run: Path, stop: str) -> None:
    w = PtyWatch(nan_run, nan_run.parent)
    try:
        deadline = time.monotonic() + 60
        while not raw(w.out) and time.monotonic() < deadline:
            w.read(0.2)
        w.read(0.3)  # (the app has drawn; its reader is in the 4 MB line, which takes seconds)
        t = time.monotonic()
        if stop == "TERM":
            w.proc.send_signal(signal.SIGTERM)
        else:
            os.write(w.master, b"q" if stop == "q" else b"\x03")
        while w.proc.poll() is None and time.monotonic() - t < 30:
            w.read(0.02)
        took = time.monotonic() - t
        while w.read(0.05):
            pass
    finally:
        code = w.close()
    assert took < BOUND_S, f"{stop}: exit {took:.2f} s after it"
    assert code == (128 + signal.SIGTERM if stop == "TERM" else 0)
    tail = w.out[w.out.rindex(b"\x1b[?1049h"):]
    assert b"\x1b[?1049l" in tail and b"\x1b[?25h" in tail  # the alternate screen left, the cursor shown
