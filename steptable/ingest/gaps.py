"""Gaps: rows a follower can tell were lost for good, and the evidence that tells them.

A followed file that goes before its end was read (deleted, replaced by another file, truncated) with no file in its
directory holding the rest (a renamed file, logrotate's copy) leaves an unknown: were rows written after the last byte
read? The rows that come next answer it. When the first row read after the break is past the step that follows the
last row read before it (by the run's step stride, the last two steps' difference), the steps in between are a *gap*:
written, never read, held by no file. A first row at or before that step is a relaunch or a resume (the run is read
again; no gap is claimed). A break before any row was read says nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from steptable.table.formatting import sanitize

if TYPE_CHECKING:
    from steptable.ingest.store import RunStore

#: gaps a store keeps (later ones are still reported on the follower's error list)
MAX_GAPS = 1000


@dataclass(frozen=True, slots=True)
class Gap:
    """Steps after ``after_step`` and before ``before_step`` were lost: ``file`` went (``reason``: deleted,
    replaced, truncated) with its bytes after ``after_byte`` unread and no file in its directory holding them."""

    file: str
    after_byte: int
    reason: str
    after_step: int
    before_step: int
    stride: int = 1

    def steps(self) -> str:
        """The steps lost, as words: ``steps 10-19`` (stride 1), else the open interval between the two known."""
        if self.stride == 1:
            first, last = self.after_step + 1, self.before_step - 1
            return f"step {first}" if first == last else f"steps {first}-{last}"
        return f"the steps after {self.after_step} and before {self.before_step}"

    def message(self) -> str:
        """One line, sanitized (the file name comes from the filesystem): what was lost and where."""
        return (f"rows lost: {self.steps()} ({sanitize(self.file)} was {self.reason} before its bytes after byte "
                f"{self.after_byte} were read, no file holds them, and the rows go on at step {self.before_step})")


@dataclass(slots=True)
class _Pending:
    store: RunStore
    after_step: int
    stride: int
    count: int  # rows the store held at the break
    generation: int
    file: str
    after_byte: int
    reason: str


class GapWatch:
    """The breaks of one followed file waiting for the rows that tell whether they were gaps."""

    def __init__(self) -> None:
        self._pending: list[_Pending] = []

    def broken(self, stores: list[RunStore], file: str, after_byte: int, reason: str) -> None:
        """``file`` went with its bytes after ``after_byte`` unread: each store with rows waits for its next row."""
        self._pending = [p for p in self._pending if all(p.store is not s for s in stores)]
        for store in stores:
            with store.lock:
                n = len(store)
                if not n:
                    continue
                last = store.step_at(n - 1)
                stride = last - store.step_at(n - 2) if n > 1 else 1
                self._pending.append(_Pending(store, last, max(stride, 1), n, store.generation, file, after_byte,
                                              reason))

    def judge(self) -> list[tuple[RunStore, Gap]]:
        """The breaks whose stores have read a row since, as gaps where that row is past the next step; the rest
        keep waiting."""
        found: list[tuple[RunStore, Gap]] = []
        waiting: list[_Pending] = []
        for p in self._pending:
            with p.store.lock:
                at = 0 if p.store.generation != p.generation else p.count  # (after a reset the rows start again)
                if len(p.store) <= at:
                    waiting.append(p)
                    continue
                first = p.store.step_at(at)
            if first > p.after_step + p.stride:
                found.append((p.store, Gap(p.file, p.after_byte, p.reason, p.after_step, first, p.stride)))
        self._pending = waiting
        return found
