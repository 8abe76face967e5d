"""RowPlacement: where the rows of a parsed chunk go in a store's columns, the rule RunStore applies. Pure.

Placement of a row with step ``s`` (the rows of one parsed chunk arrive together, in file order):

- ``s`` above every stored step: appended (the hot path: a whole chunk at once, column by column);
- ``s`` equal to the last stored step: merged into that row, adding the keys it lacks (tinker's eval line,
  torchtune's one-metric lines); a cell that row holds is never overwritten (the first value wins: a loss of inf
  must not be hidden by a later line of the same step);
- ``s`` equal to an earlier stored step and measuring again at least half of its own metric keys, or more than
  half of that row's: a *resume*
  (a retrain restart appends again from its checkpoint; a counter that restarts at 0): rows from ``s`` on are dropped,
  the new row appended, ``s`` recorded in ``resumes``; with mostly other keys it is merged into that row instead,
  filling only the cells that row has no measured value for (the first value wins: tinker's asynchronous evaluation
  lands after later iterations' rows with a ``time/total`` of its own, not the iteration's);
- ``s`` below the last step and not stored: inserted in order (out-of-order writers).

The store (:class:`~steptable.ingest.store.RunStore`) holds the lock, counts versions and keeps the bookkeeping this
rule calls back into: ``_note`` after a batch, ``_edited`` for a row changed in place, ``_note_replaced`` before a
resume drops rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from bisect import bisect_left
from collections.abc import Sequence
from itertools import islice
from operator import lt
from typing import Any

from steptable.ingest.keycut import rank
from steptable.ingest.parsed import BOOKKEEPING_KEYS, counter, measured, rows_to_cols
from steptable.ingest.table import MAX_KEYS, ColumnTable


class RowPlacement(ColumnTable, ABC):
    """The placement rule (module docstring) over a :class:`ColumnTable`; its owner supplies the hooks."""

    resumes: list[int]
    step_key: str | None

    @abstractmethod
    def _note(self, arm: Any) -> None:
        """After a batch: the arm a row named and the newest row's wall time."""

    @abstractmethod
    def _note_replaced(self, i: int, step: int) -> None:
        """Before a resume to ``step`` drops rows ``i:``: what the store keeps of them."""

    @abstractmethod
    def _edited(self, step: int, keys: frozenset[str] | None) -> None:
        """Row ``step`` was changed in place (``keys`` set, None: inserted)."""

    def resume_at(self, step: int) -> None:
        """A resume to ``step`` that another file logs (a training resumed in a new logger directory,
        steptable.ingest.resumes): the rows from ``step`` on dropped as a resume in one file drops them (what the
        store keeps of them kept), ``step`` recorded in ``resumes``. The caller holds the lock and adds the rows."""
        i = bisect_left(self._steps, step)
        if i < len(self._steps):
            self._note_replaced(i, step)
            self._truncate(i)
        self.resumes.append(step)

    def _appendable(self, steps: Sequence[int]) -> bool:
        if self._steps and steps[0] <= self._steps[-1]:
            return False
        return all(map(lt, steps, islice(steps, 1, None)))

    def _add_rows(self, steps: Sequence[int], rows: list[dict[str, Any]], now: float) -> None:
        if len(self.keys) >= MAX_KEYS:  # full: cells of keys not stored are dropped before columns are built
            known = self._num.keys() | self._obj.keys() | self._gone.keys()
            rows = [r if r.keys() <= known else self._known_cells(r, known) for r in rows]
        pend_steps: list[int] = []
        pend_rows: list[dict[str, Any]] = []
        last = self._steps[-1] if self._steps else None
        arm = None
        for step, row in zip(steps, rows, strict=True):
            arm = row.get("arm", arm)
            if last is None or step > last:
                pend_steps.append(step)
                pend_rows.append(row)
                last = step
            elif pend_steps and step == pend_steps[-1]:
                held = pend_rows[-1]  # a cell another row of the step wrote stays
                pend_rows[-1] = {**held, **{k: v for k, v in row.items() if k not in held}}
            else:
                if pend_steps:
                    self._append(pend_steps, rows_to_cols(pend_rows), None, now)
                    pend_steps, pend_rows = [], []
                self._place(step, row, now)
                last = self._steps[-1]
        if pend_steps:
            self._append(pend_steps, rows_to_cols(pend_rows), None, now)
        self._note(arm)

    def _known_cells(self, row: dict[str, Any], known: Any) -> dict[str, Any]:
        out = {k: v for k, v in row.items() if k in known}
        self.dropped_keys += len(row) - len(out)
        if self.first_dropped is None:
            self.first_dropped = min((k for k in row if k not in known), key=rank)  # (not the row's order: random)
        return out

    def _place(self, step: int, row: dict[str, Any], now: float) -> None:
        n = len(self._steps)
        i = bisect_left(self._steps, step)
        if i < n and self._steps[i] == step:
            if i < n - 1 and self._shares_keys(i, row):
                self._note_replaced(i, step)
                self._truncate(i)
                self.resumes.append(step)
                self._append([step], rows_to_cols([row]), None, now)
            else:
                # a late row (later steps' rows came first) fills the row in; another line of the last step (an eval
                # line, one metric a line) adds its cells: neither overwrites a cell the step's first row wrote
                row = self._unheld(i, row) if i < n - 1 else {k: v for k, v in row.items() if not self._present(i, k)}
                if not row:
                    return
                self._merge(i, row, now)
                self._edited(step, frozenset(row))
            return
        self._insert_empty(i, step, now)  # out of order: an empty row in its place, then filled in
        self._merge(i, row, now)
        self._edited(step, None)

    def _unheld(self, i: int, row: dict[str, Any]) -> dict[str, Any]:
        """The cells of ``row`` that row ``i`` holds no measured value for. A row that comes after later steps' rows
        was logged by another activity at that step (tinker's asynchronous evaluation): a key both name (its own
        ``time/total``) means something else there, so the row's first value stays (a cell it logged as null is
        filled in: null is "not measured")."""
        return {k: v for k, v in row.items() if not self._measured(i, k)}

    def _shares_keys(self, i: int, row: dict[str, Any]) -> bool:
        """Does ``row`` measure again what row ``i`` holds (a resume), rather than add to it (a late evaluation)?
        A cell logged as null or NaN there (StepLogger writes a NaN as null: "not measured this step") is not a
        measurement the new row repeats."""
        metric = [k for k, v in row.items() if k != self.step_key and k not in BOOKKEEPING_KEYS and measured(v)]
        again = [k for k in metric if self._measured(i, k)]
        if all(counter(k) for k in again):  # (nothing, or only counters: a late evaluation, not a resume)
            return False
        shared = len(again)
        if shared * 2 >= len(metric):
            return True
        # or more than half of the old row's: a relaunch that logs more metrics than the crashed run (diagnostics
        # added) repeats most of the old row's, though not half of its own (counted until it is decided)
        held = 0
        for k in self.keys:
            if k != self.step_key and k not in BOOKKEEPING_KEYS and self._measured(i, k):
                held += 1
                if held >= shared * 2:
                    return False
        return True
