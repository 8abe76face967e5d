"""`steptable serve` (steptable.cli.serve): a short token, a port out of range or taken and the missing extra
refused."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_bad_arguments_and_the_missing_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    import importlib.util

    from tests.helpers import run_cli

    rc, _, err = run_cli(["serve", str(tmp_path), "--token", "short"], capsys)
    assert rc == 2 and "16 characters or more" in err
    rc, _, err = run_cli(["serve", str(tmp_path), "--token", "long-enough-but/has-a-slash"], capsys)  # (in URL paths)
    assert rc == 2 and "letters, digits, - and _" in err
    monkeypatch.setenv("STEPTABLE_SERVE_TOKEN", "short")  # (read from the environment: not in the process list)
    rc, _, err = run_cli(["serve", str(tmp_path)], capsys)
    assert rc == 2 and "16 characters or more" in err
    monkeypatch.delenv("STEPTABLE_SERVE_TOKEN")
    with pytest.raises(SystemExit):
        run_cli(["serve", str(tmp_path), "--port", "70000"], capsys)
    assert "a port is 1-65535" in capsys.readouterr().err
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "textual_serve" else real(n, *a))
    rc, _, err = run_cli(["serve", str(tmp_path)], capsys)
    assert rc == 2 and err == "steptable serve: needs textual-serve: pip install 'steptable[serve]'\n"


def test_a_port_taken_is_said_before_any_url(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A port in use printed a URL with a new token (which whoever holds the port would get), then a traceback and
    exit 70."""
    import socket

    pytest.importorskip("textual_serve")
    from tests.helpers import run_cli

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        rc, out, err = run_cli(["serve", str(tmp_path), "--port", str(port)], capsys)
    assert rc == 2 and out == "" and f"cannot listen on 127.0.0.1:{port} (Address already in use)" in err


def test_a_steptable_toml_watch_cannot_use_is_refused_before_any_url(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path) -> None:
    """serve refuses what each session's watch would refuse at its start (every session closed at once, the error
    in the log), as watch and tail do: before it listens or prints a URL."""
    pytest.importorskip("textual_serve")
    import socket

    from tests.helpers import run_cli

    (tmp_path / "steptable.toml").write_text('[schema]\nname = "bad name"\n')
    with socket.socket() as probe:  # (a port free now: the refusal comes before any listening)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    rc, out, err = run_cli(["serve", str(tmp_path), "--port", str(port)], capsys)
    assert rc == 2 and out == "" and err.startswith("steptable serve: ") and "steptable.toml" in err, err
    from steptable.app.watch import schema_refusal

    assert err == f"steptable serve: {schema_refusal([str(tmp_path)])}\n"  # (the words watch refuses it with)
