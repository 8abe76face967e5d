"""StateSource: an HF run directory's ``trainer_state.json`` files feeding one RunStore. Pure; driven by the Follower.

The state shown is the furthest one (:func:`~steptable.ingest.readers.hf.trainer_states` ranks the checkpoints), re-read
whole when it changes; only the log_history entries it adds to the last read are added to the store. Every problem
goes to the store's ``bad`` list and to the ``report`` callable (:class:`~steptable.ingest.source.Source`).
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path

from steptable.ingest.files.discover import Candidate
from steptable.ingest.parse import BadLine
from steptable.ingest.parsed import Parsed
from steptable.ingest.readers.hf import MAX_STATE, newest_modified, parse_trainer_state, trainer_states
from steptable.ingest.replacedrows import ResumeReader
from steptable.ingest.rewrite import same_cells
from steptable.ingest.sidefiles import read_regular
from steptable.ingest.source import Report, Source


def _same_row(a: dict[str, object], b: dict[str, object]) -> bool:
    """Equal rows, a NaN equal to a NaN (a logged NaN loss is the same entry when the file is read again)."""
    return a.keys() == b.keys() and same_cells(a, b)


class StateSource(Source):
    """An HF ``trainer_state.json`` run: the newest file of the run directory, re-read whole when it changes."""

    def __init__(self, cand: Candidate, report: Report, on_resume: ResumeReader | None = None) -> None:
        super().__init__(cand, report, on_resume)
        self._sig: tuple[str, int, int, int] | None = None
        self._failed: tuple[str, int, int, int] | None = None
        self._reported: tuple[str, int, int, int] | None = None
        self._seen_bad: set[tuple[str, str]] = set()
        self._rows: list[dict[str, object]] = []  # the log_history rows in the store (to add only what is new)
        self._noted: tuple[Path, Path] | None = None  # (shown, modified last) when they differed, as last reported

    def poll(self) -> bool:
        states = trainer_states(self.cand.run_dir)
        path = states[0] if states else self.cand.path
        self._note_order(path, states)
        try:
            st = os.stat(path)
            self.missing = False
            sig = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
            if sig == self._sig:
                return False
            if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read, a device never end it
                return self._fail(sig, BadLine(str(path), 0, "not a regular file"))
            if st.st_size > MAX_STATE:
                return self._fail(sig, BadLine(str(path), 0, f"{st.st_size / 1e6:.0f} MB: too large to read whole "
                                                             f"(limit {MAX_STATE // 1_000_000} MB)"))
            with open(path, "rb") as f:
                data = f.read(MAX_STATE + 1)
        except FileNotFoundError:
            self.missing = True
            return False
        except OSError as e:
            return self._fail(("", 0, 0, 0), BadLine(str(path), 0, f"unreadable ({e.strerror or e})"))
        try:
            parsed = parse_trainer_state(data, str(path))
        except ValueError as e:
            if self._failed != sig:  # maybe half-written: report only when the same bytes fail twice
                self._failed = sig
                return False
            changed = self._fail(sig, BadLine(str(path), 0, str(e)))
            if self._sig is None:  # nothing shown yet (the Trainer died while saving): an older state that parses
                changed = self._older(str(path)) or changed
            return changed
        self._load(path, parsed)
        self._sig = sig
        return True

    def _note_order(self, shown: Path, states: list[Path]) -> None:
        """Say (once per pair) when the state shown is not the one modified last: a restart in the same directory, or
        a copy that reordered the files' times; either way the reader should know which history it sees."""
        newest = newest_modified(states) if len(states) > 1 else None
        pair = None if newest is None or newest == shown else (shown, newest)
        if pair is not None and pair != self._noted:
            self.report(BadLine(str(shown), 0, f"shown as the furthest state (highest global_step, longest history); "
                                               f"{newest} was modified later but holds less"))
        self._noted = pair

    def finish(self) -> bool:
        """One-shot reads poll once, so a state that failed to parse is reported now (a follower waits for the
        same bytes to fail twice: the Trainer may be writing it), and the newest older checkpoint that parses is
        shown instead."""
        if self._failed is None or self._failed == self._sig:
            return False
        failed = self._failed
        try:
            self._load(Path(failed[0]), parse_trainer_state(read_regular(failed[0], MAX_STATE), failed[0]))
            return True  # finished writing since the poll
        except (OSError, ValueError) as e:
            changed = self._fail(failed, BadLine(failed[0], 0, str(e)))
        if self._sig is not None:
            return changed
        return self._older(failed[0]) or changed

    def _older(self, failed: str) -> bool:
        """Show the newest older checkpoint's state that parses, in place of ``failed``; False if none does."""
        for path in trainer_states(self.cand.run_dir):
            if str(path) == failed:
                continue
            try:
                parsed = parse_trainer_state(read_regular(path, MAX_STATE), str(path))
            except (OSError, ValueError):
                continue
            self._load(path, parsed)
            self.report(BadLine(failed, 0, f"showing the older {path} instead"))
            return True
        return False

    def _load(self, path: Path, parsed: Parsed) -> None:
        # The whole file is parsed again on every change: a bad entry is reported the first time it is seen.
        parsed.bad = [b for b in parsed.bad if (b.path, b.reason) not in self._seen_bad]
        self._seen_bad.update((b.path, b.reason) for b in parsed.bad)
        rows = parsed.rows or []
        k = len(self._rows)
        grown = 0 < k <= len(rows) and all(map(_same_row, rows[:k], self._rows))
        with self.store.lock:
            self.store.path = path
            if grown:  # the history of the last read, and more (the next checkpoint): only the new entries are added
                self.store.add(
                    Parsed(steps=parsed.steps[k:], rows=rows[k:], bad=parsed.bad, meta=parsed.meta), math.nan
                )
            else:  # another history (a resume from an earlier checkpoint, a new run in the same directory)
                self.store.reset()
                self.store.add(parsed, math.nan)  # log_history entries carry no clock
        self._rows = [dict(r) for r in rows]  # copies: the store may keep the dicts it is given
        self._bad(parsed.bad)

    def _fail(self, sig: tuple[str, int, int, int], bad: BadLine) -> bool:
        if self._reported == sig:
            return False
        self._reported = sig
        self.store.add_bad([bad])
        self.report(bad)
        return True
