"""The schema tests' fixtures: no test reads the user's own schema directory."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """XDG_CONFIG_HOME private to the test: detection sees the built-in schemas and the test's files only."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
