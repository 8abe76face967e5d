"""RunList: a sweep's runs, one line each (mark, name, format, state, rows, last step, age, alerts, metric columns),
under a header that stays. A virtual list (Line API): only the lines on screen are drawn, so thousands of runs
filter and sort in the time of one pass over their digests; the cells that change with the clock (state, age) are
made for the lines drawn only, in columns of a fixed width (``STATE_WIDTH``, ``AGE_WIDTH``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from steptable.alerts.engine import fmt_age
from steptable.app.runrows import Entry, Judge, ListState, label, metric, state_of
from steptable.app.widgets.keys import cursor_bindings
from steptable.app.widgets.scrollrange import set_scroll_range
from steptable.summary.sweep import run_state
from steptable.table.cells import cut_middle
from steptable.table.formatting import display_width, fmt_auto, pad, sanitize

#: a run's name is cut (in the middle) to this many cells
NAME_MAX = 48
HEADERS = {"name": "run", "format": "format", "state": "state", "rows": "rows", "step": "step", "age": "age",
           "alerts": "alerts"}
STATE_STYLES = {"live": "green", "idle": "yellow", "ended": "dim", "crashed": "bold red", "…": "dim"}
#: the state column's width: its longest state
STATE_WIDTH = max(map(display_width, STATE_STYLES))
#: the age column's width: fmt_age's longest for any age under 27 years ("99.9m", "1.66h", "9999d")
AGE_WIDTH = 5


def cells(e: Entry, state: ListState, now: float, judge: Judge = run_state) -> list[tuple[str, str]]:
    """(text, style name) of each column of ``e``'s line (``ListState.columns`` order, the mark first)."""
    return _assemble(e, state, fixed_cells(e, state), _clock_cells(e, now, judge))


def fixed_cells(e: Entry, state: ListState) -> list[tuple[str, str]]:
    """The cells of ``e``'s line that change only with its digest and the metric columns: name, format, rows, step,
    alerts, the metrics (the mark, state and age change with the selection and the clock)."""
    d = e.digest
    out = [(cut_middle(sanitize(label(e)), NAME_MAX), ""), (sanitize(d.kind) if d else "", "dim")]
    if d is None:
        out += [(f"{e.size / 1e6:.1f} MB", "dim"), ("", ""), ("", "")]
    else:
        rows = f"{d.rows:,}" if d.rows_exact else f"~{d.rows:,}"
        marks = " ".join(f"{n}{c}" for n, c in ((d.errors, "E"), (d.warnings, "W")) if n)
        out += [(rows, ""), (str(d.last_step) if d.last_step is not None else "", ""),
                (marks, "bold red" if d.errors else "yellow" if d.warnings else "")]
    for key in state.metrics:
        v = metric(e, key, state)
        out.append((fmt_auto(v, 4) if v is not None else "", ""))
    return out


def _assemble(e: Entry, state: ListState, fixed: list[tuple[str, str]],
              clock: tuple[str, str]) -> list[tuple[str, str]]:
    """The whole line: ``fixed`` with the mark, and ``clock``'s state and age."""
    mark = ("p" if e.run_id in state.pinned else " ") + ("✓" if e.run_id in state.selected else " ")
    st, age = clock
    name, kind, rows, step, alerts, *metrics = fixed
    return [(mark, "bold"), name, kind, (st, STATE_STYLES.get(st, "")), rows, step, (age, ""), alerts, *metrics]


def _clock_cells(e: Entry, now: float, judge: Judge) -> tuple[str, str]:
    """The cells that change with the clock: the run's state and the age of its newest row."""
    d = e.digest
    return state_of(e, now, judge), fmt_age(now - d.updated) if d is not None and d.updated is not None else ""


#: the columns that stay when the list is scrolled sideways: the mark and the run's name
PINNED = 2


