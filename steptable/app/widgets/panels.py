"""Side panels: the legend, the routing diagnostics across arms, and the selected column as a chart across arms.

Each panel is fed plain data by the app; it builds Rich ``Text`` (never markup) from render / model functions, at
the width it has, into a Static (the legend is one; the arm panels hold one and scroll it).
"""

from __future__ import annotations

import math
import re
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.widgets import Static

from steptable.app.model import Store, Summaries, Summary, extremes, spark
from steptable.schemas.legend import COLOURS, MARKS
from steptable.table import render
from steptable.table.cells import cut_middle
from steptable.table.columns import Col
from steptable.table.formatting import cut, display_width, format_value, pad, sanitize

if TYPE_CHECKING:
    from steptable.app.charts.series import Feeds

Arm = tuple[str, Store, int]  # (label, store, rows shown)


def _shared_scale(series: Sequence[tuple[Summary, list[float]]]) -> tuple[float | None, float | None]:
    """One scale for all arms' sparklines of a key, so their heights compare."""
    los = [s.lo for s, _ in series if math.isfinite(s.lo)]
    his = [s.hi for s, _ in series if math.isfinite(s.hi)]
    return (min(los) if los else None), (max(his) if his else None)


class LegendPanel(Static):
    """One line per present column: header, meaning, direction; one part per trainer where the runs are of several
    (``steptable legend``'s titles)."""

    DEFAULT_CSS = """
    LegendPanel { width: 1fr; height: auto; padding: 0 1; background: $panel; color: $foreground; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.parts: tuple[tuple[str | None, tuple[Col, ...]], ...] = ()
        self._shown: tuple[tuple[str | None, tuple[Col, ...]], ...] | None = None

    def show_parts(self, parts: Sequence[tuple[str | None, Sequence[Col]]]) -> None:
        """The columns to explain, each part under its title (None: no title); drawn when the legend is open
        (``redraw``), not on every layout change."""
        self.parts = tuple((title, tuple(cols)) for title, cols in parts)
        if self.parent is not None and self.parent.has_class("-open"):
            self.redraw()

    def redraw(self) -> None:
        """render.legend's words, one column per row, the meaning wrapped beside its header."""
        if self._shown == self.parts:
            return
        self._shown = self.parts
        out: list[Text | Table] = [Text("Legend (l closes)", style="bold")]
        for i, (title, cols) in enumerate(self.parts):
            if title is not None:
                out.append(Text(("\n" if i else "") + sanitize(title), style="bold"))
            out.append(self._table(cols))
        out.append(Text("\nMarks and colours", style="bold"))
        out.append(self._key_table())
        self.update(Group(*out))

    @staticmethod
    def _key_table() -> Table:
        """Every mark and colour rule (``steptable legend``'s last part), the meaning wrapped beside it."""
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(no_wrap=True, style="bold")
        table.add_column(ratio=1)
        for mark, meaning in (*MARKS, *COLOURS):
            table.add_row(Text(mark), Text(meaning))
        return table

    @staticmethod
    def _table(cols: Sequence[Col]) -> Table:
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(no_wrap=True, style="bold")
        table.add_column(ratio=1)
        for c in cols:
            line = render.legend([c], title=None, indent=0)
            if not line:
                continue
            head = c.header.strip()
            table.add_row(Text(sanitize(head)), Text(sanitize(line[len(head) + 2 :])))
        return table


def _steps_span(store: Store, rows: int) -> str:
    """``  steps 0-120`` of the first ``rows`` rows, as far as the store still holds them: the follower thread
    empties and re-reads the store of a rewritten file (a restart) before the app hears of it."""
    n = min(rows, len(store))
    try:
        return f"  steps {store.step_at(0)}-{store.step_at(n - 1)}" if n > 0 else ""
    except IndexError:  # emptied between the two reads
        return ""


#: the chart's labels take at least this many cells, more where the sparklines keep CHART_SPARK of theirs
CHART_LABEL = 16
CHART_SPARK = 20
#: how a fraction column's rate (hacks/n as 0..1) is written in the panels' min / max / last
FRAC_RATE = ".3f"


