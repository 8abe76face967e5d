"""The problems a follower's passes report: a count, the latest ``MAX_ERRORS`` of them, each file's bad lines told
up to ``BAD_TOLD`` times.

The sources a follower makes hold :meth:`Reports.report`, which refers to this object and not to the follower: a
follower dropped is freed by reference counting, its stores (arrays of rows) with it, without waiting for a full pass
of the garbage collector.
"""

from __future__ import annotations

import threading
from collections import deque

from steptable.ingest.parse import BadLine

MAX_ERRORS = 10_000
#: bad lines told per file; then one line says the rest are counted, not told (a run that logged a fractional step
#: on every row made 10,000 lines of stderr for an agent to read). Each run's count stays in its store (summary: bad N).
BAD_TOLD = 20


class Reports:
    """Reported problems, as ``(path, text)``: the path as discovery found it, or ``steptable`` for the follower's
    own. Reporting and reading may happen on different threads (a ``scan`` while ``run`` follows)."""

    def __init__(self) -> None:
        self.count = 0
        self.kept: deque[tuple[str, str]] = deque(maxlen=MAX_ERRORS)
        self._lock = threading.Lock()  # the count and the list change together (``after``)
        self._bad_lines: dict[str, int] = {}  # file -> bad lines reported in it

    def report(self, bad: BadLine) -> None:
        """Count ``bad`` and keep its text (a file's lines past ``BAD_TOLD``: counted, and said once to be)."""
        text = str(bad)
        if bad.lineno:  # a line of a file (not the whole file, not a note): told up to BAD_TOLD times a file
            n = self._bad_lines[bad.path] = self._bad_lines.get(bad.path, 0) + 1
            if n > BAD_TOLD + 1:
                return
            if n > BAD_TOLD:
                text = f"{bad.path}: more than {BAD_TOLD} bad lines; the rest are counted, not told (summary: bad N)"
        with self._lock:
            self.count += 1
            self.kept.append((bad.path, text))

    def after(self, count: int) -> tuple[int, list[tuple[str, str]]]:
        """The count and the problems reported after the first ``count`` (of the latest kept), read together."""
        with self._lock:
            new = self.count - count
            return self.count, list(self.kept)[-new:] if new > 0 else []
