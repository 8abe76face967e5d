"""StatusBar: alerts, stalled runs and bad lines, one summary line plus the most recent few."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from steptable.table.formatting import sanitize


@dataclass(frozen=True)
class Event:
    """One line of the status area: ``level`` E / W / B (bad line) / S (stalled) / I (info); ``run`` (the run id),
    ``step`` and ``column`` where the event has them (an alert: its step and key; a bad line: no step)."""

    level: str
    arm: str
    text: str
    run: str | None = None
    step: int | None = None
    column: str = ""
    replaced: bool = False  # an alert of a row a resume replaced: it names no cell of the table

    def line(self) -> str:
        return sanitize(f"{self.level} {self.arm}: {self.text}")


def bad_line(path: object, lineno: int, reason: str) -> str:
    """``path:line: reason`` as the status area shows a line the parser could not read."""
    return f"{path}:{lineno}: {reason}"


class StatusBar(Static):
    """The status area over the footer."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"status--E", "status--W", "status--S", "status--B", "status--I"}

    DEFAULT_CSS = """
    StatusBar {
        height: auto; max-height: 4; width: 1fr; background: $panel; color: $foreground; padding: 0 1;
        text-wrap: nowrap; text-overflow: ellipsis;  /* one line per event (Static ignores Text.no_wrap) */
    }
    StatusBar > .status--E { color: $text-error; text-style: bold; }
    StatusBar > .status--W { color: $text-warning; }
    StatusBar > .status--S { color: $text-warning; text-style: bold; }
    StatusBar > .status--B { color: $text-muted; }
    StatusBar > .status--I { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.recent = 3
        self._last = Text()

    def show(self, events: Sequence[Event], counts: dict[str, int], note: str = "",
             filtered: tuple[str, int] | None = None, search: str = "") -> None:
        """``events``: the most relevant first; ``counts``: per level (E, W, S, B) over the whole session, and
        ``idle``: runs long quiet (told apart from the alerts); ``filtered``: the column filter in force and how
        many columns it shows; ``search``: the search's "k of m" (or that nothing matched)."""
        out = Text(no_wrap=True, overflow="ellipsis")
        names = {"E": ("error", "errors"), "W": ("warning", "warnings"), "S": ("stalled", "stalled"),
                 "B": ("bad line", "bad lines")}
        parts = [f"{n} {names[k][n != 1]}" for k in ("E", "W", "S", "B") if (n := counts.get(k, 0))]
        idle = f"{counts['idle']} idle" if counts.get("idle") else ""  # a state, not an alert
        head = " · ".join(parts) if parts else "no alerts"
        out.append("● " + head, self._style("I" if not parts else "W"))
        if idle:
            out.append(" · " + idle, self._style("I"))
        if filtered is not None:
            pattern, n = filtered
            out.append(f"  filter {sanitize(pattern)}: {n} column{'s' if n != 1 else ''}", self._style("I"))
        if search:
            out.append("  " + sanitize(search), self._style("I"))
        if note:
            out.append("  " + sanitize(note), self._style("I"))
        if parts:
            out.append("  (e: all events)", self._style("I"))
        for ev in events[: self.recent]:
            out.append("\n")
            out.append(ev.line(), self._style(ev.level))
        if out.plain == self._last.plain and out.spans == self._last.spans:
            return
        # a layout pass only when the number of lines changes (the bar's height is auto)
        self.update(out, layout=out.plain.count("\n") != self._last.plain.count("\n"))
        self._last = out

    def _style(self, level: str) -> Style:
        return self.get_component_rich_style(f"status--{level}")
