"""Every alert, stall and bad line of the session, in ``Session.events`` order: stalled runs, errors, bad lines,
warnings, newest first within each. A virtual list (Line API): a session can hold tens of thousands of events, and
only the lines on screen are drawn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip

from steptable.app.widgets.keys import KeyBar
from steptable.app.widgets.status import Event
from steptable.table.formatting import display_width

EMPTY = "no alerts, stalls or bad lines so far"


class EventList(ScrollView, can_focus=True):
    """One line per event, never wrapped (a long line scrolls sideways); lines are drawn as they come into view."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"events--E", "events--W", "events--S", "events--B", "events--I"}

    DEFAULT_CSS = """
    EventList { width: 1fr; height: 1fr; background: $panel; color: $foreground; }
    EventList > .events--E { color: $text-error; text-style: bold; }
    EventList > .events--W { color: $text-warning; }
    EventList > .events--S { color: $text-warning; text-style: bold; }
    EventList > .events--B { color: $text-muted; }
    EventList > .events--I { color: $text-muted; }
    """

    def __init__(self, events: Sequence[Event], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines = [ev.line() for ev in events] or [EMPTY]  # sanitized, one line each
        self.levels = [ev.level for ev in events] or ["I"]
        self.virtual_size = Size(max(display_width(t) for t in self.lines), len(self.lines))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        i = scroll_y + y
        if not 0 <= i < len(self.lines):
            return Strip.blank(width, base)
        style = base + self.get_component_rich_style(f"events--{self.levels[i]}")
        strip = Strip([Segment(self.lines[i], style)])
        return strip.crop(scroll_x, scroll_x + width).adjust_cell_length(width, base)


class EventsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    EventsScreen { align: center middle; }
    EventsScreen > EventList { width: 90%; height: 80%; border: round $primary; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,e,q", "close", "Close")]

    def __init__(self, events: Sequence[Event]) -> None:
        super().__init__()
        self.events = list(events)

    def compose(self) -> ComposeResult:
        yield EventList(self.events, id="events-list")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(EventList).focus()

    def action_close(self) -> None:
        self.dismiss(None)
