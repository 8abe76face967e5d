"""steptable's own notices from a training process: escape sequences in the paths they name never reach the
terminal, and a stdout closed from the start is said once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_log_dir_with_escape_sequences_is_named_inertly(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    evil = str(blocker) + "/\x1b]0;PWNED\x07\x1b[2J"
    code = f"from steptable import setup_logging; setup_logging('r', log_dir={evil!r})"
    err = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60).stderr
    assert "cannot open the verbose log" in err and "\x1b" not in err and "\x07" not in err


def test_training_with_stdout_closed_is_told_once(tmp_path: Path) -> None:
    code = (
        "from steptable import StepLogger, Col, setup_logging\n"
        f"setup_logging('r', log_dir={str(tmp_path)!r})\n"
        f"with StepLogger([Col('loss', 7, 'loss', '.4f')], run_dir={str(tmp_path)!r}) as lg:\n"
        "    for s in range(3):\n"
        "        lg.log({'step': s, 'loss': 1.0})\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, stdout=None, capture_output=False,
                          stderr=subprocess.PIPE, text=True, timeout=60, pass_fds=(), close_fds=True,
                          preexec_fn=lambda: __import__("os").close(1))
    assert proc.returncode == 0
    assert proc.stderr.count("console output failed (stdout is closed)") == 1, proc.stderr
    assert (tmp_path / "metrics.jsonl").read_text().count("\n") == 3
