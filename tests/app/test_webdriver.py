"""``steptable watch`` under textual-serve's web driver ends once its stdin does: that pipe comes from the server,
and a server that dies (its SIGKILL too) closes it. Textual's driver only stopped reading: the app lived on for good,
a child of init."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import steptable
from steptable.app.terminal import HANGUP_CODE

ROOT = Path(steptable.__file__).resolve().parent.parent
WEB_DRIVER = "textual.drivers.web_driver:WebDriver"  # (what textual-serve sets)


def test_the_served_app_ends_when_its_stdin_ends(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps({"step": i, "loss": 1 / i}) + "\n" for i in range(1, 50)))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEXTUAL_DRIVER": WEB_DRIVER, "COLUMNS": "100", "ROWS": "30"}
    proc = subprocess.Popen([sys.executable, "-m", "steptable", "watch", str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == b"__GANGLION__\n"  # (the app is up: its driver talks over the pipes)
        drain = threading.Thread(target=proc.stdout.read, daemon=True)  # (its frames must not fill the pipe)
        drain.start()
        proc.stdin.close()  # (as the server's death closes it)
        assert proc.wait(timeout=60) == HANGUP_CODE, proc.stderr.read().decode(errors="replace")[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
