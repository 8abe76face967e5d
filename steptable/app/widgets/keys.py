"""KeyBar: the footer line of key bindings, drawn as one Text.

Textual's Footer builds one widget per key and rebuilds them all whenever focus moves; on the way to the first frame
that costs more than drawing the tables. This shows the same bindings (the screen's active ones with ``show=True``,
disabled ones dimmed), and a click on a key presses it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static


class KeyBar(Static):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"keybar--key", "keybar--description", "keybar--disabled"}

    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; width: 1fr; background: $footer-background; color: $footer-foreground; }
    KeyBar > .keybar--key { color: $footer-key-foreground; text-style: bold; }
    KeyBar > .keybar--description { color: $footer-description-foreground; }
    KeyBar > .keybar--disabled { color: $text-disabled; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self._hits: list[tuple[int, int, str]] = []  # (start, end, key) of each shown binding
        self._shown: tuple[Any, ...] | None = None  # bindings and width drawn (None: draw again even if the same)

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.call_after_refresh(self.redraw)

    def _bindings_changed(self, screen: Screen[Any]) -> None:
        if screen is self.screen:
            self.redraw()

    def notify_style_update(self) -> None:
        """A new theme: the same bindings, drawn again in its colours (redraw skips unchanged bindings)."""
        super().notify_style_update()
        self._shown = None
        if self.is_mounted:
            self.call_after_refresh(self.redraw)

    def shown(self) -> list[tuple[str, str, str, bool]]:
        """(key, key display, description, enabled) of the bindings shown, one per action."""
        out: list[tuple[str, str, str, bool]] = []
        seen: set[str] = set()
        active = self.screen.active_bindings
        for _node, binding, enabled, _tooltip in active.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            out.append((binding.key, self.app.get_key_display(binding), binding.description, enabled))
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        if palette is not None and self.app.ENABLE_COMMAND_PALETTE and palette[1].action not in seen:
            out.append((palette[1].key, self.app.get_key_display(palette[1]), palette[1].description, palette[2]))
        return out

    def redraw(self) -> None:
        shown = tuple(self.shown())
        width = self.size.width or self.app.size.width
        if (shown, width) == self._shown:
            return
        self._shown = (shown, width)
        key_style = self.get_component_rich_style("keybar--key")
        desc_style = self.get_component_rich_style("keybar--description")
        off_style = self.get_component_rich_style("keybar--disabled")
        text = Text(no_wrap=True, overflow="crop")
        self._hits = []
        palette = self.app.COMMAND_PALETTE_BINDING
        for key, display, description, enabled, gap in fit(sorted(shown, key=lambda s: s[0] == palette), width,
                                                           palette):
            start = len(text)
            text.append(f" {display}", key_style if enabled else off_style)
            text.append(f" {description}{gap}", desc_style if enabled else off_style)
            self._hits.append((start, len(text), key))
        self.update(text, layout=False)

    def on_resize(self, event: events.Resize) -> None:
        self.redraw()

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._hits:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return


def fit(shown: list[tuple[str, str, str, bool]], width: int, palette: str) -> list[tuple[str, str, str, bool, str]]:
    """The bindings to draw in ``width`` cells, each with the gap after it: all of them a space apart where they fit,
    else closer, else whole ones dropped from the end, the palette's (every command) last and kept. A key is never
    cut in half (``s Lay``); the help screen lists the ones dropped."""
    def cells(items: list[tuple[str, str, str, bool]], gap: str) -> int:
        return sum(len(f" {d} {desc}{gap}") for _, d, desc, _ in items)

    for gap in (" ", ""):
        if not width or cells(shown, gap) <= width:
            return [(*s, gap) for s in shown]
    keep = list(shown)
    while len(keep) > 1 and cells(keep, "") > width:
        drop = next((i for i in range(len(keep) - 1, -1, -1) if keep[i][0] != palette), None)
        if drop is None:
            break
        del keep[drop]
    return [(*s, "") for s in keep]


def cursor_bindings(move: str) -> list[Binding]:
    """The keys of a list with a cursor line: up/down a line, a page, the first and last line, each calling the
    list's ``action_<move>(lines)`` (pages: ``action_page(pages)``)."""
    far = 1_000_000_000
    return [
        Binding("up", f"{move}(-1)", "Up", show=False),
        Binding("down", f"{move}(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", f"{move}(-{far})", "First", show=False),
        Binding("end", f"{move}({far})", "Last", show=False),
    ]
