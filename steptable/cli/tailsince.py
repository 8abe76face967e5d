"""Where `steptable tail --since` starts each run and where it leaves it: the run's mark in the cursor given
(steptable.cli.tailcursor), its rows changed at or before the mark since it was taken, a resume back past it, and
the cursor to give next (one run's, or a token of every run's). What is printed is steptable.cli.tailout.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from steptable.cli.tailcursor import Mark, Since, encode, one_run
from steptable.ingest import RunStore

__all__ = ["Places", "cells_at"]

#: (the lowest step a resume replaced rows from, the lowest step from which on every row may have changed, the
#: steps of the other rows changed): RunStore.earlier_changes.since
Changed = tuple[int | None, int | None, list[int]]


class Places:
    """Per run: the mark the cursor ``since`` gives it, the highest step printed, whether its rows went back before
    its mark, and its earlier changes counted when printed. ``page``: at most this many rows in all (0: all), each
    run's share of them in ``pages`` (steptable.cli.tailout.pages)."""

    def __init__(self, since: Since | None, page: int) -> None:
        self.since = since
        self.page = page
        self.pages: dict[str, int] = {}  # run -> its share of the page (0: all)
        self.printed: dict[str, int | None] = {}  # run -> the highest step printed (None: none yet)
        self.back: set[str] = set()  # runs whose rows went back before their mark (printed from there)
        self.edits_seen: dict[str, int] = {}  # run -> its earlier changes counted when its rows were printed
        self.given: dict[str, Mark | None] = {}  # run -> its mark in the cursor, as taken at its first print
        self.alone = False  # one run chosen (a cursor's cells that name no run are of its row)

    def mark(self, store: RunStore) -> Mark | None:
        """The mark of ``store``'s run in the cursor (None: no cursor, or one that names other runs: the run is new
        to it, served from its start; so is one whose earlier changes counted in it are more than the run has
        now, its file written again). Kept from the run's first call on. Called under the store's lock."""
        if store.run in self.given:
            return self.given[store.run]
        m = None if self.since is None else self.since.mark(store.run, self.alone)
        if m is not None and self.since is not None and self.since.named and (m.edits or 0) > (
                store.earlier_changes.count):
            m = None
        self.given[store.run] = m
        return m

    def after_cursor(self, store: RunStore, m: Mark) -> int:
        """The index of the first row to print after the mark ``m``: the row at its step again when it holds more
        cells than the mark says were printed (a mark's cells of 0: there was no row at it)."""
        i = store.index_of_step(m.step + 1)
        if m.cells is not None and i:
            cells = cells_at(store, m.step)
            if cells is not None and cells > m.cells:
                return i - 1
        return i

    @staticmethod
    def changed(store: RunStore, m: Mark | None) -> Changed | None:
        """What changed at or before the mark ``m`` since it was taken, where it gives the run's earlier changes:
        RunStore's ``earlier_changes.since``; else None (a count past the run's is not of this run's file as it
        is: a cursor of another run, a file written again). Called under the store's lock."""
        if m is None or m.edits is None or m.edits > store.earlier_changes.count:
            return None
        return store.earlier_changes.since(m.edits, m.step)

    def went_back(self, store: RunStore, n: int, m: Mark | None, changed: Changed | None, ended: bool,
                  label: str) -> tuple[int, str] | None:
        """The step to print a run's rows from, before its mark ``m``, and the note that says why, or None. Where
        the mark counts the run's earlier changes (``changed``: :meth:`changed`): a resume since it was taken to a
        step at or before it, changes too old to be listed, or more rows changed than a page holds (printed from
        the first of them). Else for a run still going (not ``ended``) that resumed from a checkpoint at or before
        the mark and whose rows now end before it (the rows after its resume replaced rows the cursor was taken
        from): the step of that resume. ``label``: the run's name in the note. Called under the store's lock."""
        if m is None or not n:
            return None
        since = m.step
        if changed is not None:
            resumed, lost, steps = changed
            page = self.pages.get(store.run, self.page)
            many = min(steps) if page and len(set(steps)) > page else None
            froms = [x for x in (resumed, lost, many) if x is not None]
            if not froms:
                return None
            start = min(froms)
            if resumed == start:
                return start, f"{label}: resumed at step {start}, at or before --since {since}"
            what = f"resumed at step {resumed}; " if resumed is not None else ""
            return start, f"{label}: {what}rows at or before --since {since} changed since: its rows from step {start}"
        if ended or (last := store.step_at(n - 1)) >= since:
            return None
        back = store.resumes[-1] if store.resumes else None
        if back is None or back > since:
            return None
        return back, f"{label}: resumed at step {back}, its rows end at {last}, before --since {since}"

    def step_of(self, store: RunStore) -> int | None:
        """The step the run was left at: the highest printed, at least its mark's (one that went back before it:
        its last printed); its mark's where none was printed; None where neither."""
        p, m = self.printed.get(store.run), self.given.get(store.run)
        if p is None:
            return None if m is None else m.step
        return p if m is None or store.run in self.back else max(p, m.step)

    def cursor(self, stores: Sequence[RunStore]) -> str | None:
        """The cursor to give next for the runs ``stores`` (those printed): one run's ``STEP:CELLS[:EDITS]@KEY``
        (the plain step where no row is at it; the cursor given where the run has none), else a token of each
        run's mark (steptable.cli.tailcursor.encode; a run left out is served from its start next time). None
        where nothing was printed and no cursor given."""
        marks = [(s.run, Mark(st, cells_at(s, st) or 0, self.edits_seen.get(s.run, 0)))
                 for s in stores if (st := self.step_of(s)) is not None]
        if len(stores) == 1:
            if not marks:
                return None if self.since is None else self.since.text
            run, m = marks[0]
            return one_run(run, m if self.printed.get(run) == m.step else Mark(m.step))
        if not marks and self.since is None:
            return None
        return encode(marks)

    def short_of(self, stores: Sequence[RunStore], ended: Collection[str]) -> tuple[int, bool] | None:
        """(the highest last step of ``stores``, whether they all ended) where each run's mark is past its last step
        (a cursor from another run, or a typo: an agent polling it would wait for rows that never come); else
        None."""
        ends = [s.step_at(len(s) - 1) for s in stores if len(s)]
        if self.since is None or not ends:
            return None
        for s in stores:
            m = self.given.get(s.run)
            if len(s) and (m is None or s.step_at(len(s) - 1) >= m.step):
                return None
        return max(ends), all(s.run in ended for s in stores)


def cells_at(store: RunStore, step: int) -> int | None:
    """How many cells ``store``'s row at ``step`` holds, whatever --columns (None: no row at it)."""
    with store.lock:
        i = store.index_of_step(step)
        return store.cells_in(i) if i < len(store) and store.step_at(i) == step else None
