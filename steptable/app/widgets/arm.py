"""ArmPanel: one arm's title line (name, rows, last-update age, bad lines, follow state) over its StepGrid."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from steptable.app.model import Store, ended
from steptable.app.widgets.grid import StepGrid
from steptable.formatting import sanitize


class ArmPanel(Vertical):
    """Title line + step table of one run."""

    DEFAULT_CSS = """
    ArmPanel { height: 1fr; width: 1fr; min-height: 4; min-width: 24; }
    ArmPanel > .arm-title { height: 1; width: 1fr; background: $panel; color: $text-muted; }
    ArmPanel.-focused > .arm-title { background: $primary 60%; color: $text; text-style: bold; }
    ArmPanel.-stalled > .arm-title { color: $text-warning; }
    """

    def __init__(self, run_id: str, label: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id = run_id
        self.label = label
        self.preview: str | None = None  # "last 1,400 rows of 1.0 GB" while the full parse runs
        self.stalled: float | None = None
        self.gone = False  # its file no longer exists (deleted, rotated away, its directory renamed)
        self.grid = StepGrid()
        self.title_bar = Static("", classes="arm-title", markup=False)
        self._title = ""

    # (a class, not :focus-within, so that the title restyles when focus moves)
    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.add_class("-focused")

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self.remove_class("-focused")

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.grid

    def title_text(self, store: Store | None, rows: int, now: float) -> str:
        """`` routeA  1,234 rows · 5s ago · 3 bad · following`` (plain text; every part sanitized)."""
        from steptable.alerts import fmt_age

        parts = [f"{rows:,} rows"]
        if store is not None:
            if store.last_update is not None:
                parts.append(f"{fmt_age(now - store.last_update)} ago")
            nbad = len(store.bad)
            if nbad:
                parts.append(f"{nbad:,} bad")
        if self.stalled is not None:
            parts.append(f"STALLED {fmt_age(self.stalled)}")
        if self.preview:
            parts.append(f"preview: {self.preview}, loading…")
        first, last, total = self.grid.columns_in_view()
        if first > 1 or last < total:
            parts.append(f"columns {first}-{last} of {total} (◀ ▶)")
        if self.gone:
            parts.append("FILE GONE (rows as last read)")
        if store is not None and ended(store):
            parts.append("run ended")
        parts.append("following" if self.grid.follow else "paused (End/G follows)")
        return sanitize(f" {self.label}  " + " · ".join(parts))

    def refresh_title(self, now: float) -> None:
        self.set_class(self.stalled is not None, "-stalled")
        text = self.title_text(self.grid.store, self.grid.rows, now)
        if text != self._title:
            self._title = text
            self.title_bar.update(text, layout=False)  # one line, always: no layout pass for a new title
