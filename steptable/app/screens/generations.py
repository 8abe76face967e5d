"""Generations viewer: pick a step, read its completions with their rewards, grouped by prompt (GRPO's groups:
each group's rewards on its header line, a group whose rewards are all equal marked as giving no learning signal).

Completions are untrusted text: every string goes through ``sanitize(..., keep_newlines=True)`` and into a Rich
``Text`` (never markup), so escape sequences, OSC 52, bidi overrides and ``[markup]`` show as inert characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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

from steptable.app.groups import grouped, groups_of, rewards_text
from steptable.app.screens.help import HELP_KEYS, OwnKeysHelp
from steptable.app.search import Finder, pattern
from steptable.app.sidefiles import GenSource, Sample, SideIndex, build_index
from steptable.app.widgets.keys import KeyBar
from steptable.table.formatting import sanitize


@dataclass
class IndexReady(Message):
    """The index of ``source`` (an arm's): shown only while that arm is (its build may end after the next arm's)."""

    source: GenSource
    index: SideIndex
    problem: str = ""


@dataclass
class SearchDone(Message):
    """The samples of the arm that hold ``text``: (step, sample number within its step, grouped as shown)."""

    index: SideIndex
    text: str
    matches: list[tuple[int, int]]
    asked: int  # which search this is (the screen's count of searches asked for)


def sample_matches(index: SideIndex, text: str) -> list[tuple[int, int]]:
    """(step, sample number as shown) of every sample whose title, prompt, completion or notes hold ``text``
    (ignoring case; read as shown: sanitized)."""
    pat = pattern(text)
    if pat is None:
        return []
    out = []
    for step in index.steps:
        for k, s in enumerate(grouped(_read_samples(index, step))):
            if any(pat.search(sanitize(t, keep_newlines=True)) for t in (s.title, s.prompt, s.completion, s.extra)):
                out.append((step, k))
    return out


#: a prompt or completion longer than this (lines / characters) shows its head and its tail around a note
CLIP_LINES, CLIP_CHARS = 160, 16_000
#: lines of text one page shows (wrapping and laying out tens of thousands of lines blocks the UI for seconds)
PAGE_LINES = 2_500


def clip(text: str, max_lines: int = CLIP_LINES, max_chars: int = CLIP_CHARS) -> str:
    """``text``, or its head and tail with how much was left out between them (the end of a runaway completion
    is where its answer, or its loop, is)."""
    if len(text) <= max_chars and text.count("\n") < max_lines:
        return text
    lines = text.split("\n")
    head_n, tail_n = max_lines * 3 // 4, max_lines // 4
    if len(lines) > max_lines:
        head, tail = "\n".join(lines[:head_n]), "\n".join(lines[-tail_n:])
    else:
        head, tail = text, ""
    head_c, tail_c = max_chars * 3 // 4, max_chars // 4
    if len(head) + len(tail) > max_chars:
        tail = tail[-tail_c:] if tail else head[-tail_c:]
        head = head[:head_c]
    cut_lines = text.count("\n") - head.count("\n") - tail.count("\n")
    cut_chars = len(text) - len(head) - len(tail)
    return f"{head}\n… {cut_lines:,} lines, {cut_chars:,} characters not shown …\n{tail}"


def sample_text(samples: Sequence[Sample], arm: str, step: int, start: int = 0) -> tuple[Text, int | None]:
    """Samples ``start``... of one step as one inert Text, up to about ``PAGE_LINES`` lines; with the index of the
    first sample left for the next page (None: the last page)."""
    out = Text()
    n = len(samples)
    groups = groups_of(samples)
    if all(len(g.rewards) == 1 for g in groups.values()):  # every prompt asked once: no groups to show
        groups = {}
    title = f"{arm} · step {step} · {n} sample{'' if n == 1 else 's'}"
    if groups:
        flat = sum(g.flat for g in groups.values())
        title += f" · {len(groups)} groups" + (f", {flat} with all rewards equal (no learning signal)" if flat else "")
    out.append(sanitize(title), "bold")
    lines = 1
    k = start
    while k < n:
        s = samples[k]
        head = f"── {k + 1}/{n} {s.title}" + ("" if s.reward is None else f" · reward {s.reward:+.3g}")  # (none logged)
        if s.extra:
            head += f" · {s.extra}"
        group = groups.get(s.group) if s.group else None
        opens = group is not None and (k == start or samples[k - 1].group != s.group)
        prompt = clip(s.prompt) if group is None or opens else ""
        completion = clip(s.completion)
        size = 2 + 2 * opens + prompt.count("\n") + completion.count("\n") + (len(prompt) + len(completion)) // 200
        if k > start and lines + size > PAGE_LINES:
            break
        lines += size
        out.append("\n\n")
        if group is not None and opens:
            out.append(sanitize(f"━━ group {group.number}/{len(groups)} · {len(group.rewards)} sample"
                                f"{'s' if len(group.rewards) != 1 else ''} · rewards "
                                f"{rewards_text(group)}"), "bold reverse" if group.flat else "bold underline")
            out.append("\nprompt: ", "bold dim")
            out.append(sanitize(prompt, keep_newlines=True), "dim")
            prompt = ""
            out.append("\n")
        out.append(sanitize(head), "bold")
        if prompt:
            out.append("\nprompt: ", "bold dim")
            out.append(sanitize(prompt, keep_newlines=True), "dim")
        if completion:
            out.append("\n")
            out.append(sanitize(completion, keep_newlines=True))
        k += 1
    if k < n:
        out.append(f"\n\n── samples {start + 1}-{k} of {n} shown: > for the next ones, < for the ones before", "bold")
        return out, k
    return out, None


def _read_samples(index: SideIndex, step: int) -> list[Sample]:
    """The samples of ``step``, or one sample that says why they could not be read (the app stays up)."""
    try:
        return index.samples(step)
    except Exception as e:  # (sidefiles turns each known hostile row into an error sample; this is for the rest)
        return [Sample(step, "could not read this step's samples", None, "", f"{type(e).__name__}: {e}"[:500])]


class GenerationsScreen(OwnKeysHelp, Screen[None]):
    DEFAULT_CSS = """
    GenerationsScreen #gen-title { height: 1; background: $panel; color: $text; }
    GenerationsScreen OptionList { width: 16; height: 1fr; }
    GenerationsScreen VerticalScroll { width: 1fr; height: 1fr; padding: 0 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,v", "close", "Close"),
        HELP_KEYS,
        Binding("a", "next_arm", "Next arm", tooltip="its samples at the step chosen, or the nearest step it has"),
        Binding("left,[", "step(-1)", "Prev step"),
        Binding("right,]", "step(1)", "Next step"),
        Binding("greater_than_sign", "page(1)", "More samples"),
        Binding("less_than_sign", "page(-1)", "Samples before"),
        Binding("slash", "search", "Search", tooltip="find text in this arm's samples (ignoring case)"),
        Binding("n", "search_next(True)", "Next match"),
        Binding("N", "search_next(False)", "Prev match", show=False),
    ]

    def __init__(self, sources: Sequence[GenSource], step: int | None = None) -> None:
        """``sources``: the arms with generations (side files or traces); ``step``: the one to show them at (each
        arm at the nearest it has samples for), None: each arm's newest until the user picks one."""
        super().__init__()
        self.sources = list(sources)
        self.arm_i = 0
        self.want = step  # the step asked for: every arm is shown at the nearest it has (set by the user's moves)
        self.index: SideIndex | None = None
        self.step: int | None = None
        self.samples: list[Sample] = []
        self.pages: list[int] = [0]  # first sample of each page shown so far for this step (the last: on screen)
        self.next_start: int | None = None
        self.finder: Finder[tuple[int, int]] = Finder()
        self._go_to: int | None = None  # the sample the next step shown starts at (a search's match)
        self._asked = 0  # searches asked for: only the last one's matches are shown (an earlier one may end later)

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
        return self.sources[self.arm_i].label if self.sources else ""

    def _load(self) -> None:
        self.index = None
        self.finder.start("", [])  # (a search's matches are of one arm's samples)
        self.query_one("#gen-title", Static).update(Text(sanitize(f" Generations · {self.arm} · indexing…")))
        if self.sources:
            self._index(self.sources[self.arm_i])

    @work(thread=True, exclusive=True, group="gen-index", exit_on_error=False)
    def _index(self, source: GenSource) -> None:
        try:
            self.post_message(IndexReady(source, build_index(source.files, source.steps, source.traces, source.texts,
                                                             source.tables)))
        except Exception as e:  # the files are untrusted: a failure to index them is shown, it does not end the app
            self.post_message(IndexReady(source, SideIndex(), f"could not index: {type(e).__name__}: {e}"[:500]))

    def on_index_ready(self, message: IndexReady) -> None:
        # (an exclusive worker's thread is not stopped by the next one: the arm left may finish indexing last)
        if not self.sources or message.source is not self.sources[self.arm_i]:
            return
        self.index = idx = message.index
        steps = self.query_one("#gen-steps", OptionList)
        steps.clear_options()
        steps.add_options(Option(str(s), id=str(s)) for s in idx.steps)
        self._title("")
        target = idx.nearest(self.want if self.want is not None else (idx.steps[-1] if idx.steps else 0))
        if target is None:
            none = message.problem or "no samples in this run's generations files"
            self.query_one("#gen-text", Static).update(Text(sanitize(none)))
            return
        steps.highlighted = idx.steps.index(target)
        self.show(target)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None and self.index is not None:
            step = int(event.option.id)
            if step != self.step:  # a move of the user's (an arm's own landing step is shown before its highlight)
                self.want = step
            self.show(step)

    def show(self, step: int, start: int = 0) -> None:
        if step != self.step and self._go_to is not None:
            start, self._go_to = self._go_to, None
        if self.index is None or (step == self.step and start == self.pages[-1]):
            return
        if step != self.step:
            self.step = step
            self.samples = grouped(_read_samples(self.index, step))
            self.pages = [0, start] if start else [0]
        elif start < self.pages[-1]:
            self.pages.pop()
        else:
            self.pages.append(start)
        text, self.next_start = sample_text(self.samples, self.arm, step, start)
        if (pat := pattern(self.finder.text)) is not None:  # the search's text marked where it shows
            for m in pat.finditer(text.plain):
                text.stylize("reverse", m.start(), m.end())
        self.query_one("#gen-text", Static).update(text)
        self.query_one("#gen-body", VerticalScroll).scroll_home(animate=False)

    def action_page(self, delta: int) -> None:
        """The next (or previous) page of samples of this step, when they did not fit one."""
        if self.step is None:
            return
        if delta > 0 and self.next_start is not None:
            self.show(self.step, self.next_start)
        elif delta < 0 and len(self.pages) > 1:
            self.show(self.step, self.pages[-2])

    def action_step(self, delta: int) -> None:
        if self.index is None or not self.index.steps:
            return
        steps = self.query_one("#gen-steps", OptionList)
        i = (steps.highlighted or 0) + delta
        steps.highlighted = max(0, min(i, len(self.index.steps) - 1))

    def action_search(self) -> None:
        from steptable.app.screens.prompt import PromptScreen

        def done(text: str | None) -> None:
            if text is not None and self.index is not None:
                self._title(f"searching {text.strip()!r}…")
                self._asked += 1
                self._search(self.index, text, self._asked)

        self.app.push_screen(PromptScreen("Search this arm's samples (ignoring case; n / N: next, previous):",
                                          self.finder.text, "e.g. boxed, error"), done)

    @work(thread=True, exclusive=True, group="gen-search", exit_on_error=False)
    def _search(self, index: SideIndex, text: str, asked: int) -> None:
        self.post_message(SearchDone(index, text, sample_matches(index, text), asked))

    def on_search_done(self, message: SearchDone) -> None:
        if message.index is not self.index or message.asked != self._asked:  # another arm, or search, since
            return
        first = next((n for n, (st, _) in enumerate(message.matches) if self.step is None or st >= self.step), 0)
        self._go(self.finder.start(message.text, message.matches, first))

    def action_search_next(self, forward: bool) -> None:
        if self.finder.text:
            self._go(self.finder.next(forward))

    def _go(self, match: tuple[int, int] | None) -> None:
        """Show the sample ``match`` (step, sample number) at the top, the search's status in the title."""
        self._title(self.finder.status)
        if match is None or self.index is None:
            return
        step, k = match
        self.want = step
        steps = self.query_one("#gen-steps", OptionList)
        self.step, self._go_to = None, k  # (drawn again even at the same step: the marks of the text change)
        where = self.index.steps.index(step)
        if steps.highlighted != where:
            steps.highlighted = where  # (shows it: the highlight's message)
        else:
            self.show(step)

    def _title(self, note: str) -> None:
        n = len(self.index.steps) if self.index is not None else 0
        self.query_one("#gen-title", Static).update(
            Text(sanitize(f" Generations · {self.arm} · {n} steps with samples" + (f" · {note}" if note else "")))
        )

    def action_next_arm(self) -> None:
        if len(self.sources) > 1:
            self.arm_i = (self.arm_i + 1) % len(self.sources)
            if self.want is None:  # (following the newest: the next arm at the step on screen, not at its own newest)
                self.want = self.step
            self.step = None
            self._load()

    def action_close(self) -> None:
        self.dismiss(None)
