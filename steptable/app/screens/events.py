"""Every alert, stall and bad line of the session, in ``Session.events`` order: stalled runs, errors, bad lines,
warnings, newest first within each. A virtual list (Line API): a session can hold tens of thousands of events, and
only the lines on screen are drawn. A cursor line: Enter on an event with a step shows that step in every table."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import ClassVar

from rich.segment import Segment
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip

from steptable.app.screens.help import HELP_KEYS, OwnKeysHelp
from steptable.app.widgets.keys import KeyBar, cursor_bindings
from steptable.app.widgets.status import Event
from steptable.table.formatting import display_width, sanitize

EMPTY = "no alerts, stalls or bad lines so far"


class EventList(ScrollView, can_focus=True):
    """One line per event, never wrapped (a long line scrolls sideways); lines are drawn as they come into view. The
    cursor line is lit; up / down / page keys move it."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "events--E", "events--W", "events--S", "events--B", "events--I", "events--cursor",
    }

    DEFAULT_CSS = """
    EventList { width: 1fr; height: 1fr; background: $panel; color: $foreground; }
    EventList > .events--E { color: $text-error; text-style: bold; }
    EventList > .events--W { color: $text-warning; }
    EventList > .events--S { color: $text-warning; text-style: bold; }
    EventList > .events--B { color: $text-muted; }
    EventList > .events--I { color: $text-muted; }
    EventList > .events--cursor { background: $boost; text-style: reverse; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [*cursor_bindings("move")]

    cursor: reactive[int] = reactive(0)

    def __init__(self, events: Sequence[Event], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.events: list[Event] = []
        self.lines: list[str] = []
        self.levels: list[str] = []
        self.show(events)

    def show(self, events: Sequence[Event]) -> None:
        """Show these events (the cursor back on the first)."""
        self.events = list(events)
        self.lines = [ev.line() for ev in events] or [EMPTY]  # sanitized, one line each
        self.levels = [ev.level for ev in events] or ["I"]
        self.virtual_size = Size(max(display_width(t) for t in self.lines), len(self.lines))
        self.cursor = 0
        self.scroll_to(0, 0, animate=False)
        self.refresh()

    @property
    def current(self) -> Event | None:
        """The event under the cursor (None when there are none)."""
        return self.events[self.cursor] if 0 <= self.cursor < len(self.events) else None

    def watch_cursor(self, old: int, new: int) -> None:
        self.scroll_to_region(Region(0, new, 1, 1), animate=False, force=True, immediate=True)
        self.refresh()

    def action_move(self, delta: int) -> None:
        self.cursor = max(0, min(len(self.lines) - 1, self.cursor + delta))

    def action_page(self, sign: int) -> None:
        self.action_move(sign * max(1, self.scrollable_content_region.height - 1))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        i = scroll_y + y
        if not 0 <= i < len(self.lines):
            return Strip.blank(width, base)
        style = base + self.get_component_rich_style(f"events--{self.levels[i]}")
        if i == self.cursor and self.events:
            style += self.get_component_rich_style("events--cursor")
        strip = Strip([Segment(self.lines[i], style)])
        return strip.crop(scroll_x, scroll_x + width).adjust_cell_length(width, style if i == self.cursor else base)


def matching(events: Sequence[Event], query: str) -> list[Event] | str:
    """The events a filter keeps: words ``E`` / ``W`` / ``S`` / ``B`` (levels, any of them), ``run:GLOB`` (the arm's
    label or run id) and ``col:GLOB`` (the alert's key); kinds of word are all required. A word of no kind: the
    reason, as text."""
    levels: set[str] = set()
    runs: list[str] = []
    cols: list[str] = []
    for word in query.replace(",", " ").split():
        kind, sep, glob = word.partition(":")
        if not sep and word.upper() in ("E", "W", "S", "B"):
            levels.add(word.upper())
        elif sep and kind.lower() == "run" and glob:
            runs.append(glob)
        elif sep and kind.lower() in ("col", "column") and glob:
            cols.append(glob)
        else:
            return f"not a filter word: {word!r} (E W S B, run:GLOB, col:GLOB)"
    return [
        ev for ev in events
        if (not levels or ev.level in levels)
        and (not runs or any(fnmatchcase(ev.arm, g) or fnmatchcase(ev.run or "", g) for g in runs))
        and (not cols or any(fnmatchcase(ev.column, g) for g in cols))
    ]


class EventsScreen(OwnKeysHelp, ModalScreen[Event | None]):
    """Dismissed with the event Enter was pressed on (None when closed)."""

    DEFAULT_CSS = """
    EventsScreen { align: center middle; }
    EventsScreen > EventList { width: 90%; height: 80%; border: round $primary; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,e,q", "close", "Close"),
        HELP_KEYS,
        Binding("enter", "go", "Go to step", tooltip="every table shows the event's step"),
        Binding("f,slash", "filter", "Filter", tooltip="by level (E W S B), run:GLOB, col:GLOB"),
    ]

    def __init__(self, events: Sequence[Event]) -> None:
        super().__init__()
        self.events = list(events)
        self.query_text = ""

    def compose(self) -> ComposeResult:
        yield EventList(self.events, id="events-list")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(EventList).focus()

    def action_go(self) -> None:
        ev = self.query_one(EventList).current
        if ev is None or ev.step is None:
            self.notify("this event has no step (a stall or a bad line)", severity="warning")
            return
        self.dismiss(ev)

    def action_filter(self) -> None:
        from steptable.app.screens.prompt import PromptScreen

        self.app.push_screen(PromptScreen("Show events of (empty shows all):", self.query_text,
                                          "E W run:lr3e* col:loss*", "levels E W S B, run:GLOB, col:GLOB"),
                             self.filter)

    def filter(self, query: str | None) -> None:
        """Show the events ``query`` keeps (:func:`matching`); a query that cannot be read says so, the list stays."""
        if query is None:
            return
        kept = matching(self.events, query)
        if isinstance(kept, str):
            self.notify(kept, severity="warning", markup=False)  # typed text: never markup
            return
        self.query_text = query.strip()
        lst = self.query_one(EventList)
        lst.show(kept)
        # a Text: a str title is read as markup, and the typed filter may quote a run's name ("base[b]x")
        lst.border_title = Text(sanitize(f"{len(kept)} of {len(self.events)} events: {self.query_text}")) \
            if self.query_text else None

    def action_close(self) -> None:
        self.dismiss(None)
