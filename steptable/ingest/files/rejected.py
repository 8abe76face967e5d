"""Files judged not a run, and when to judge one again: the follower's memory of what it turned down.

A file discovery offered and the follower turned down (a JSONL whose first line is no metrics row, a console log
that printed no metrics line yet) is remembered by path with its inode and its size then. It is not judged again
while it is the same file and has not grown (:meth:`Rejected.settled`, asked by discovery before it sniffs a file).
A console log that grew is searched from where the last search stopped (the start of its last, unfinished line) to
its end: a metrics line found there makes it a run after all, read from its start; a JSONL that only grew stays
turned down (its first line is the same). A file replaced (another inode) or cut shorter is judged again. A path that
a whole discovery pass did not meet is forgotten after it (:meth:`Rejected.end_pass`). Not thread-safe: the
follower's pass lock covers it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from steptable.ingest.readers.console import metrics_between


class Rejected:
    """path -> (inode, size when judged, where a search of its growth starts, whether it is a console log, whose
    growth is searched)."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[int, int, int, bool]] = {}
        self._walked: set[Path] = set()  # turned-down paths a discovery pass met (the rest are forgotten after it)

    def __contains__(self, path: object) -> bool:
        return path in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def __iter__(self) -> Iterator[Path]:
        return iter(self._seen)

    def start_pass(self) -> None:
        """A discovery pass begins: the paths it meets are counted from here."""
        self._walked = set()

    def end_pass(self) -> None:
        """A whole discovery pass ended (no directory failed to list): the paths it did not meet are forgotten."""
        self._seen = {p: v for p, v in self._seen.items() if p in self._walked}

    def settled(self, path: Path) -> bool:
        """Judged not a run before and nothing to judge again: the same file, not grown (a JSONL whose first line
        was not metrics: grown or not)."""
        seen = self._seen.get(path)
        if seen is None:
            return False
        self._walked.add(path)
        try:
            st = os.stat(path)
        except OSError:
            return False
        ino, size, _, console = seen
        return st.st_ino == ino and (st.st_size == size or (st.st_size > size and not console))

    def still(self, path: Path) -> bool:
        """Is ``path``, offered again, still not a run? False for one never turned down, one replaced or cut
        shorter (judge it again) and a console log whose growth holds a metrics line (forgotten: a run after all,
        read from its start); True for one that cannot be looked at."""
        seen = self._seen.get(path)
        if seen is None:
            return False
        try:
            st = path.stat()
        except OSError:
            return True
        ino, size, start, console = seen
        if st.st_ino == ino and st.st_size >= size:  # same file, only grown: its first line is still the same
            if not console:
                return True
            found, start = metrics_between(path, start, st.st_size)
            if not found:
                self._seen[path] = (ino, st.st_size, start, console)
                return True
            # a console log that printed no metrics line (NCCL debug output, a model loading) and now prints
            # one: a run after all, read from the start
            del self._seen[path]
        return False

    def add(self, path: Path, searched: int | None = None, read: int | None = None) -> None:
        """Remember ``path`` as not a run; ``searched``: a console log read up to there (its growth is searched);
        ``read``: the bytes that read took, where the file may have grown since (what it grew by is judged)."""
        try:
            st = path.stat()
        except OSError:
            return
        console = searched is not None
        self._walked.add(path)
        size = st.st_size if read is None else min(read, st.st_size)
        self._seen[path] = (st.st_ino, size, min(searched or 0, size), console)
