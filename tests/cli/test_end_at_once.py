"""Commands that end the process at once once done (``end_at_once``: summary; the interpreter's teardown of what
they read is skipped): their output is whole and a stdout that cannot take it is still said, with the streams
buffered as outside a test run (no PYTHONUNBUFFERED)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import write_rows, written_long_ago


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    return env


def test_summary_to_a_full_disk_is_one_line_and_status_2_with_buffered_streams(tmp_path: Path) -> None:
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(5)])
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "steptable", "summary", str(tmp_path)], stdout=full,
                           stderr=subprocess.PIPE, text=True, env=_env())
    assert p.returncode == 2 and "cannot write the output" in p.stderr and "Traceback" not in p.stderr


def test_summary_output_is_whole_when_the_process_ends_at_once(tmp_path: Path) -> None:
    # many runs' blocks (--all): more text than one buffer, every byte of it out before the process ends
    for r in range(40):
        rows = [{"step": s, "loss": 1.0 / (s + 1), **{f"metric_{r}_{j}": s * j for j in range(12)}} for s in range(30)]
        path = tmp_path / f"run{r:02d}" / "metrics.jsonl"
        write_rows(path, rows)
        written_long_ago(path)  # (the two runs below say the same: no "upd 0s ago" read a second later)
    argv = [sys.executable, "-m", "steptable", "summary", "--all", str(tmp_path)]
    buffered = subprocess.run(argv, capture_output=True, text=True, env=_env())
    unbuffered = subprocess.run(argv, capture_output=True, text=True, env={**_env(), "PYTHONUNBUFFERED": "1"})
    assert buffered.returncode == 0 and len(buffered.stdout) > 8192 and " ago" not in buffered.stdout
    assert buffered.stdout == unbuffered.stdout
