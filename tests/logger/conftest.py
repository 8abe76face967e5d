"""The logger tests' fixtures: the JSONL writer's clock moved on by hand (the sinks a test set up are removed after
it by tests/conftest.py, for every folder)."""

from __future__ import annotations

import pytest

from steptable.logger import writer
from tests.logger.helpers import Clock


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The writer's clock (steptable.logger.writer.monotonic), moved on by the test."""
    c = Clock()
    monkeypatch.setattr(writer, "monotonic", c)
    return c
