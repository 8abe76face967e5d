"""Fixtures of the adapter tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def rank_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process is rank 1 of a launch (as torchrun says it)."""
    monkeypatch.setenv("RANK", "1")