def arm_labels(names: Sequence[str], width: int) -> list[str]:
    """The arms' names in at most ``width`` cells each, told apart: a sweep's names share most of their text
    (``qwen7b_grpo_lr1e-6_kl0.01``, ``qwen7b_grpo_lr3e-6_kl0.01``), and cutting each name's middle would drop the
    very part that differs. A run id's file name is dropped (``.../seed0/metrics.jsonl``: runs of one arm name are named
    by their path); then tried in turn: the names whole; without the words all of them start and end with; without
    the characters all of them share. The first that fits, else the first whose cut names still differ."""
    whole = [sanitize(n) or '""' for n in names]  # (a name of only escapes or invisible characters: still a label)
    short = _no_file_name(whole)
    tries = [short, _unshared(short, words=True), _unshared(short, words=False)]
    for names_ in tries:
        if all(display_width(n) <= width for n in names_):
            return names_
    cut_tries = [[cut_middle(n, width) for n in names_] for names_ in tries]
    apart = len(set(whole)) == len(whole)
    return next((c for c in cut_tries if not apart or len(set(c)) == len(c)), cut_tries[-1])


def _no_file_name(names: list[str]) -> list[str]:
    """Run ids (``a/seed0/metrics.jsonl``) less their file name, where that leaves the names apart. Only a last part
    with a file suffix goes: ``Qwen/Qwen2.5-7B`` or ``grpo/lr1e-6`` is an arm's name, whole."""
    out = [head if (head := n.rpartition("/")[0]) and _FILE_SUFFIX.search(n) else n for n in names]
    return out if len(set(out)) == len(set(names)) else names


_FILE_SUFFIX = re.compile(r"/[^/]+\.(?:jsonl|json|csv|log|txt|out)$")


def _unshared(names: list[str], *, words: bool) -> list[str]:
    """The names less the text all of them begin and end with (whole words of it when ``words``); each keeps at
    least one character, and names that are not all different are left whole."""
    if len(names) < 2 or len(set(names)) < len(names) or not all(names):
        return names
    head = min(_shared_start(names), min(len(n) for n in names) - 1)
    if words:
        head = max((i for i in range(1, head + 1) if _word_end(names[0], i)), default=0)
    while head and any(display_width(n[head]) == 0 for n in names):  # (a combining mark stays with its letter)
        head -= 1
    rest = [n[head:] for n in names]
    tail = min(_shared_start([r[::-1] for r in rest]), min(len(r) for r in rest) - 1)
    if words:
        tail = max((i for i in range(1, tail + 1) if _word_end(rest[0], len(rest[0]) - i + 1)), default=0)
    return [r[: len(r) - tail] for r in rest]


def _shared_start(names: list[str]) -> int:
    """How many characters all the names start with."""
    first, last = min(names), max(names)  # (the two furthest apart in order share the least)
    n = min(len(first), len(last))
    return next((i for i in range(n) if first[i] != last[i]), n)


def _word_end(text: str, i: int) -> bool:
    """``text[i - 1]`` separates words: ``_ / : = , +`` and spaces; ``-`` and ``.`` too, but not in a number
    (``0.01``, ``1e-6``)."""
    c = text[i - 1]
    if c in "_/:=,+ ":
        return True
    if c not in "-.":
        return False
    before = text[max(i - 3, 0) : i - 1]
    return not (before[-1:].isdigit() or (before[-1:] == "e" and before[:1].isdigit()))


