"""Every alert, stall and bad line of the session, newest last."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from steptable.app.widgets.keys import KeyBar
from steptable.app.widgets.status import Event


class EventsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    EventsScreen { align: center middle; }
    EventsScreen > VerticalScroll { width: 90%; height: 80%; background: $panel; border: round $primary; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,e,q", "close", "Close")]

    def __init__(self, events: Sequence[Event]) -> None:
        super().__init__()
        self.events = list(events)

    def compose(self) -> ComposeResult:
        text = Text("\n".join(ev.line() for ev in self.events) or "no alerts, stalls or bad lines so far")
        with VerticalScroll():
            yield Static(text, id="events-text")
        yield KeyBar()

    def action_close(self) -> None:
        self.dismiss(None)
