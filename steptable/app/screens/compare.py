"""Which arm wins, live: a table of metric rows and arm columns, the baseline's cells ``mean [lo, hi]`` (95%) and
the other arms' ``Δ [lo, hi]`` against it, green where the difference is better, red where worse (by the column's
direction; bold where there is none and it excludes 0). Seeds are grouped into arms; each arm's header gives its
seeds (n). Brought up to date every ``PERIOD`` seconds by :class:`steptable.compare.live.LiveCompare` (its cost does
not grow with the runs). ``x`` cycles the x axis (step, tokens, samples, time), ``b`` the baseline; the arrows
scroll a table wider or longer than the screen."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer
from textual.screen import ModalScreen
from textual.widgets import Static

from steptable.app.widgets.keys import KeyBar
from steptable.compare import X_NAMES, CompareError, Result
from steptable.compare.live import LiveCompare
from steptable.compare.render import interval_text, window_span
from steptable.table.columns import aligned_width
from steptable.table.formatting import pad, sanitize

PERIOD = 1.0
_STYLE = {"better": "bold green", "worse": "bold red", "differs": "bold"}


def compare_text(live: LiveCompare, results: Sequence[Result]) -> Text:
    """The table (see the module doc) as one Text: a title line, a header of arms, a row per metric."""
    w = live.window
    arms = list(dict.fromkeys(r.arm for r in results)) or list(live.groups)
    seeds = {g: len(ms) for g, ms in live.groups.items()}
    title = f"baseline {sanitize(live.baseline)}; x {sanitize(live.x)}"
    if w is not None:
        title += f", window {window_span(w, live.x == 'step')} ({w.how} of the common range" + (
            f": {sanitize(w.ended_by)})" if w.ended_by else ")")
    head = ["metric", *(f"{sanitize(a)} (n={seeds.get(a, 0)})" + (" mean [95% CI]" if a == live.baseline else
                                                               " Δ [95% CI]") for a in arms)]
    rows: list[list[tuple[str, str]]] = []
    by = {(r.metric, r.arm): r for r in results}
    for metric in dict.fromkeys(r.metric for r in results):
        row = [(sanitize(metric), "")]
        for a in arms:
            r = by.get((metric, a))
            if r is None:
                row.append(("", ""))
            elif a == live.baseline:
                row.append((interval_text(r.mean, r.lo, r.hi), ""))
            else:
                cell = interval_text(r.delta, r.delta_lo, r.delta_hi, signed=True)
                row.append((cell, _STYLE.get(r.verdict or "", "")))
        rows.append(row)
    table = [head, *([c for c, _ in r] for r in rows)]
    widths = [aligned_width(r[j] for r in table) for j in range(len(head))]
    out = Text(title + "\n\n", no_wrap=True)
    out.append("  ".join(pad(h, wd, "left") for h, wd in zip(head, widths, strict=True)).rstrip() + "\n", style="bold")
    for cells in rows:
        for j, ((cell, style), wd) in enumerate(zip(cells, widths, strict=True)):
            out.append(("  " if j else "") + pad(cell, wd, "left"), style=style)
        out.append("\n")
    if not rows:
        out.append("no metric every arm logs yet\n")
    return out


class CompareScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    CompareScreen { align: center middle; }
    CompareScreen > ScrollableContainer {
        width: 95%; height: 85%; border: round $primary; background: $panel;
    }
    CompareScreen #compare-table { width: auto; }
    CompareScreen #compare-table.-message { width: 100%; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,w,q", "close", "Close"),
        Binding("x", "next_x", "X axis", tooltip="step, tokens, samples, time"),
        Binding("b", "next_baseline", "Baseline", tooltip="the arm the others are compared with"),
    ]

    def __init__(self, runs: Callable[[], list[Any]], period: float = PERIOD) -> None:
        super().__init__()
        self.runs = runs
        self.period = period
        self.x = "step"
        self.baseline: str | None = None
        self.live: LiveCompare | None = None
        self._ids: tuple[int, ...] = ()

    def compose(self) -> ComposeResult:
        with ScrollableContainer():  # (both ways: arms past the width are scrolled to with the arrows)
            yield Static(id="compare-table")
        yield KeyBar()

    def on_mount(self) -> None:
        self.update_table()
        self.set_interval(self.period, self.update_table)

    def update_table(self) -> None:
        """Bring the table up to date (a new LiveCompare when the runs, the x axis or the baseline changed)."""
        runs = [r for r in self.runs() if len(r)]
        ids = tuple(map(id, runs))
        if self.live is None or ids != self._ids:
            self.live, self._ids = LiveCompare(runs, self.baseline, x=self.x), ids
        table = self.query_one("#compare-table", Static)
        table.set_class(True, "-message")  # (a message wraps in the box; the table is as wide as it is, scrolled)
        if len(self.live.groups) < 2:
            table.update(Text("one arm only: nothing to compare (seeds of one arm are grouped)"))
            return
        try:
            results = self.live.update()
        except CompareError as e:
            table.update(Text(f"x {sanitize(self.x)}: {sanitize(str(e))}\n(x: another x axis, b: another baseline)"))
            return
        table.set_class(False, "-message")
        table.update(compare_text(self.live, results))

    def action_next_x(self) -> None:
        self.x = X_NAMES[(X_NAMES.index(self.x) + 1) % len(X_NAMES)] if self.x in X_NAMES else "step"
        self.live = None
        self.update_table()

    def action_next_baseline(self) -> None:
        if self.live is None or not self.live.groups:
            return
        names = list(self.live.groups)
        self.baseline = names[(names.index(self.live.baseline) + 1) % len(names)]
        self.live = None
        self.update_table()

    def action_close(self) -> None:
        self.dismiss(None)
