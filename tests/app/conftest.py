"""The app tests' fixtures: their async tests run on asyncio (Textual's loop)."""

from __future__ import annotations

import pytest
from textual.app import App


@pytest.fixture
def anyio_backend() -> str:
    """The app's async tests run on asyncio (Textual's loop)."""
    return "asyncio"


@pytest.fixture(autouse=True)
def notifications_outlast_the_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """Toasts stay for the whole test, so a test that counts them does not depend on the machine's speed.

    Textual drops a notification from ``App._notifications`` once its timeout (5 s by default) has passed: a test
    whose key presses take longer than that on a loaded runner would count fewer than it raised.
    """
    monkeypatch.setattr(App, "NOTIFICATION_TIMEOUT", 3600.0)
