"""Review of `steptable demo` and the watch app as a person uses them: Ctrl-C quits; TERM and HUP end the app as q does
(the terminal put back, the demo's temporary directory removed); the demo's first rows come before torch has loaded;
a column cut by the window's edge is blank, not a number's fragment; ? and F1 list every key; the demo writes
generations and starts on the hack rate; the chart's min / max / last in one form."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from steptable.app import demo as app_demo
from tests.app.helpers import SIGNALS, SignalledApp
from tests.helpers import run_cli

pytestmark = pytest.mark.anyio


def test_term_ends_the_demo_with_its_directory_removed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`timeout steptable demo`, tmux kill-pane: the temporary directory stayed behind; after q the last line said
    the files "named above" were gone where the app named none."""
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
