"""Defects found in review, one regression test each."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from steptable.table import render
from steptable.table.columns import Col
from tests.ingest.helpers import loss_line


def test_frac_cell_with_unhashable_member_renders_like_the_slow_path() -> None:
    # The whole-row fast path looked the pair up in a memo dict: an ndarray or list inside raised TypeError.
    cols = (Col("step", 6, "step", "d"), Col("f", 6, "f", "frac"))
    for v in [(np.array(3), 32), ([1], 2)]:
        row = {"step": 1, "f": v}
        assert render.row(cols, row) == render.SEP.join(render.cells(cols, row))


def test_zero_decimal_spec_does_not_round_a_value_to_zero() -> None:
    cols = (Col("step", 6, "step", "d"), Col("x", 6, "x", ".0f"))
    for v in (0.3, 0.5, -0.5, 2.5):
        row = {"step": 1, "x": v}
        assert render.row(cols, row) == render.SEP.join(render.cells(cols, row)), v
    assert render.row((Col("x", 6, "x", ".0f"),), {"x": 0.5}).strip() == ".5"


def test_int_beyond_str_digit_limit_does_not_raise() -> None:
    cols = (Col("step", 6, "step", "d"), Col("x", 6, "x", "d"))
    row = {"step": 10**5000, "x": 10**5000}
    assert render.row(cols, row) == render.SEP.join(render.cells(cols, row))


def test_follow_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    # `steptable tail -f logs/ | head`: the write that hits the closed pipe happens in the follower thread; it died
    # with a traceback after a bogus "file notification failed (BrokenPipeError)" note.
    import os
    import subprocess
    import sys
    import time

    path = tmp_path / "arm" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(loss_line(i) for i in range(3)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "steptable", "tail", "-f", "--poll", "0.05", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        for _ in range(4):  # the header and three rows: the first emit (in the main thread) is done
            proc.stdout.readline()
        time.sleep(0.5)
        proc.stdout.close()
        for i in range(3, 60):
            with open(path, "ab") as fh:
                fh.write(loss_line(i) * 50)
            time.sleep(0.05)
            if proc.poll() is not None:
                break
        rc = proc.wait(timeout=15)
    finally:
        proc.kill()
    err = proc.stderr.read().decode()
    assert "Traceback" not in err and "notification failed" not in err, err
    assert rc == 0


def test_tail_csv_and_jsonl_keep_control_sequences_inert(tmp_path: Path) -> None:
    # csv wrote keys, run and arm raw (an OSC retitle in "arm" reached the terminal); jsonl escapes C0 but wrote
    # C1 controls (U+009B is CSI) and bidi overrides raw.
    import argparse
    import io

    from steptable.cli.tail import run as run_tail

    path = tmp_path / "r" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"step": 0, "arm": "a\x1b]0;T\x07b\x9b2J", "k\x1b[31m": 1, "s": "\u202eabc\x9b31m"})
                    + "\n", encoding="utf-8")
    for fmt in ("csv", "jsonl"):
        out, err = io.StringIO(), io.StringIO()
        args = argparse.Namespace(paths=[str(tmp_path)], follow=False, last=20, columns="", format=fmt, schema=None,
                                  width=0, header_every=20, alerts_only=False, poll=None)
        assert run_tail(args, out, err) == 0
        text = out.getvalue()
        assert not any(ch in text for ch in "\x1b\x07\x9b\u202e"), (fmt, text)
        if fmt == "jsonl":
            row = json.loads(text)
            assert row["arm"] == "a\x1b]0;T\x07b\x9b2J" and row["s"] == "\u202eabc\x9b31m"  # escaped, not lost


def test_spec_without_precision_does_not_round_a_value_to_zero() -> None:
    from steptable.table import render
    from steptable.table.columns import Col

    cols = (Col("a", 9, "a", "f"), Col("b", 9, "b", "+f"))
    for row in ({"a": 1e-9, "b": 0.5}, {"a": 0.5, "b": -1e-9}, {"a": 0.0, "b": 0.0}):
        assert render.compile_row(cols)(row) == render.SEP.join(render.cells(cols, row))
