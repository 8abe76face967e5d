"""A CSV log rewritten from the top, read aside until it settles. Pure; driven by TailSource.

Stable-Baselines3 and Lightning's CSVLogger write every row again when a key appears: Lightning truncates the file
and writes it whole, SB3 writes over it in place, the longer lines running over the old ones. A read in the middle
of that sees a file that is only part of the run (or part old bytes, part new ones), though once written it holds
every row shown and more. So the new content is read into a store of its own (:class:`Rewrite`) while viewers keep
the rows shown, and is applied once it settles (:meth:`Rewrite.verdict`):

- its rows start with the rows shown (the same steps and cells, new keys aside) and are as many or more: only what
  it adds is applied (cells of new keys merged, rows after appended), so viewers see a column arrive, not a new file;
- it differs from them: it is another file, and replaces them; where the file was written again in place (SB3), only
  at the end of a poll after the one it began in, for read midway such a file is part new lines, part old ones (its
  writer then changes bytes already read, which makes the tail start a new Rewrite at the next poll);
- it agrees but is shorter, and the file has not grown for :data:`QUIET_S`: the file was written shorter, and
  replaces them;
- the read ends (a one-shot read): it is applied as it is.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Any

from steptable.ingest.parse import BadLine
from steptable.ingest.parsed import Parsed
from steptable.ingest.store import RunStore

#: seconds a rewritten file that agrees with the rows shown, but is shorter, must stay unchanged before it replaces
#: them (a rewrite being written grows well within this)
QUIET_S = 1.0


class Verdict(Enum):
    MERGE = "merge"  # the new content holds the rows shown: what it adds is applied
    REPLACE = "replace"  # the new content is another file: it replaces the rows shown


def same_cells(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Every cell of ``old`` is in ``new`` with the same value (NaN equal to NaN); ``new`` may hold more keys."""
    for key, x in old.items():
        y = new.get(key, _ABSENT)
        if not (x == y or (x != x and y != y)):
            return False
    return True


_ABSENT = object()


class Rewrite:
    """The content of a CSV since it was rewritten from the top (``store``), beside the rows viewers see (``shown``).

    The caller adds the new content's rows to ``store`` and its bad lines to ``bad`` (said only once it settles: a
    line cut where new bytes meet old ones is no bad line of the file), asks :meth:`verdict` at the end of each poll,
    and :meth:`apply`\\ s the answer."""

    def __init__(self, shown: RunStore, in_place: bool, offset: int, now: float) -> None:
        self.shown = shown
        self.in_place = in_place  # written over itself (FileTail's Reset.in_place), not truncated nor replaced
        self.store = RunStore(shown.run, shown.path, shown.kind, shown.arm, shown.on_resume, shown.keep)
        self.bad: list[BadLine] = []
        self._checked = 0  # leading rows of ``store`` found to be the rows shown
        self._fresh = True  # no poll has ended since it began
        self._grown = (offset, now)  # the tail's offset, and when it was first seen there

    def verdict(self, offset: int, now: float, final: bool = False) -> Verdict | None:
        """What to do with the new content after a poll that left the tail at ``offset`` (``final``: the read ends,
        nothing more will come); None to wait for more of it (see the module docstring)."""
        agrees, covers = self._agrees()
        fresh, self._fresh = self._fresh, False
        if agrees and covers:
            return Verdict.MERGE
        if final or (not agrees and not (fresh and self.in_place)):
            return Verdict.REPLACE
        if not agrees:
            return None
        if offset != self._grown[0]:
            self._grown = (offset, now)
            return None
        return Verdict.REPLACE if now - self._grown[1] >= QUIET_S else None

    def _agrees(self) -> tuple[bool, bool]:
        """(whether the new rows read so far are the first rows shown, whether they are as many), checking only the
        rows not checked before (a poll costs the rows it read, not the run)."""
        old, new = self.shown, self.store
        with old.lock:
            n = len(old)
            upto = min(n, len(new))
            if upto > self._checked:
                start = self._checked
                if list(new.steps[start:upto]) != list(old.steps[start:upto]) or not all(
                        map(same_cells, old.stored_rows(start, upto), new.stored_rows(start, upto))):
                    return False, False
                self._checked = upto
            return True, len(new) >= n

    def apply(self, verdict: Verdict) -> None:
        """Apply ``verdict`` to the rows shown. Rows are copied as stored (``stored_rows``), never with the ``step``
        a store shows for a file whose step key is another; arrival times are unknown (NaN), as for any re-read."""
        old, new = self.shown, self.store
        with old.lock:
            n = len(old)
            got = new.stored_rows()
            steps = list(new.steps)
            if verdict is Verdict.REPLACE:
                old.reset()
                old.add(Parsed(steps=steps, rows=got, bad=list(new.bad), step_key=new.step_key), math.nan)
                return
            keys = [k for k in new.keys if k not in old.keys]
            for i, row in enumerate(got[:n]):
                cells = {k: row[k] for k in keys if k in row}
                if cells:
                    old.add(Parsed(steps=[steps[i]], rows=[cells], step_key=new.step_key), math.nan)
            if len(new) > n:
                old.add(Parsed(steps=steps[n:], rows=got[n:], step_key=new.step_key), math.nan)
        old.add_bad(new.bad)
