"""steptable.cli.demo: ``steptable demo`` ends quietly when its reader leaves, on TERM and on a hang-up, leaves no
directory behind without --dir, refuses bad numbers, and prints its rows under one header until the header is due."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from steptable.app import demo as app_demo
from tests.app.helpers import SIGNALS, SignalledApp
from tests.helpers import run_cli


def test_term_ends_the_demo_with_its_directory_removed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`timeout steptable demo`, tmux kill-pane: the temporary directory is removed; the last line after q does
    not speak of files "named above" where the app named none."""
    import tempfile

    from steptable.cli import main as cli

    app = SignalledApp()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(cli, "_terminal", lambda: True)
    monkeypatch.setattr(app_demo, "make_app", lambda paths, theme=None: app)
    before = {s: signal.getsignal(s) for s in SIGNALS}
    rc, _, err = run_cli(["demo", "--steps", "100000", "--interval", "0.01"], capsys)
    assert app.handlers_were_ours and app.asked.is_set()
    # 128 + TERM, as a shell tells a command a TERM ended (q is 0): a supervisor tells the two apart
    assert rc == 128 + signal.SIGTERM and list(tmp_path.glob("steptable-demo-*")) == []
    assert {s: signal.getsignal(s) for s in SIGNALS} == before
    assert not any(t.name == "steptable-demo-writer" and t.is_alive() for t in threading.enumerate())
    assert "was temporary and is removed with its files; --dir DIR keeps the run" in err
    assert "named above" not in err


def test_a_hang_up_ends_the_demo_with_status_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A closed window: the terminal is gone, and the demo's last line to it failed (EIO) into a traceback, status 1."""
    import errno
    import sys
    import tempfile

    from steptable.cli import main as cli

    class Gone:
        def write(self, text: str) -> int:
            raise OSError(errno.EIO, "Input/output error")

        def flush(self) -> None:
            pass

    class App:
        return_code = 0

        def run(self) -> None:
            monkeypatch.setattr(sys, "stderr", Gone())

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(cli, "_terminal", lambda: True)
    monkeypatch.setattr(app_demo, "make_app", lambda paths, theme=None: App())
    assert cli.main(["demo", "--steps", "5", "--interval", "0"]) == 0
    assert list(tmp_path.glob("steptable-demo-*")) == []


def test_demo_stops_quietly_when_its_reader_leaves(tmp_path: Path) -> None:
    """`steptable demo --stdout | head -1` stops when its reader leaves (not after 2000 steps x 0.5 s)."""
    cmd = [sys.executable, "-m", "steptable", "demo", "--stdout", "--dir", str(tmp_path), "--steps", "100000",
           "--interval", "0.01"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "CI": "true"})
    assert proc.stdout is not None and proc.stderr is not None
    try:
        first = proc.stdout.readline()  # rows are flushed as they are made (block buffering held them back)
        proc.stdout.close()  # the reader leaves, as head does
        rc = proc.wait(timeout=120)  # (the old demo ran on for 100000 steps: this guard fails it)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read().decode()
    assert first and rc == 0 and err == ""
    rows = (tmp_path / "routeA" / "metrics.jsonl").read_text().count("\n")
    assert 0 < rows < 100000 and (tmp_path / "routeA" / "table.txt").exists()  # closed as a run is


def test_the_demo_without_dir_leaves_no_files_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Each `steptable demo` left a /tmp/steptable-demo-* directory (2000 steps x 3 arms by default); --dir keeps."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rc, out, err = run_cli(["demo", "--stdout", "--steps", "3", "--interval", "0"], capsys)
    assert rc == 0 and "rew" in out
    assert list(tmp_path.glob("steptable-demo-*")) == []
    assert "was temporary and is removed with its files (those named above too); --dir DIR keeps the run" in err
    kept = tmp_path / "kept"
    rc, _, _ = run_cli(["demo", "--stdout", "--steps", "3", "--interval", "0", "--dir", str(kept)], capsys)
    assert rc == 0 and list(kept.rglob("metrics.jsonl"))


@pytest.mark.parametrize("torch", [True, False], ids=["torch-diagnostics", "made-up-diagnostics"])
def test_the_demo_rows_keep_one_header_until_it_is_due_again(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch, torch: bool) -> None:
    """The routing arm's columns (``+.2f`` diagnostics absent at step 0, thresholds NaN while the gate warms up,
    tiny cosines and losses, passes out of 32) keep their widths: the header is printed once before the 25 lines
    after which it is due again."""
    from steptable.demo import run as demo_run

    if torch:
        pytest.importorskip("torch")
    else:
        monkeypatch.setattr(demo_run, "_torch_installed", lambda: False)
    rc, out, _ = run_cli(["demo", "--stdout", "--steps", "24", "--interval", "0", "--dir", str(tmp_path)], capsys)
    lines = out.splitlines()
    rows = [line for line in lines if line.split()[1:2] and line.split()[1].isdigit()]
    assert rc == 0 and len(rows) == 24
    assert sum(line.startswith("I step ") for line in lines) == 1
    assert len({len(row) for row in rows}) == 1  # (no column widened)


@pytest.mark.parametrize("argv", [["demo", "--stdout", "--steps", "-1"], ["demo", "--stdout", "--interval", "-2"],
                                  ["demo", "--stdout", "--interval", "nan"]])
def test_demo_rejects_bad_numbers(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(argv, capsys)
    assert rc == 2 and "--steps must be 1 or more" in err
