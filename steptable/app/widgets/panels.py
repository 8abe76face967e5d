"""Side panels: the legend, the routing diagnostics across arms, and the selected column as a chart across arms.

Each panel is fed plain data by the app; it builds Rich ``Text`` (never markup) from render / model functions, at
the width it has, into a Static (the legend is one; the arm panels hold one and scroll it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.widgets import Static

from steptable import render
from steptable.app.model import Store, Summaries, Summary, downsample, spark
from steptable.cells import cut_middle
from steptable.columns import Col
from steptable.formatting import cut, display_width, format_value, pad, sanitize

Arm = tuple[str, Store, int]  # (label, store, rows shown)


def _shared_scale(series: Sequence[tuple[Summary, list[float]]]) -> tuple[float | None, float | None]:
    """One scale for all arms' sparklines of a key, so their heights compare."""
    los = [s.lo for s, _ in series if math.isfinite(s.lo)]
    his = [s.hi for s, _ in series if math.isfinite(s.hi)]
    return (min(los) if los else None), (max(his) if his else None)


class LegendPanel(Static):
    """One line per present column: header, meaning, direction."""

    DEFAULT_CSS = """
    LegendPanel { width: 1fr; height: auto; padding: 0 1; background: $panel; color: $foreground; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.cols: tuple[Col, ...] = ()
        self._shown: tuple[Col, ...] | None = None

    def show_cols(self, cols: Sequence[Col]) -> None:
        """The columns to explain; drawn when the legend is open (``redraw``), not on every layout change."""
        self.cols = tuple(cols)
        if self.parent is not None and self.parent.has_class("-open"):
            self.redraw()

    def redraw(self) -> None:
        """render.legend's words, one column per row, the meaning wrapped beside its header."""
        if self._shown == self.cols:
            return
        self._shown = cols = self.cols
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(no_wrap=True, style="bold")
        table.add_column(ratio=1)
        for c in cols:
            line = render.legend([c], title=None, indent=0)
            if not line:
                continue
            head = c.header.strip()
            table.add_row(Text(sanitize(head)), Text(sanitize(line[len(head) + 2 :])))
        self.update(Group(Text("Legend (l closes)", style="bold"), table))


def _steps_span(store: Store, rows: int) -> str:
    """``  steps 0-120`` of the first ``rows`` rows, as far as the store still holds them: the follower thread
    empties and re-reads the store of a rewritten file (a restart) before the app hears of it."""
    n = min(rows, len(store))
    try:
        return f"  steps {store.step_at(0)}-{store.step_at(n - 1)}" if n > 0 else ""
    except IndexError:  # emptied between the two reads
        return ""


def _label_width(arms: Sequence[Arm]) -> int:
    return min(max((display_width(label) for label, _, _ in arms), default=4), 16)


