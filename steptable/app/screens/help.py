"""``?`` / F1: every key of the tables' screen, one line each (the footer has room for some of them, and e, f, 0-9
are not in it at all), then what each mark and colour of the tables means; on the run list and the compare view, their
own keys."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from steptable.app.widgets.keys import KeyBar
from steptable.schemas.legend import marks_text
from steptable.table.formatting import display_width

Display = Callable[[Binding], str]


def key_text(binding: Binding, display: Display) -> str:
    """The binding's keys as the footer writes them (``: g``, not ``colon,g``)."""
    return " ".join(display(Binding(k.strip(), binding.action)) for k in binding.key.split(","))


def key_lines(bindings: Iterable[Binding], display: Display) -> list[tuple[str, str]]:
    """(keys, what they do): one line per action, in the order given (q and ctrl+c on one line), the arm keys on
    one line."""
    keys: dict[str, list[str]] = {}
    says: dict[str, str] = {}
    for b in bindings:
        action = "toggle_arm" if b.action.startswith("toggle_arm(") else b.action
        keys.setdefault(action, []).append(key_text(b, display))
        if action not in says:
            what = "Arm 1-9" if action == "toggle_arm" else b.description
            says[action] = f"{what}: {b.tooltip}" if b.tooltip else what
    if arms := keys.get("toggle_arm"):
        keys["toggle_arm"] = [f"{arms[0]}-{arms[-1]}"]
    return [(" ".join(k), says[a]) for a, k in keys.items()]


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: auto; max-width: 96%; height: auto; max-height: 90%; padding: 0 1; background: $panel;
        border: round $primary; border-title-color: $text;
    }
    HelpScreen #help-text { width: auto; max-width: 100%; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,f1", "close", "Close"),
        Binding("q", "app.quit", "Quit"),  # (a modal screen takes the app's keys away; q still quits here)
    ]

    def __init__(self, lines: Sequence[tuple[str, str]], marks: bool = True, notes: str = "") -> None:
        """``lines``: (keys, what they do); ``marks``: the tables' marks and colours after them; ``notes``: what
        another screen's marks and colours mean, after them instead."""
        super().__init__()
        self.lines = list(lines)
        self.marks = marks
        self.notes = notes

    def text(self) -> str:
        """The keys, one per line, then what each mark and colour of the tables means (``steptable legend``'s), or
        the notes given."""
        kw = max((display_width(k) for k, _ in self.lines), default=0)
        keys = "\n".join(k + " " * (kw - display_width(k)) + "  " + what for k, what in self.lines)
        after = marks_text(indent=0) if self.marks else self.notes
        return keys + "\n\n" + after if after else keys

    def compose(self) -> ComposeResult:
        box = VerticalScroll(Static(self.text(), markup=False, id="help-text"))
        box.border_title = "Keys (? or esc closes)"
        yield box
        yield KeyBar()

    def action_close(self) -> None:
        self.dismiss(None)


def own_keys_help(screen: Screen[Any]) -> HelpScreen:
    """The help of ``screen``'s own keys (its ``BINDINGS``, not the tables'), without the tables' marks; then its
    ``HELP_NOTES`` where it has them."""
    own = [b for b in screen.BINDINGS if isinstance(b, Binding)]
    return HelpScreen(key_lines(own, screen.app.get_key_display), marks=False,
                      notes=getattr(screen, "HELP_NOTES", ""))


#: ``?`` / F1 on a screen with keys of its own (:class:`OwnKeysHelp`)
HELP_KEYS = Binding("question_mark,f1", "help", "Help", tooltip="this list of keys")


class OwnKeysHelp:
    """Mixed into a screen whose BINDINGS hold :data:`HELP_KEYS`: its help lists the screen's own keys (the app's
    ``?`` would list the tables'), then its ``HELP_NOTES``."""

    #: what the screen's marks and colours mean, said after its keys
    HELP_NOTES: ClassVar[str] = ""

    def action_help(self) -> None:
        screen = cast("Screen[Any]", self)
        screen.app.push_screen(own_keys_help(screen))
