"""A StepLogger's columns: the set it was given (or chose), fitted to the values logged, and the same set as it
prints them.

:class:`LoggerColumns` holds ``cols``, the whole set (streamed and dump-only columns: what the run's description,
``table.txt`` and the end-of-run dump use), whose columns declared without a width are widened to the values
logged (:meth:`LoggerColumns.fit_widths`; asked once whether any needs it, not per row); ``stream_cols``, the
streamed ones among them; and ``layout``, the streamed columns as the console prints them
(steptable.logger.consolecols: widened as values need, within ``room`` for automatic columns, some hidden where the
row has no room). :meth:`LoggerColumns.shown` and :meth:`LoggerColumns.legend_cols` give the whole set with the
streamed columns as printed, for the dump and the legend. A new set (automatic columns laid out again) is a new
:class:`LoggerColumns`. Pure: no I/O; the logger's lock covers it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from steptable.logger.consolecols import ConsoleLayout
from steptable.table.columns import Col, fit_to, streamed


class LoggerColumns:
    def __init__(self, cols: Sequence[Col], room: int | None) -> None:
        self.cols = tuple(cols)
        self._fits = any(c.fit for c in self.cols)  # (fit_to keeps each column's fit: asked once, not per row)
        self.stream_cols = streamed(self.cols)
        self.layout = ConsoleLayout(self.stream_cols, room=room)

    def fit_widths(self, view: Mapping[str, Any]) -> None:
        """Fit the columns declared without a width to ``view``'s values (the run's description and table.txt
        give them)."""
        cols = fit_to(self.cols, view) if self._fits else None
        if cols is not None:
            self.cols = cols
            self.stream_cols = streamed(cols)

    def shown(self, cols: Sequence[Col]) -> list[Col]:
        """``cols`` (the layout's columns or legend columns) in the whole set's order, with its dump-only columns."""
        by_key = {c.key: c for c in cols}
        return [by_key.get(c.key, c) if c.stream else c for c in self.cols]

    def legend_cols(self) -> list[Col]:
        """The columns the legend explains: each dump-only column and each printed one whose header is not its key
        and that the row does not hide."""
        hidden = self.layout.hidden
        return [c for c in self.shown(self.layout.legend_cols())
                if not c.stream or (c.header.strip() != c.key and c.key not in hidden)]