class _ArmPanel(ScrollableContainer):
    """Shared plumbing: remember the inputs, redraw when resized. The text is one line per row, never wrapped;
    rows past the panel's height or width scroll (many arms), and the panel takes focus only then."""

    MAX_ROWS = 14

    DEFAULT_CSS = """
    _ArmPanel {
        height: auto; max-height: 14; width: 1fr; background: $panel; color: $foreground;
        overflow: auto auto; scrollbar-size: 1 1;
    }
    _ArmPanel > .panel-text {
        width: auto; min-width: 100%; height: auto; padding: 0 1;
        text-wrap: nowrap; text-overflow: clip;  /* a wrapped row would land beside another arm's */
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.body = Static("", classes="panel-text", markup=False)
        self.arms: list[Arm] = []
        self.cols: dict[str, Col] = {}
        self.summaries = Summaries()
        self._cache: dict[tuple[int, str], tuple[Store, tuple[int, int, int], Summary, list[float]]] = {}

    def compose(self) -> ComposeResult:
        yield self.body

    def allow_focus(self) -> bool:
        return self.max_scroll_x > 0 or self.max_scroll_y > 0

    def show_arms(self, arms: Sequence[Arm], cols: Sequence[Col]) -> None:
        self.arms = list(arms)
        self.cols = {c.key: c for c in cols}
        live = {id(store) for _, store, _ in self.arms}
        for k in [k for k in self._cache if k[0] not in live]:  # arms gone or hidden (their stores kept alive here)
            del self._cache[k]
        self.redraw()

    def on_resize(self, event: events.Resize) -> None:
        self.redraw()

    def redraw(self) -> None:
        if self.display:
            self.body.update(self.build(max(self.scrollable_content_region.width - 2, 40)))  # (the text's padding)

    def build(self, width: int) -> Text:
        raise NotImplementedError

    def _series(self, store: Store, key: str, rows: int, width: int) -> tuple[Summary, list[float]]:
        """The column's summary and its sparkline's values, kept per (store, key) until the store's next batch (its
        version: appends, edits, a restart) or another row count or width: a redraw that changes neither (a new
        column picked, the other panel's data) copies no column and reads no rows."""
        version = store.version  # before the copy: an edit landing during it is folded in next time
        got = self._cache.get((id(store), key))
        if got is not None and got[0] is store and got[1] == (version, rows, width):
            return got[2], got[3]
        vals = store.column(key) if key in store.keys else ()
        summary = replace(self.summaries.get(store.run, key, vals, rows, store, version))  # (a copy: it changes)
        line = downsample(vals, width, n=rows)
        self._cache[(id(store), key)] = (store, (version, rows, width), summary, line)
        return summary, line

    def _fmt(self, key: str, x: float, width: int = 6, bound: bool = True) -> str:
        """``bound``: x is a min or max, whose inf means no finite value yet (a latest value of inf is shown)."""
        x = math.nan if bound and math.isinf(x) else x
        c = self.cols.get(key)
        return format_value(x, c.fmt if c is not None and c.fmt != "frac" else None, width)


class DiagnosticsPanel(_ArmPanel):
    """Latest routing diagnostics per arm, each with a sparkline over steps: arms side by side per key, in blocks
    one under another when they do not fit the width."""

    def present(self) -> list[str]:
        from steptable.schemas.routing import DIAGNOSTIC_KEYS

        keys = {k for _, store, _ in self.arms for k in store.keys}
        return [k for k in DIAGNOSTIC_KEYS if k in keys]

    def build(self, width: int) -> Text:
        keys = self.present()
        out = Text()
        title = "Routing diagnostics (d closes): latest value and its course over steps, per arm"
        if not keys or not self.arms:
            out.append(cut(title, width), "bold")
            out.append("\n  no routing diagnostics keys (auroc, cos, qmass, ...) in these runs", "italic")
            return out
        kw = 6
        cell = max((width - kw - 2) // len(self.arms) - 1, 12)
        spark_w = max(cell - 8, 4)
        fit = max((width - kw) // (cell + 1), 1)
        if fit < len(self.arms):  # blocks of arms one under another: each row keeps its key's name in view
            title = f"{len(self.arms)} arms in blocks of {fit}, scroll ↓ for the rest · " + title
        out.append(cut(title, width), "bold")
        series = {key: [self._series(store, key, rows, spark_w) for _, store, rows in self.arms] for key in keys}
        scales = {key: _shared_scale(series[key]) for key in keys}  # one scale per key over every arm
        for first in range(0, len(self.arms), fit):
            out.append("\n" + " " * kw)
            for label, _, _ in self.arms[first : first + fit]:
                out.append(" " + pad(cut_middle(sanitize(label), cell), cell, "left"), "bold")
            for key in keys:
                head = self.cols[key].header if key in self.cols else key
                out.append("\n" + pad(cut(sanitize(head), kw), kw, "left"))
                lo, hi = scales[key]
                for s, line in series[key][first : first + fit]:
                    out.append(" " + pad(self._fmt(key, s.last, bound=False), 6) + " ")
                    out.append(pad(spark(line, lo, hi), cell - 7, "left"))
        return out


class ChartPanel(_ArmPanel):
    """The selected column over steps, one sparkline per arm, with min / max / last."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.key: str | None = None

    def show_key(self, key: str | None) -> None:
        self.key = key
        self.redraw()

    def build(self, width: int) -> Text:
        out = Text()
        key = self.key
        col = self.cols.get(key) if key is not None else None
        if key is None or col is None:
            out.append("Chart (c closes): pick a column with ◀ ▶ or a click", "bold")
            return out
        head = f"{col.header.strip()} ({key})" if col.header.strip() != key else key
        title = sanitize(f"Chart of {head} over steps (c closes); ") + sanitize(col.desc)
        if len(self.arms) > self.MAX_ROWS - 1:  # the rest are below: say so, the scrollbar alone is easy to miss
            title = f"{self.MAX_ROWS - 1} of {len(self.arms)} arms in view, scroll ↓ for the rest · " + title
        out.append(cut(title, width), "bold")
        lw = _label_width(self.arms)
        spans = [_steps_span(st, rows) for _, st, rows in self.arms]
        stats_w = 34 + max((len(t) for t in spans), default=0)
        spark_w = max(min(width - lw - 1 - stats_w, max((rows for _, _, rows in self.arms), default=0)), 8)
        series = [self._series(store, key, rows, spark_w) for _, store, rows in self.arms]
        lo, hi = _shared_scale(series)
        for (label, _, _), (s, line), span in zip(self.arms, series, spans, strict=True):
            out.append("\n" + pad(cut_middle(sanitize(label), lw), lw, "left") + " ", "bold")
            out.append(pad(spark(line, lo, hi), spark_w, "left"))
            out.append(f" min {self._fmt(key, s.lo, 6)}", "dim")
            out.append(f" max {self._fmt(key, s.hi, 6)}", "dim")
            out.append(f" last {self._fmt(key, s.last, 6, bound=False)}")
            out.append(span, "dim")
        return out