class _ArmPanel(ScrollableContainer):
    """Shared plumbing: remember the inputs, redraw when resized. The text is one line per row, never wrapped;
    rows past the panel's height or width scroll (many arms), and the panel takes focus only then. The app caps its
    height (``cap``) so that the arms' tables keep rows of their own on a short terminal."""

    MAX_ROWS = 14
    MIN_ROWS = 3  # the title and two lines

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
        self._feeds: Feeds | None = None  # made at the first sparkline (charts import ingest: not for the first frame)
        self.rows = self.MAX_ROWS  # the most lines it takes

    def cap(self, rows: int) -> None:
        """Take at most ``rows`` lines (within MIN_ROWS..MAX_ROWS)."""
        rows = max(min(rows, self.MAX_ROWS), self.MIN_ROWS)
        if rows != self.rows:
            self.rows = rows
            self.styles.max_height = rows
            self.redraw()  # (the chart says how many arms are in view)

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
        if self._feeds is not None:
            self._feeds.keep([store for _, store, _ in self.arms])
        self.redraw()

    def on_resize(self, event: events.Resize) -> None:
        self.redraw()

    def redraw(self) -> None:
        if self.display:
            self.body.update(self.build(max(self.scrollable_content_region.width - 2, 40)))  # (the text's padding)

    @property
    def feeds(self) -> Feeds:
        """Min/max pyramids: a sparkline cell shows its bucket's max over every row."""
        if self._feeds is None:
            from steptable.app.charts.series import Feeds

            self._feeds = Feeds()
        return self._feeds

    @abstractmethod
    def build(self, width: int) -> Text:
        """The panel's text for ``width`` cells (one line per row, never wrapped)."""

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
        line = extremes(self.feeds.get(store, key, "step", rows).raw, rows, width)
        self._cache[(id(store), key)] = (store, (version, rows, width), summary, line)
        return summary, line

    def _spark(self, line: list[float], lo: float | None, hi: float | None, width: int) -> Text:
        """The sparkline in ``width`` cells: a bucket with a NaN / inf (``inf`` in ``line``) is a marker in the
        alert colour."""
        text = Text(pad(spark(line, lo, hi), width, "left"))
        alert = self.app.theme_variables.get("error", "red")
        for i, v in enumerate(line[:width]):
            if v == math.inf:
                text.stylize(f"bold {alert}", i, i + 1)
        return text

    def _fmt(self, key: str, x: float, width: int = 6, bound: bool = True) -> str:
        """``bound``: x is a min or max, whose inf means no finite value yet (a latest value of inf is shown)."""
        x = math.nan if bound and math.isinf(x) else x
        c = self.cols.get(key)
        # One form on every line: the automatic format fills spare cells with digits (min .71875 over max .688).
        fmt = c.fmt if c is not None else None
        if fmt == "frac":
            return format_value(x, FRAC_RATE, width)
        return format_value(x, fmt, width, fill=False)


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
        labels = arm_labels([label for label, _, _ in self.arms], cell)
        for first in range(0, len(self.arms), fit):
            out.append("\n" + " " * kw)
            for label in labels[first : first + fit]:
                out.append(" " + pad(label, cell, "left"), "bold")
            for key in keys:
                head = self.cols[key].header if key in self.cols else key
                out.append("\n" + pad(cut(sanitize(head), kw), kw, "left"))
                lo, hi = scales[key]
                for (_, store, _), (s, line) in zip(self.arms[first : first + fit], series[key][first : first + fit],
                                                     strict=True):
                    if key not in store.keys:  # (an arm that never logged it: no value, not a NaN)
                        out.append(" " + pad("", cell))
                        continue
                    out.append(" " + pad(self._fmt(key, s.last, bound=False), 6) + " ")
                    out.append(self._spark(line, lo, hi, cell - 7))
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
        if len(self.arms) > self.rows - 1:  # the rest are below: say so, the scrollbar alone is easy to miss
            title = f"{self.rows - 1} of {len(self.arms)} arms in view, scroll ↓ for the rest · " + title
        out.append(cut(title, width), "bold")
        spans = [_steps_span(st, rows) for _, st, rows in self.arms]
        stats_w = 34 + max((len(t) for t in spans), default=0)
        most = max((rows for _, _, rows in self.arms), default=0)
        labels = arm_labels([label for label, _, _ in self.arms],
                            max(width - 1 - stats_w - min(most, CHART_SPARK), CHART_LABEL))
        lw = max((display_width(label) for label in labels), default=4)
        spark_w = max(min(width - lw - 1 - stats_w, most), 8)
        series = [self._series(store, key, rows, spark_w) for _, store, rows in self.arms]
        lo, hi = _shared_scale(series)
        for label, (s, line), span, (_, store, _) in zip(labels, series, spans, self.arms, strict=True):
            out.append("\n" + pad(label, lw, "left") + " ", "bold")
            if key not in store.keys:  # (an arm that never logged it: no value, not a NaN)
                out.append(pad("", spark_w) + " not in this run's rows", "dim")
                continue
            out.append(self._spark(line, lo, hi, spark_w))
            out.append(f" min {self._fmt(key, s.lo, 6)}", "dim")
            out.append(f" max {self._fmt(key, s.hi, 6)}", "dim")
            out.append(f" last {self._fmt(key, s.last, 6, bound=False)}")
            out.append(span, "dim")
        return out
