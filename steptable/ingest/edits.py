"""What changed in a store since a reader last looked: :class:`EditLog`, which rows were changed in place, by batch
version, for viewers that show rows again; :func:`grow_state` and :func:`only_grew`, whether it only grew."""

from __future__ import annotations

from collections import deque
from typing import Any, TypeAlias

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
