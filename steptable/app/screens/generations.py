"""Generations viewer: pick a step, read its completions with their rewards.

Completions are untrusted text: every string goes through ``sanitize(..., keep_newlines=True)`` and into a Rich
``Text`` (never markup), so escape sequences, OSC 52, bidi overrides and ``[markup]`` show as inert characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from steptable.app.sidefiles import Sample, SideIndex, build_index
from steptable.app.widgets.keys import KeyBar
from steptable.formatting import sanitize


@dataclass
class IndexReady(Message):
    index: SideIndex


def sample_text(samples: Sequence[Sample], arm: str, step: int) -> Text:
    """The samples of one step as one inert Text."""
    out = Text()
    out.append(sanitize(f"{arm} · step {step} · {len(samples)} samples"), "bold")
    for k, s in enumerate(samples, 1):
        reward = "nan" if s.reward is None else f"{s.reward:+.3g}"
        head = f"── {k}/{len(samples)} {s.title} · reward {reward}"
        if s.extra:
            head += f" · {s.extra}"
        out.append("\n\n")
        out.append(sanitize(head), "bold")
        if s.prompt:
            out.append("\nprompt: ", "bold dim")
            out.append(sanitize(s.prompt, keep_newlines=True), "dim")
        if s.completion:
            out.append("\n")
            out.append(sanitize(s.completion, keep_newlines=True))
    return out


class GenerationsScreen(Screen[None]):
    DEFAULT_CSS = """
    GenerationsScreen #gen-title { height: 1; background: $panel; color: $text; }
    GenerationsScreen OptionList { width: 16; height: 1fr; }
    GenerationsScreen VerticalScroll { width: 1fr; height: 1fr; padding: 0 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,v", "close", "Close"),
        Binding("a", "next_arm", "Next arm"),
        Binding("left,[", "step(-1)", "Prev step"),
        Binding("right,]", "step(1)", "Next step"),
    ]

    def __init__(self, sources: Sequence[tuple[str, list[Path]]], step: int | None = None) -> None:
        """``sources``: (arm label, its generations side files), arms with at least one file."""
        super().__init__()
        self.sources = list(sources)
        self.arm_i = 0
        self.want = step
        self.index: SideIndex | None = None
        self.step: int | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="gen-title", markup=False)
        with Horizontal():
            yield OptionList(id="gen-steps")
            with VerticalScroll(id="gen-body"):
                yield Static("", id="gen-text", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        self._load()

    @property
    def arm(self) -> str:
        return self.sources[self.arm_i][0] if self.sources else ""

    def _load(self) -> None:
        self.index = None
        self.query_one("#gen-title", Static).update(Text(sanitize(f" Generations · {self.arm} · indexing…")))
        if self.sources:
            self._index(self.sources[self.arm_i][1])

    @work(thread=True, exclusive=True, group="gen-index")
    def _index(self, paths: list[Path]) -> None:
        self.post_message(IndexReady(build_index(paths)))

    def on_index_ready(self, message: IndexReady) -> None:
        self.index = idx = message.index
        steps = self.query_one("#gen-steps", OptionList)
        steps.clear_options()
        steps.add_options(Option(str(s), id=str(s)) for s in idx.steps)
        self.query_one("#gen-title", Static).update(
            Text(sanitize(f" Generations · {self.arm} · {len(idx.steps)} steps with samples"))
        )
        target = idx.nearest(self.want if self.want is not None else (idx.steps[-1] if idx.steps else 0))
        if target is None:
            self.query_one("#gen-text", Static).update(Text("no samples in this run's generations files"))
            return
        steps.highlighted = idx.steps.index(target)
        self.show(target)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None:
            self.show(int(event.option.id))

    def show(self, step: int) -> None:
        if self.index is None or step == self.step:
            return
        self.step = step
        samples = self.index.samples(step)
        self.query_one("#gen-text", Static).update(sample_text(samples, self.arm, step))
        self.query_one("#gen-body", VerticalScroll).scroll_home(animate=False)

    def action_step(self, delta: int) -> None:
        if self.index is None or not self.index.steps:
            return
        steps = self.query_one("#gen-steps", OptionList)
        i = (steps.highlighted or 0) + delta
        steps.highlighted = max(0, min(i, len(self.index.steps) - 1))

    def action_next_arm(self) -> None:
        if len(self.sources) > 1:
            self.arm_i = (self.arm_i + 1) % len(self.sources)
            self.want = self.step
            self.step = None
            self._load()

    def action_close(self) -> None:
        self.dismiss(None)