class RunList(ScrollView, can_focus=True):
    """The runs ``show`` was given, one line each; the cursor line is the one ``space`` / ``enter`` act on."""

    BINDINGS: ClassVar[list[BindingType]] = [*cursor_bindings("cursor")]
    DEFAULT_CSS = """
    RunList { width: 1fr; height: 1fr; background: $panel; color: $foreground; }
    """

    class CursorMoved(Message):
        pass

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[Entry] = []
        self.widths: list[int] = []
        self.header: list[str] = []
        self.cursor = 0
        self._state = ListState()
        self._now = 0.0
        self._judge: Judge = run_state
        # each shown run's fixed cells; its line is put together when it is drawn (a new run in a list of thousands
        # redraws the lines on screen, not every line)
        self._cells: list[list[tuple[str, str]]] = []
        # run id -> (its digest, the metric columns' key, its fixed cells, their widths): a filter key press
        # re-lays thousands of lines; only those whose digest changed are formatted again
        self._fixed: dict[str, tuple[object, tuple[object, ...], list[tuple[str, str]], tuple[int, ...]]] = {}
        self._clock: dict[str, tuple[object, tuple[str, str]]] = {}  # run id -> (digest, state and age) this second
        self._second = -1
        # what ``show`` last had on screen: (the view's scroll, size and focus, each line on it with its cursor mark)
        self._drawn: tuple[tuple[object, ...], list[tuple[list[tuple[str, str]], bool]]] | None = None

    def show(self, entries: Sequence[Entry], state: ListState, now: float, judge: Judge = run_state) -> None:
        """Show ``entries`` (already filtered and sorted), keeping the cursor on the run it was on."""
        current = self.current
        self.entries = list(entries)
        self._state, self._now, self._judge = state, now, judge
        key = (tuple(state.metrics), state.stat, tuple(sorted(state.higher.items())))
        memo = self._fixed
        shown, fixed_widths = [], []
        if int(now) != self._second:
            self._second, self._clock = int(now), {}
        for e in self.entries:
            rid, d = e.run_id, e.digest
            hit = memo.get(rid)
            if hit is None or hit[0] is not d or hit[1] != key or d is None:
                fixed = fixed_cells(e, state)
                hit = memo[rid] = (d, key, fixed, tuple(display_width(t) for t, _ in fixed))
            shown.append(hit[2])
            fixed_widths.append(hit[3])
        self._cells = shown
        columns = (self.widths, self.header)  # (what is on screen: a new arrow alone redraws the header)
        arrow = " ▼" if state.reverse else " ▲"
        names = state.columns()
        # a metric column's header is its key: untrusted text from the logs
        self.header = ["", *(sanitize(HEADERS.get(c, c)) + (arrow if c == state.sort else "") for c in names)]
        if shown:  # (the columns in _assemble's order: the mark, name, format, state, rows, step, age, alerts, ...)
            fw = [max(col) for col in zip(*fixed_widths, strict=True)]
            widest = [2, fw[0], fw[1], STATE_WIDTH, fw[2], fw[3], AGE_WIDTH, *fw[4:]]
        else:
            widest = [0] * len(self.header)
        self.widths = [max(display_width(h), w) for h, w in zip(self.header, widest, strict=True)]
        self.cursor = self._place(current)
        set_scroll_range(self, Size(sum(self.widths) + 2 * len(self.widths), len(shown) + 1))
        self._redraw(columns == (self.widths, self.header))

    def _redraw(self, same_columns: bool) -> None:
        """Refresh the lines on screen that changed since the last ``show`` (every line where the columns, the
        scroll, the size or the focus moved): a run added off screen redraws no line of the list."""
        sx, top = self.scroll_offset
        view = (sx, top, self.size, self.has_focus)
        end = min(top + max(0, self.size.height - 1), len(self._cells))
        lines = [(self.line(i), i == self.cursor) for i in range(top, end)]
        before, self._drawn = self._drawn, (view, lines)
        if not same_columns or before is None or before[0] != view or len(before[1]) != len(lines):
            self.refresh()
            return
        for i, (line, old) in enumerate(zip(lines, before[1], strict=True)):
            if line != old:
                self.refresh_line(top + i + 1)  # (virtual lines: the header is the first)

    def _place(self, current: str | None) -> int:
        """The cursor's line once ``entries`` changed: the run it was on (looked for where it was first)."""
        n = len(self.entries)
        if current is not None:
            if 0 <= self.cursor < n and self.entries[self.cursor].run_id == current:
                return self.cursor
            for i, e in enumerate(self.entries):
                if e.run_id == current:
                    return i
        return min(self.cursor, max(0, n - 1))

    def line(self, i: int) -> list[tuple[str, str]]:
        """(text, style name) of each column of the ``i``-th run shown (as :func:`cells` gives them)."""
        e = self.entries[i]
        timed = self._clock.get(e.run_id)
        if timed is None or timed[0] is not e.digest:
            timed = self._clock[e.run_id] = (e.digest, _clock_cells(e, self._now, self._judge))
        return _assemble(e, self._state, self._cells[i], timed[1])

    @property
    def lines(self) -> list[list[tuple[str, str]]]:
        """Every shown run's :meth:`line`."""
        return [self.line(i) for i in range(len(self._cells))]

    @property
    def current(self) -> str | None:
        """The run id on the cursor line (None when the list is empty)."""
        return self.entries[self.cursor].run_id if 0 <= self.cursor < len(self.entries) else None

    def render_line(self, y: int) -> Strip:
        sx, sy = self.scroll_offset
        if y == 0:
            text, base = self.header, Style(bold=True, underline=True)
            styles = [""] * len(text)
        else:
            i = y - 1 + sy
            if i >= len(self._cells):
                return Strip.blank(self.size.width)
            line = self.line(i)
            text = [c for c, _ in line]
            styles = [s for _, s in line]
            base = Style(reverse=True) if i == self.cursor and self.has_focus else \
                Style(underline=True) if i == self.cursor else Style()
        segs: list[Segment] = []
        for j, (t, st) in enumerate(zip(text, styles, strict=True)):
            align = "right" if j >= 5 else "left"
            segs.append(Segment(pad(t, self.widths[j], align) + "  ", base + Style.parse(st) if st else base))
        width = self.size.width
        # scrolled sideways, the mark and the name stay (the metrics scrolled into view name no run otherwise),
        # where they take at most half the width
        pinned = sum(self.widths[:PINNED]) + 2 * PINNED
        if sx and len(segs) > PINNED and pinned <= width // 2:
            strip = Strip.join([Strip(segs[:PINNED]), Strip(segs[PINNED:]).crop(sx, sx + width - pinned)])
        else:
            strip = Strip(segs).crop(sx, sx + width)
        return strip.extend_cell_length(width)

    def action_cursor(self, by: int) -> None:
        self.move_to(self.cursor + by)

    def action_page(self, by: int) -> None:
        self.move_to(self.cursor + by * max(1, self.size.height - 2))

    def move_to(self, i: int) -> None:
        if not self.entries:
            return
        self.cursor = max(0, min(len(self.entries) - 1, i))
        self._drawn = None
        top = self.scroll_offset.y
        rows = max(1, self.size.height - 1)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + rows:
            self.scroll_to(y=self.cursor - rows + 1, animate=False)
        self.refresh()
        self.post_message(self.CursorMoved())

    def on_focus(self) -> None:
        self._drawn = None
        self.refresh()

    def on_blur(self) -> None:
        self._drawn = None
        self.refresh()
