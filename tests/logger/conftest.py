"""The logger tests' fixtures: loguru sinks a test set up are removed after it; the JSONL writer's clock moved on by
hand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loguru import logger

import steptable.logger.setup as st_logging
import steptable.logger.sinks as st_sinks
from steptable.logger import writer
from tests.logger.helpers import Clock


@pytest.fixture(autouse=True)
def own_sinks() -> Iterator[None]:
    """The sinks a test set up go with it (they write to the sys.stdout of the moment, a test's fake one)."""
    yield
    for hid in st_logging._handler_ids:
        try:
            logger.remove(hid)
        except ValueError:
            pass
    st_logging._handler_ids.clear()
    st_logging._direct = None
    st_sinks._file_sink = None


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The writer's clock (steptable.logger.writer.monotonic), moved on by the test."""
    c = Clock()
    monkeypatch.setattr(writer, "monotonic", c)
    return c
