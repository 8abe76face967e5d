"""The app tests' fixtures: their async tests run on asyncio (Textual's loop)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """The app's async tests run on asyncio (Textual's loop)."""
    return "asyncio"
