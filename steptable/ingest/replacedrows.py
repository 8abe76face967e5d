"""What the rows a resume drops said: the findings kept of them, and the budget of rows read for those findings.

A resume (steptable.ingest.placement) drops the rows from its step on. Before they go, :meth:`ReplacedRows.note`
hands them to the store's ``on_resume`` reader (the alert layer's: steptable.alerts.replaced), which returns what
it found there and how many rows it read; the first :data:`MAX_REPLACED_ALERTS` findings are kept, so a reader that
meets the file after a restart still learns why the run was restarted. The reader may read at most
:data:`MAX_REPLACED_READ` rows plus a fiftieth of the rows the file has held (kept and dropped), less what it read
before. One :class:`ReplacedRows` lives as long as the store's rows do (a reset starts a new one). The caller holds
the store's lock. Pure: no I/O of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from steptable.ingest.store import RunStore

#: alerts kept of the rows resumes replaced (the first ones: a run restarted over and over says why the first time)
MAX_REPLACED_ALERTS = 100
#: rows read for them, replays included, beyond a fiftieth of the rows read (about a second): a file of many
#: short runs or of several ranks' rows out of step resumes thousands of times
MAX_REPLACED_READ = 20_000

#: Reads the rows a resume is about to drop (``store``, the index of the first one, a budget of rows to read) and
#: returns (what it found there, rows it read). The alert layer provides one (steptable.alerts.replaced); the store
#: only keeps its findings, so a reader that meets the file after a restart still learns why the run was restarted.
ResumeReader: TypeAlias = "Callable[[RunStore, int, int], tuple[list[Any], int]]"


class ReplacedRows:
    """The findings kept of the rows resumes dropped (``found``: alerts, steptable.alerts.engine.Alert, the first
    ones) and the rows read and dropped so far."""

    def __init__(self) -> None:
        self.found: list[Any] = []
        self._read = 0  # rows read for them so far (replays included)
        self._dropped = 0  # rows resumes replaced so far

    def note(self, store: RunStore, i: int, rows: int, on_resume: ResumeReader | None) -> None:
        """Before a resume drops rows ``i:`` of ``store`` (which holds ``rows`` rows): what ``on_resume`` finds in
        them, within the budget (see the module)."""
        room = MAX_REPLACED_ALERTS - len(self.found)
        # what they may read: a fixed amount, and a fiftieth of the rows the file has held, so a file of 8 ranks'
        # rows out of step (a resume every 6 rows) or of 2,000 short runs stays within a second more (a row
        # replayed costs ~10x a row read); past it, the rows are read once for a NaN or inf (a run on preemptible
        # nodes restarted a hundred times still says the NaN loss it was last restarted over)
        left = MAX_REPLACED_READ + (rows + self._dropped) // 50 - self._read
        self._dropped += rows - i
        if room > 0 and on_resume is not None:
            found, read = on_resume(store, i, left)
            self._read += read
            self.found.extend(found[:room])
