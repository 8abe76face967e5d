"""What changed in a store since a reader last looked: :class:`EditLog`, which rows were changed in place, by batch
version, for viewers that show rows again; :func:`grow_state` and :func:`only_grew`, whether it only grew."""

from __future__ import annotations

from collections import deque
from typing import Any, TypeAlias

#: runs of numbers whose lowest step is kept, of the changes no longer listed (steptable.ingest.edits._LowestAfter)
LOST_KEPT = 256
#: (generation, rows, edits, resumes) of a run: what says whether it only grew since (:func:`only_grew`)
GrowState: TypeAlias = tuple[int, int, int, int]


def grow_state(st: Any) -> GrowState:
    """:data:`GrowState` of a RunStore (or of anything with its ``generation``, ``edit_count``, ``resumes``)."""
    return (st.generation, len(st), st.edit_count, len(st.resumes))


def only_grew(before: GrowState, now: GrowState) -> bool:
    """Only rows added since (no rewrite, edit or resume: the rows there before are as they were)?"""
    return before[0] == now[0] and before[2:] == now[2:] and before[1] <= now[1]


class EditLog:
    """The last ``maxlen`` in-place edits of a store: (the version of the batch that made it, the step, the keys it
    set or None for a row inserted before the last one). Older edits are dropped; :meth:`lost_since` then tells a
    viewer further behind than the log reaches from which step on to show every row again. Not locked: its owner's
    lock guards it."""

    def __init__(self, maxlen: int) -> None:
        self._edits: deque[tuple[int, int, frozenset[str] | None]] = deque(maxlen=maxlen)
        self._lost_version = -1  # the newest version whose edits are no longer all in the log
        self._lost_step: int | None = None  # the lowest step of the edits no longer in the log
        self.count = 0  # edits noted so far (a viewer that caches by row compares it)

    def note(self, version: int, step: int, keys: frozenset[str] | None) -> None:
        """An edit of ``step`` by the batch that ends with ``version``."""
        if len(self._edits) == self._edits.maxlen:
            v, old, _ = self._edits[0]
            self._lost_version = v
            self._lost_step = old if self._lost_step is None else min(self._lost_step, old)
        self._edits.append((version, step, keys))
        self.count += 1

    def since(self, version: int, until: int | None = None) -> list[tuple[int, frozenset[str] | None]]:
        """(step, keys) of each edit by batches after ``version`` (up to ``until``), oldest first."""
        return [(s, keys) for v, s, keys in self._edits if v > version and (until is None or v <= until)]

    def lost_since(self, version: int) -> int | None:
        """A step from which on every row shown at ``version`` may have changed; None when :meth:`since` lists every
        edit after ``version``."""
        return self._lost_step if version < self._lost_version else None


class _LowestAfter:
    """Of changes no longer listed, the lowest step among those numbered past any ``n``: the lowest step of each run
    of ``stride`` numbers, at most ``cap`` runs (past it the stride doubles, neighbours merged). A run that holds
    ``n`` is counted whole: the answer may be lower than the truth by the changes of one run (``len / cap``),
    never higher (rows served again, none missed)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.stride = 1
        self._low: dict[int, int] = {}  # number // stride -> the lowest step of those numbers

    def add(self, number: int, step: int) -> None:
        b = number // self.stride
        if step < self._low.get(b, step + 1):
            self._low[b] = step
        if len(self._low) > self.cap:
            self.stride *= 2
            merged: dict[int, int] = {}
            for b, low in self._low.items():
                if low < merged.get(b // 2, low + 1):
                    merged[b // 2] = low
            self._low = merged

    def after(self, n: int) -> int | None:
        """The lowest step of the changes numbered past ``n`` (None: none)."""
        first = (n + 1) // self.stride
        return min((low for b, low in self._low.items() if b >= first), default=None)


class EarlierChanges:
    """The changes to a run's rows before its last one, numbered in the order its file made them: cells merged into
    an earlier row, a row inserted before the last, a resume that replaced rows. A merge into the last row is not
    one (a line of the last step read with it or after it: the count would depend on how the file was cut into
    chunks); so the numbers are the same in every read of the same bytes, and a reader that served rows when
    ``count`` was ``n`` finds what changed among them since with :meth:`since`. The last ``maxlen`` are listed; of
    those before, the lowest step after any count is kept (:class:`_LowestAfter`). Not locked: its owner's lock
    guards it."""

    def __init__(self, maxlen: int) -> None:
        self._changes: deque[tuple[int, int, bool]] = deque(maxlen=maxlen)  # (number, step, a resume?)
        self._lost = _LowestAfter(LOST_KEPT)  # changes no longer listed
        self._lost_resumes = _LowestAfter(LOST_KEPT)  # ... of them the resumes
        self.count = 0

    def note(self, step: int, resumed: bool) -> None:
        """A change at ``step``: rows from it on replaced (``resumed``), else the row at it changed or inserted."""
        if len(self._changes) == self._changes.maxlen:
            number, old, res = self._changes[0]
            self._lost.add(number, old)
            if res:
                self._lost_resumes.add(number, old)
        self.count += 1
        self._changes.append((self.count, step, resumed))

    def since(self, n: int, upto: int) -> tuple[int | None, int | None, list[int]]:
        """Of the changes after the first ``n``, those at or before step ``upto``: (the lowest step a resume replaced
        rows from, the lowest step from which on every row may have changed (changes no longer listed), the steps of
        the other changes). ``n`` is at most :attr:`count` (a larger one is not a count of this run's)."""
        lost = self._lost.after(n) if n < self.count - len(self._changes) else None  # (else: all listed)
        lost = lost if lost is not None and lost <= upto else None
        resumed = self._lost_resumes.after(n) if lost is not None else None
        resumed = resumed if resumed is not None and resumed <= upto else None
        steps = []
        for k, step, res in self._changes:
            if k > n and step <= upto:
                if res:
                    resumed = step if resumed is None else min(resumed, step)
                else:
                    steps.append(step)
        return resumed, lost, steps
