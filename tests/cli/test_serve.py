"""`steptable serve` (steptable.cli.serve): a short token, a port out of range and the missing extra refused."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_bad_arguments_and_the_missing_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    import importlib.util

    from tests.helpers import run_cli

    rc, _, err = run_cli(["serve", str(tmp_path), "--token", "short"], capsys)
    assert rc == 2 and "8 characters" in err
    with pytest.raises(SystemExit):
        run_cli(["serve", str(tmp_path), "--port", "70000"], capsys)
    assert "a port is 1-65535" in capsys.readouterr().err
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "textual_serve" else real(n, *a))
    rc, _, err = run_cli(["serve", str(tmp_path)], capsys)
    assert rc == 2 and err == "steptable serve: needs textual-serve: pip install 'steptable[serve]'\n"
