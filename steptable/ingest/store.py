"""RunStore: the table of one run (one metrics file) with its step index. Pure; the contract every viewer reads.

Storage is columnar (:mod:`steptable.ingest.table`); where a row of a step goes (appended, merged, a resume,
inserted) is :mod:`steptable.ingest.placement`'s rule.

Rows changed in place (a merge into a stored row, an insert before the last row) are logged as *edits*: a viewer
that has shown rows up to some ``version`` asks :meth:`RunStore.edits_since` which steps changed since then, so it
can show them again (appends it finds by ``len``, resumes by ``resumes``, rewrites by ``generation``).

Threads: one writer (the follower thread) mutates a store, any number of readers read it. Every mutation happens
under ``store.lock`` (an RLock) and is one parsed chunk (a *batch*); ``version`` increments after each batch,
``generation`` after each reset (file truncated, replaced, rewritten). Every read method takes the lock too, so a
single call is consistent; hold ``with store.lock:`` around several calls that must agree with each other (a batch
holds the lock for well under a millisecond per few hundred rows). ``steps``, ``wall_times`` and ``column()``
return copies (a memcpy for numeric columns), safe to keep across batches; ``steps_between`` and
``wall_times_between`` copy only a range of rows (a viewer of new rows must not copy the history on each one). Rows
are appended to the columns before the step index grows, so ``len(store)`` never counts a row whose cells are not
there yet.
"""

from __future__ import annotations

import math
import os
import threading
import time
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from steptable.ingest.edits import EarlierChanges, EditLog
from steptable.ingest.gaps import MAX_GAPS, Gap
from steptable.ingest.parse import BadLine
from steptable.ingest.parsed import Parsed, cols_to_rows
from steptable.ingest.placement import RowPlacement
from steptable.ingest.replacedrows import ReplacedRows, ResumeReader
from steptable.ingest.rowcut import RowCut
from steptable.ingest.table import MAX_KEYS

MAX_BAD_KEPT = 1000
#: the newest bad lines, kept apart (a viewer shows what went wrong last, not only first)
MAX_BAD_RECENT = 100
#: in-place edits remembered; a viewer further behind than this starts over from its first row
MAX_EDITS = 4096


def _too_many_keys(first: str | None) -> str:
    return (
        f"more than {MAX_KEYS} distinct keys: keys first seen after that are not stored (the first: {first!r:.60}); "
        "steptable shows per-step metrics, not per-sample data"
    )


