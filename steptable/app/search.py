"""Text search of the tables' screen (``/``, then ``n`` / ``N``): a column whose key or header holds the text, and
every shown cell whose text (as the table draws it) holds it, ignoring case. Matching the keys come first (moving to
one lights that column), then the cells in step order; the next and previous ones wrap around. Moving to a cell puts
its step at the top of every shown table (the jump's way: following pauses) and marks the cell in its table.

The generations viewer searches its samples with the same ``Finder`` (``steptable.app.screens.generations``)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from steptable.table import render
from steptable.table.formatting import sanitize

if TYPE_CHECKING:
    from steptable.app.tables import Tables
    from steptable.app.widgets.grid import StepGrid

T = TypeVar("T")


def pattern(text: str) -> re.Pattern[str] | None:
    """The typed text as a literal, case-insensitive pattern (spaces at its ends dropped); None for no text."""
    text = text.strip()
    return re.compile(re.escape(text), re.IGNORECASE) if text else None


class Finder(Generic[T]):
    """The matches of one search and the one shown: ``status`` says "k of m" or that nothing matched."""

    def __init__(self) -> None:
        self.text = ""
        self.matches: list[T] = []
        self.at = -1  # index of the match shown; -1: none yet

    def start(self, text: str, matches: Sequence[T], first: int = 0) -> T | None:
        """A new search for ``text``: its matches in order, shown from ``first``; the match to show, if any."""
        self.text = text.strip()
        self.matches = list(matches)
        self.at = min(max(first, 0), len(self.matches) - 1) if self.matches else -1
        return self.matches[self.at] if self.matches else None

    def next(self, forward: bool) -> T | None:
        """The next (previous) match, wrapping at either end; None when the search has none."""
        if not self.matches:
            return None
        self.at = (self.at + (1 if forward else -1)) % len(self.matches)
        return self.matches[self.at]

    @property
    def status(self) -> str:
        """``search 'x': 3 of 12``, ``no match for 'x'``, or "" before any search (the text sanitized)."""
        if not self.text:
            return ""
        shown = sanitize(self.text)
        if not self.matches:
            return f"no match for {shown!r}"
        return f"search {shown!r}: {self.at + 1} of {len(self.matches)}"


@dataclass(frozen=True)
class Match:
    """A column key (``run`` None) or a cell: run ``run``'s row ``index`` (at ``step``) in column ``key``."""

    key: str
    run: str | None = None
    index: int = -1
    step: int = -1


def key_matches(grids: Sequence[StepGrid], pat: re.Pattern[str]) -> list[Match]:
    """The shown columns whose key or header holds the text, once each, in the tables' order."""
    seen: dict[str, Match] = {}
    for g in grids:
        for c in g.cols:
            if c.key not in seen and (pat.search(c.key) or pat.search(sanitize(c.header))):
                seen[c.key] = Match(c.key)
    return list(seen.values())


def cell_matches(run: str, grid: StepGrid, pat: re.Pattern[str]) -> Callable[[], list[Match]]:
    """A reader of the cells of ``grid``'s rows (as they are now) whose drawn text holds the text, safe to call in
    another thread: each row is drawn whole once, and only a row that holds the text is split into its cells."""
    store, cols, derive, rows = grid.store, grid.cols, grid.derive, grid.rows
    sep = render.SEP

    def read() -> list[Match]:
        out: list[Match] = []
        if store is None or not cols:
            return out
        try:
            for i in range(min(rows, len(store))):
                texts = render.cells(cols, derive(store.row(i)))
                if pat.search(sep.join(texts)) is None:
                    continue
                step = store.step_at(i)
                out += [Match(c.key, run, i, step) for c, t in zip(cols, texts, strict=True) if pat.search(t)]
        except IndexError:  # the follower emptied the store (a rewritten file): the rows matched so far
            pass
        return out

    return read


