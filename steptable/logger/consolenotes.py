"""What the console prints around a StepLogger's rows: the legend lines of columns new to it, the header at its
cadence and wherever the columns changed, and the columns a header no longer has room for. Pure: it returns the
lines, the logger prints them."""

from __future__ import annotations

from collections.abc import Sequence

from steptable.logger.consolecols import ConsoleLayout
from steptable.table import render
from steptable.table.columns import Col
from steptable.table.formatting import display_width, sanitize


class ConsoleNotes:
    """The lines due before each printed row, and the count of lines since the last header."""

    def __init__(self, header_every: int, table: str | None = "table.txt") -> None:
        self.header_every = header_every
        self.table = table  # the file that holds every column (None: the run has none)
        self.since_header = 0  # lines (rows, alerts) printed since the last header
        self._explained: set[tuple[str, str]] = set()  # (key, header) of the legend lines printed
        self._printed: dict[str, None] = {}  # keys of the columns printed so far, in order
        self._told_gone: set[str] = set()  # of them, those said to be left out of the line since
        self._told_empty = False  # the empty key's note was printed

    def before_row(self, layout: ConsoleLayout, legend_cols: Sequence[Col], first: bool, grown: bool, widened: bool,
                   room: int | None, unshown: Sequence[str] = (), empty_key: str | None = None) -> list[str]:
        """The lines to print before a row: ``empty_key`` (the note on the row's empty key, which no column can
        show: None where it has none) the first time, ``legend_cols``' lines not printed yet (the first row, or one
        that brought new keys: ``grown``), then where a header is due (the first row, a column ``widened``, the
        cadence) the columns it leaves out, within ``room`` cells: those printed before, and ``unshown`` (logged
        keys the automatic layout had no room for), each said once; then the header. The row is counted."""
        out: list[str] = []
        if empty_key is not None and not self._told_empty:  # (else its values would seem never logged)
            self._told_empty = True
            out.append(empty_key)
        header_due = first or widened or bool(self.header_every and self.since_header >= self.header_every)
        if first or grown:
            new = [c for c in legend_cols if (c.key, c.header) not in self._explained and render.explained(c)]
            self._explained.update((c.key, c.header) for c in new)
            if new:  # a legend with nothing to explain is only a line to pay for
                out.append(render.legend(new))
        if header_due:
            # a column printed on the rows above that this header leaves out (no room left as others widened or
            # new keys came): said once, or it would seem never logged again
            shown = {c.key for c in layout.cols}
            gone = [k for k in dict.fromkeys([*self._printed, *unshown]) if k not in shown and k not in self._told_gone]
            if gone:
                self._told_gone.update(gone)
                out.append(left_out(gone, room, self.table))
            self._printed.update((c.key, None) for c in layout.cols if c.key not in self._printed)  # (their order)
            layout.settle()  # columns waiting to print narrower do so under this header
            self.since_header = 0
            out.append(render.header(layout.cols))
        self.since_header += 1
        return out


def left_out(keys: Sequence[str], room: int | None, table: str | None = "table.txt") -> str:
    """The line that names columns no longer printed (``table`` has them; None: no file does, the logger has no
    run directory), within ``room`` cells where the names fit at all: the others counted (``left out: m7, m8 +3 (all
    in table.txt)``)."""
    names = [sanitize(k) for k in keys]
    where = f"(all in {table})" if table is not None else "(no run_dir)"
    for n in range(len(names), 0, -1):
        more = f" +{len(names) - n}" if n < len(names) else ""
        text = f"left out: {', '.join(names[:n])}{more} {where}"
        if room is None or display_width(text) <= room:
            return text
    return f"left out: {len(names)} column(s) {where}"