class RunStore(RowPlacement):
    """Columnar per-run storage with a step index. See the module docstring for the thread rules,
    :mod:`steptable.ingest.placement` for where rows go."""

    def __init__(
        self, run: str, path: str | Path, kind: str = "jsonl", arm: str = "", on_resume: ResumeReader | None = None,
        keep: Callable[[str], bool] | None = None,
    ) -> None:
        """``keep``: the projection, a test of a key whose values to store (None: every key's; see
        steptable.ingest.table): a reader that prints some columns only."""
        self.run = run
        self.on_resume = on_resume
        self.keep = keep
        self.path = Path(path)
        self.kind = kind
        self.arm = arm
        self.lock = threading.RLock()
        self.version = 0
        self.generation = 0
        self.side_files: dict[str, list[Path]] = {}
        self.meta: dict[str, Any] = {}
        self.bad: list[BadLine] = []  # the first MAX_BAD_KEPT
        self.bad_recent: deque[BadLine] = deque(maxlen=MAX_BAD_RECENT)  # the newest, kept or not
        self._bad_count = 0
        self._edit_log = EditLog(MAX_EDITS)
        self.gaps: list[Gap] = []  # rows lost for good (kept across resets: they are the run's history)
        self._clear()

    def _clear(self) -> None:
        self._clear_table()
        self._told_dropped = False
        self.resumes: list[int] = []
        # (numbered as the file made them: a reader's cursor names those it served: steptable.cli.tailout)
        self.earlier_changes = EarlierChanges(MAX_EDITS)
        self._replaced = ReplacedRows()
        self.step_key: str | None = None
        self.last_update: float | None = None

    @property
    def has_clock(self) -> bool:
        """The rows carry their own wall-clock time (a ``ts``/``time`` key); else their times are arrival times."""
        return self._wall_key is not None

    def __repr__(self) -> str:
        return f"RunStore({self.run!r}, arm={self.arm!r}, kind={self.kind!r}, rows={len(self)}, keys={len(self.keys)})"

    # --- reading ------------------------------------------------------------------------------------------------

    @property
    def steps(self) -> array[int]:
        with self.lock:
            return self._steps[:]

    @property
    def wall_times(self) -> array[float]:
        """Per-row unix time: the row's own ``ts``/``timestamp``/... when it looks like one, else the time the row
        was read while following the file; NaN for a row without a clock that was already in the file when it was
        first read (its time is unknown: a one-shot read must not invent a rate from when it read each chunk)."""
        with self.lock:
            return self._walls[:]

    def steps_between(self, start: int = 0, stop: int | None = None) -> array[int]:
        """A copy of the steps of rows ``[start, stop)`` (slice rules): a viewer that follows new rows copies only
        those, not the whole history."""
        with self.lock:
            return self._steps[start:stop]

    def wall_times_between(self, start: int = 0, stop: int | None = None) -> array[float]:
        """A copy of ``wall_times`` of rows ``[start, stop)`` (slice rules: ``-51`` gives the last 51)."""
        with self.lock:
            return self._walls[start:stop]

    @property
    def bad_count(self) -> int:
        return self._bad_count

    def bad_lines(self) -> tuple[list[BadLine], list[BadLine], int]:
        """(the first bad lines kept, the newest ones, how many there were in all), read together."""
        with self.lock:
            return list(self.bad), list(self.bad_recent), self._bad_count

    def step_at(self, i: int) -> int:
        return self._steps[i]

    def is_numeric(self, key: str) -> bool:
        return key in self._num

    def is_integer(self, key: str) -> bool:
        """Numeric and every present value so far was an integer (``value``/``row`` then give ints)."""
        return key in self._ints

    def _positional(self, key: str) -> bool:
        """``key`` is ``step`` and the file logs no ``step`` of its own: ``step`` reads the step index, which is
        the file's own step key (``_step``, ``global_step``...) or, without one, the rows' positions. So a table of
        runs that name their steps differently shows each run's steps in its one step column, not nan."""
        return key == "step" and key not in self._num and key not in self._obj

    def column(self, key: str) -> Sequence[Any]:
        """A copy aligned with ``steps``: floats (NaN where absent) for numeric keys, else values or None.

        An unknown key gives a column of None (a run that lacks a key shows it as missing, not as an error)."""
        with self.lock:
            if self._positional(key):
                return array("d", self._steps)
            arr = self._num.get(key)
            if arr is not None:
                return arr[:]
            col = self._obj.get(key)
            return col[:] if col is not None else [None] * len(self._steps)

    def column_between(self, key: str, start: int = 0, stop: int | None = None) -> Sequence[Any]:
        """``column(key)`` of rows ``[start, stop)`` only (slice rules): a reader of new rows copies just those."""
        with self.lock:
            if self._positional(key):
                return array("d", self._steps[start:stop])
            arr = self._num.get(key)
            if arr is not None:
                return arr[start:stop]
            col = self._obj.get(key)
            return col[start:stop] if col is not None else [None] * len(range(len(self._steps))[start:stop])

    def numbers(self, key: str, view: bool = False) -> array[float] | None:
        """A copy of ``key``'s cells as doubles (a logged null as NaN) when every row holds a number or a null of it
        (no absent cell): what ``cells`` holds then, without a float object a cell; else None. ``view``: the store's
        own array, not a copy (a reader of a store no rows are added to any more; it must not change it)."""
        with self.lock:
            arr = self._num.get(key)
            if arr is None or key in self._pres or self._positional(key):
                return None
            return arr if view else arr[:]

    def cells(self, key: str) -> list[Any]:
        """Like ``column`` but None where the row lacks the key (a NaN left is a non-finite value the run logged)."""
        return self.cells_between(key)

    def cells_between(self, key: str, start: int = 0, stop: int | None = None) -> list[Any]:
        """``cells(key)`` of rows ``[start, stop)`` only (slice rules)."""
        with self.lock:
            if self._positional(key):
                return list(self._steps[start:stop])
            num = self._num.get(key)
            obj = self._obj.get(key)
            col: list[Any] = list(num[start:stop] if num is not None else obj[start:stop] if obj is not None
                                  else [None] * len(range(len(self._steps))[start:stop]))
            pres = self._pres.get(key)
            if pres is not None:
                col = [v if p else None for v, p in zip(col, pres[start:stop], strict=True)]
            return col

    def first_cell(self, key: str) -> int | None:
        """The first row holding a value of ``key`` (not absent, not null); None when none does (a key that rows a
        resume dropped left behind). Absent stretches are skipped in C."""
        with self.lock:
            n = len(self._steps)
            if self._positional(key):
                return 0 if n else None
            pres = self._pres.get(key)
            i = 0
            while i < n:
                if pres is not None and (i := pres.find(1, i)) < 0:
                    return None
                if self._cell(i, key) is not None:
                    return i
                i += 1
            return None

    def value(self, i: int, key: str) -> Any:
        """One cell: None when absent, else the stored value (int for integer columns, NaN floats as such)."""
        with self.lock:
            return self._steps[i] if self._positional(key) else self._cell(i, key)

    def row(self, i: int) -> dict[str, Any]:
        """The keys present in row ``i`` with their values (as ``value`` gives them); ``step`` too when the file
        has no step key (its position)."""
        with self.lock:
            return self._numbered(i) if self._positional("step") else self._row(i)

    def rows(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        with self.lock:
            get = self._numbered if self._positional("step") else self._row
            return [get(i) for i in range(*slice(start, stop).indices(len(self._steps)))]

    def cut(self, keys: Collection[str] | None, start: int = 0, stop: int | None = None) -> RowCut:
        """Rows ``[start, stop)`` (slice rules) with only ``keys`` (None: all), as ``rows`` gives them, copied now
        and built into dicts later, a batch at a time (:class:`~steptable.ingest.rowcut.RowCut`)."""
        with self.lock:
            return RowCut(self, keys, start, len(self._steps) if stop is None else stop, self._positional("step"))

    def _numbered(self, i: int) -> dict[str, Any]:
        return {"step": self._steps[i], **self._row(i)}

    def stored_rows(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        """Like ``rows`` without the ``step`` that ``row`` adds for a file with another step key: what to copy into
        another store (added there, that ``step`` would become a real key, stored only in the rows copied)."""
        with self.lock:
            return [self._row(i) for i in range(*slice(start, stop).indices(len(self._steps)))]

    def index_of_step(self, step: int) -> int:
        """Index of the first row whose step is >= ``step`` (``len(self)`` when none): bisect on the step index."""
        with self.lock:
            return bisect_left(self._steps, step)

    # --- writing (the follower thread) --------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every row (the file was truncated or replaced); bad lines of the old content are kept."""
        with self.lock:
            self._clear()
            self.generation += 1
            self.version += 1

    def withdraw(self, n: int) -> None:
        """Drop the rows after the first ``n`` (a row shown before its line was complete, about to be read again
        whole): one batch, logged as an edit of the first dropped step, so a viewer draws that step again."""
        with self.lock:
            if n >= len(self._steps):
                return
            step = self._steps[n]
            self._truncate(n)
            self._edited(step, None)
            self.version += 1

    def succeed(self, generation: int, version: int, reset: bool = True) -> None:
        """This store takes the place of an earlier one of the same run (of ``generation``, at ``version``): its
        ``version`` goes past that one's. Where its rows are another content (``reset``: a file deleted and written
        again) so does its ``generation``: a reader that knows the run by its id starts it over. Otherwise it holds
        that one's rows as they were up to the steps of the resumes it holds past that one's (a training found in
        pieces as it goes on: steptable.ingest.resumes), and a reader sees those resumes."""
        with self.lock:
            self.generation = generation + (self.generation + 1 if reset else 0)
            self.version += version + 1

    def add_gap(self, gap: Gap) -> None:
        """Rows of this run lost for good (steptable.ingest.gaps); the first ``MAX_GAPS`` are kept."""
        with self.lock:
            if len(self.gaps) < MAX_GAPS:
                self.gaps.append(gap)
            self.version += 1

    def add_bad(self, lines: Iterable[BadLine]) -> None:
        with self.lock:
            for b in lines:
                self._bad_count += 1
                if len(self.bad) < MAX_BAD_KEPT:
                    self.bad.append(b)
                self.bad_recent.append(b)
            self.version += 1

    def add(self, parsed: Parsed, now: float | None = None) -> None:
        """Apply one parsed chunk as one batch. ``now``: the wall time of its rows that carry no clock (default: the
        current time; NaN when unknown)."""
        now = time.time() if now is None else now
        with self.lock:
            if parsed.bad:
                self.add_bad(parsed.bad)
            if parsed.step_key is not None:
                self.step_key = parsed.step_key
            if parsed.meta:
                self.meta.update(parsed.meta)
            steps = parsed.steps
            if steps:
                if parsed.cols is not None and self._appendable(steps):
                    self._append(steps, parsed.cols, parsed.int_keys, now)
                    arms = parsed.cols.get("arm")
                    self._note(next((a for a in reversed(arms) if type(a) is str), None) if arms else None)
                else:
                    rows = parsed.rows if parsed.rows is not None else cols_to_rows(parsed.cols or {}, len(steps))
                    self._add_rows(steps, rows, now)
            if self.dropped_keys and not self._told_dropped:
                self._told_dropped = True
                told = BadLine(str(self.path), 0, _too_many_keys(self.first_dropped))
                self.add_bad([told])
                parsed.bad.append(told)  # the source reports the chunk's bad lines after this
            self.version += 1

    def _note(self, arm: Any) -> None:
        """After a batch: the arm a row named (it wins over the directory's) and the newest row's wall time."""
        if type(arm) is str and arm:
            self.arm = arm
        if self._wall_key is not None and self._walls and math.isfinite(self._walls[-1]):
            self.last_update = self._walls[-1]  # the newest row's own clock
            return
        try:  # rows without a clock of their own: the file's last write is the best age
            self.last_update = os.stat(self.path).st_mtime
            return
        except OSError:
            pass
        known = next((t for t in islice(reversed(self._walls), 10_000) if math.isfinite(t)), None)
        if known is not None:
            self.last_update = known

    @property
    def replaced(self) -> list[Any]:
        """Alerts (steptable.alerts.engine.Alert) of the rows resumes replaced, the first ones
        (steptable.ingest.replacedrows)."""
        return self._replaced.found

    def _note_replaced(self, i: int, step: int) -> None:
        """Before a resume to ``step`` drops rows ``i:``: what ``on_resume`` finds in them (their alerts), for a
        reader that meets the file after the restart; the resume in :attr:`earlier_changes`."""
        self.earlier_changes.note(step, resumed=True)
        self._replaced.note(self, i, len(self._steps), self.on_resume)

    def _edited(self, step: int, keys: frozenset[str] | None) -> None:
        self._edit_log.note(self.version + 1, step, keys)  # the version this batch ends with
        if self._steps and step < self._steps[-1]:  # (not the last row: steptable.ingest.edits.EarlierChanges)
            self.earlier_changes.note(step, resumed=False)

    @property
    def edit_count(self) -> int:
        """Rows changed in place so far (a viewer that caches by row compares it)."""
        return self._edit_log.count

    def edits_since(self, version: int, until: int | None = None) -> list[tuple[int, frozenset[str] | None]]:
        """(step, keys set) of each row changed in place by batches after ``version`` (up to ``until``), oldest
        first; keys are None for a row inserted before the last one. See :meth:`lost_since` for edits too old to
        be listed."""
        with self.lock:
            return self._edit_log.since(version, until)

    def rows_edited(
        self, version: int, upto: int, until: int | None = None
    ) -> dict[int, tuple[dict[str, Any], frozenset[str] | None]]:
        """The rows up to step ``upto`` (what a viewer has shown) changed in place after ``version``: step -> (the
        row as it is now, the keys set since; None when the whole row is new). Rows dropped since are left out."""
        out: dict[int, tuple[dict[str, Any], frozenset[str] | None]] = {}
        with self.lock:
            for step, keys in self.edits_since(version, until):
                i = bisect_left(self._steps, step)
                if step > upto or i >= len(self._steps) or self._steps[i] != step:
                    continue
                had = out[step][1] if step in out else frozenset()
                out[step] = (self.row(i), None if had is None or keys is None else had | keys)
        return out

    def lost_since(self, version: int) -> int | None:
        """For a viewer further behind than the edit log reaches: a step from which on every row it has shown may
        have changed (show them again); None when :meth:`edits_since` lists every edit after ``version``."""
        with self.lock:
            return self._edit_log.lost_since(version)