class Search:
    """Owned by the app, which hands it the search keys; ``tables``: the tables it searches and moves. ``post``:
    runs a function on the app's thread (from another one); with it the cells are read in a thread of their own
    (a long run's rows take seconds), without it in the caller's thread. ``changed``: called on the app's thread
    when ``status`` may have changed."""

    def __init__(self, tables: Tables, post: Callable[[Callable[[], None]], object] | None = None,
                 changed: Callable[[], None] | None = None) -> None:
        self.tables = tables
        self.post = post
        self.changed = changed or (lambda: None)
        self.finder: Finder[Match] = Finder()
        self.searching = ""  # the text being searched for in a thread ("": none)

    @property
    def status(self) -> str:
        return f"searching {sanitize(self.searching)!r}…" if self.searching else self.finder.status

    def find(self, text: str) -> str:
        """Search for ``text`` and show the first match (the first column, else the first cell at or after the step
        the table in front is at, wrapping); the status line's words."""
        pat = pattern(text)
        if pat is None:
            self._mark(None)
            self.finder.start("", [])
            self.searching = ""
            self.changed()
            return ""
        panels = self.tables.app.panels
        hidden = self.tables.app.session.hidden
        shown = [(rid, p.grid) for rid, p in panels.items() if rid not in hidden]
        keys = key_matches([g for _, g in shown], pat)
        order = {rid: n for n, (rid, _) in enumerate(shown)}
        readers = [cell_matches(rid, g, pat) for rid, g in shown]

        def read() -> None:
            cells = sorted((m for r in readers for m in r()), key=lambda m: (m.step, order[m.run or ""], m.index))
            if self.post is None:
                show(cells)
                return
            try:
                self.post(lambda: show(cells))
            except RuntimeError:  # the app closed meanwhile
                pass

        def show(cells: list[Match]) -> None:
            if self.searching != text and self.post is not None:  # another search since
                return
            self.searching = ""
            first = 0
            if not keys and cells:
                here = self._here()
                first = next((n for n, m in enumerate(cells) if m.step >= here), 0) if here is not None else 0
            self._go(self.finder.start(text, [*keys, *cells], first))
            self.changed()

        if self.post is None:
            read()
        else:
            self.searching = text
            threading.Thread(target=read, name="steptable-search", daemon=True).start()
            self.changed()
        return self.status

    def next(self, forward: bool) -> str:
        """Show the next (previous) match of the last search; the status line's words."""
        if self.searching:
            return self.status
        if not self.finder.text:
            return "no search yet: / searches"
        self._go(self.finder.next(forward))
        self.changed()
        return self.status

    def _here(self) -> int | None:
        grid = self.tables.focused_grid()
        if grid is None or grid.store is None or not grid.rows:
            return None
        try:
            return grid.store.step_at(min(grid.top_index, grid.rows - 1))
        except IndexError:
            return None

    def _go(self, m: Match | None) -> None:
        if m is None:
            self._mark(None)
            return
        panel = self.tables.app.panels.get(m.run) if m.run is not None else None
        grid = panel.grid if panel is not None else self._with_key(m.key)
        if panel is not None:
            self.tables.jump_to_step(m.step)
        self._mark(m if panel is not None else None)
        if grid is not None and any(c.key == m.key for c in grid.cols):
            if panel is not None:
                grid.focus()
            grid.select(m.key)
            self.tables.column_picked(grid, m.key)

    def _with_key(self, key: str) -> StepGrid | None:
        """The table in front if it has column ``key``, else the first shown one that has it."""
        front = self.tables.focused_grid()
        grids = [g for g in ([front] if front is not None else []) + self.tables.grids() if g is not None]
        return next((g for g in grids if any(c.key == key for c in g.cols)), front)

    def _mark(self, m: Match | None) -> None:
        """Mark the found cell in its table (and no other)."""
        for rid, panel in self.tables.app.panels.items():
            panel.grid.mark_found((m.index, m.key) if m is not None and m.run == rid else None)
