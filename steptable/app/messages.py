"""Messages from the follower thread to the app (dataclass messages: data only, never widgets)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

from steptable.app.model import Store

if TYPE_CHECKING:  # the alerts module is imported by the alert thread, off the first frame's path
    from steptable.alerts.engine import Alert


@dataclass
class RunsChanged(Message):
    """Some runs have new rows. The ids travel through the feed's inbox (``Feed.take``), so a burst of changes
    coalesces into one message while the app is busy; ``can_replace`` also folds queued duplicates."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunsChanged)


@dataclass
class PreviewReady(Message):
    """The tail of a big file, parsed ahead of the whole file: shown until the full store has rows."""

    run: str
    store: Store
    note: str


@dataclass
class AlertsFound(Message):
    run: str
    alerts: list[Alert] = field(default_factory=list)
    closed: float | None = None  # for a run's end alert: the close it is for (a run that dies again is told again)


@dataclass
class FeedProblem(Message):
    """The follower could not start or stopped with an error (``lasting``: the status line says it from then on), or
    one run's reading or alert scan failed (a notice; the status line goes on with the feed's own note)."""

    text: str
    lasting: bool = True
