"""`steptable mcp` (steptable.cli.mcpcmd): without the MCP SDK, a one-line hint and status 2."""

from __future__ import annotations

import pytest

from tests.helpers import run_cli


def test_without_the_sdk_a_one_line_hint(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a))
    rc, out, err = run_cli(["mcp"], capsys)
    assert rc == 2 and out == "" and err == "steptable mcp: needs the MCP SDK: pip install 'steptable[mcp]'\n"
