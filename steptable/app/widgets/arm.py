"""ArmPanel: one arm's title line (name, rows, last-update age, bad lines, follow state) over its StepGrid."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from steptable.app.model import Store, ended
from steptable.app.widgets.grid import StepGrid
from steptable.table.cells import cut_middle
from steptable.table.formatting import display_width, fmt_age, sanitize
from steptable.table.runinfo import end_words, ended_by

if TYPE_CHECKING:
    from steptable.alerts.activity import Activity


class ArmPanel(Vertical):
    """Title line + step table of one run."""

    DEFAULT_CSS = """
    ArmPanel { height: 1fr; width: 1fr; min-height: 4; min-width: 24; }
    ArmPanel > .arm-title {
        height: 1; width: 1fr; background: $panel; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis;
    }
    ArmPanel.-focused > .arm-title { background: $primary 60%; color: $text; text-style: bold; }
    ArmPanel.-stalled > .arm-title { color: $text-warning; }
    """

    def __init__(self, run_id: str, label: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id = run_id
        self.label = label
        self.preview: str | None = None  # "last 1,400 rows of 1.0 GB" while the full parse runs
        self.stalled: float | None = None
        self.idle: Activity | None = None  # long quiet, nothing saying it still runs: a state, not an alert
        self.gone = False  # its file no longer exists (deleted, rotated away, its directory renamed)
        self.quiet_seed: str | None = None  # a seed group's table: the seed it is stalled or idle by
        self.grid = StepGrid()
        self.title_bar = Static("", classes="arm-title", markup=False)
        self._title = ""
        self._now = 0.0  # the time the title was last made for (a resize makes it again)

    # (a class, not :focus-within, so that the title restyles when focus moves)
    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.add_class("-focused")

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self.remove_class("-focused")

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.grid

    def title_text(self, store: Store | None, rows: int, now: float, width: int | None = None) -> str:
        """`` routeA  1,234 rows · 5s ago · 3 bad · following`` (plain text; every part sanitized). In ``width``
        cells the name is shortened (down to MIN_LABEL cells), never the state after it."""
        parts = [f"{rows:,} rows"]
        if store is not None:
            if store.last_update is not None and self.stalled is None and self.idle is None:  # (those say it)
                parts.append(f"{fmt_age(now - store.last_update)} ago")
            nbad = store.bad_count  # all of them: the store keeps only the first few lines themselves
            if nbad:
                parts.append(f"{nbad:,} bad")
            gaps = list(getattr(store, "gaps", ()))
            if gaps:  # rows lost for good (ingest.gaps): the latest, as tail -f says each
                parts.append(f"rows lost: {gaps[-1].steps()}" + (f" (+{len(gaps) - 1} more)" if len(gaps) > 1 else ""))
            two = getattr(store, "meta", {}).get("two_writers")
            if isinstance(two, str):  # rows of two processes in one arm: shown apart (ingest.readers.arms)
                parts.append(f"two writers: {two}")
            resumes = list(getattr(store, "resumes", ()))
            if resumes:  # rows from there were replaced by a relaunch's (as summary says it; the last three)
                parts.append("resumed " + ",".join(str(r) for r in resumes[-3:]) + (" …" if len(resumes) > 3 else ""))
        by = f" ({self.quiet_seed})" if self.quiet_seed else ""  # (a seed group's: which seed holds it back)
        if self.stalled is not None:
            parts.append(f"STALLED {fmt_age(self.stalled)}{by}")
        elif self.idle is not None:
            parts.append(self.idle.words() + by)
        if self.gone:
            parts.append("FILE GONE (rows as last read)")
        if self.preview:
            parts.append(f"preview: {self.preview}, loading…")
        if store is not None and ended(store):  # (and how, when not normally: "run ended with RuntimeError")
            end = ended_by(getattr(store, "meta", {}).get("runinfo"))
            parts.append("run " + end_words(end) if end is not None else "run ended")
        parts.append("following" if self.grid.follow else "paused (End/G follows; f: every table)")
        state = sanitize(" · ".join(parts))
        first, last, total = self.grid.columns_in_view()  # a hint after the state: what a narrow title loses first
        hint = f" · columns {first}-{last} of {total} (◀ ▶)" if first > 1 or last < total else ""
        label = sanitize(self.label)
        if width is not None:  # (a cut hint ends in an ellipsis: one more cell, so it lands on the hint)
            label = cut_middle(label, max(width - display_width(state) - 3 - (1 if hint else 0), MIN_LABEL))
        return f" {label}  {state}{hint}"

    def on_resize(self, event: events.Resize) -> None:
        if self._now:  # (a title was made: the resize makes it again for the new width)
            self.refresh_title(self._now)

    def refresh_title(self, now: float) -> None:
        self._now = now
        self.set_class(self.stalled is not None, "-stalled")
        width = self.title_bar.size.width or self.size.width
        text = self.title_text(self.grid.store, self.grid.rows, now, width or None)
        if text != self._title:
            self._title = text
            self.title_bar.update(text, layout=False)  # one line, always: no layout pass for a new title


#: the fewest cells an arm's name keeps in its title, however much state follows it
MIN_LABEL = 8
