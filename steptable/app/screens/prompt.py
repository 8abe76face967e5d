"""A one-line question (filter glob, step to jump to) as a modal: Enter answers, Escape cancels."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from steptable.table.formatting import sanitize


class PromptScreen(ModalScreen[str | None]):
    """``question`` over an input box holding ``value``, made inert: a prefilled answer may name keys from the
    logs (the lit column, the metric columns), and the box draws its text as it is."""

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical {
        width: 64; height: auto; padding: 1 2; background: $panel; border: round $primary;
    }
    PromptScreen Static { color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, value: str = "", placeholder: str = "", hint: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value
        self.placeholder = placeholder
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, markup=False)
            yield Input(sanitize(self.value), placeholder=self.placeholder)
            if self.hint:
                yield Static(self.hint, markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
