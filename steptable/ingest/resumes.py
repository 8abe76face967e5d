"""Runs that are one training resumed in a new logger directory. Pure.

Lightning's CSVLogger and TensorBoardLogger write each process to a new ``version_N`` directory, transformers'
TensorBoard callback to a new ``runs/<date>_<host>``: a fit resumed from its checkpoint in a new process (a job
requeued after a preemption, ``Trainer.fit(ckpt_path=...)``) is a second file whose steps go on from the
checkpoint's. Taken apart they are two runs of one arm that never overlap: two seeds to ``compare`` (which then finds
no common range), two tables in the watch. One training's pieces are found from what they hold, as the W&B pieces
are from their names (steptable.ingest.files.wandbpieces):

- they are files of one kind (CSV or TensorBoard) and one arm, in sibling directories (``armA/version_0``,
  ``armA/version_1``), in the order they were begun (a TensorBoard file's name holds the time it was made; other
  directories are taken by name, numbers by value);
- a piece's first step is that of its first row of metrics (Lightning's TensorBoardLogger logs a placeholder
  ``hp_metric`` at step 0 in every version); it continues the training before it when that is later than the
  training's first: a new seed, or a run started again from scratch, starts where the first did and stays a run of
  its own;
- exactly one training before it may be the one it continues: with two trainings begun in the same directory and
  both resumed, which piece goes on which is not known, and each stays a run of its own;
- it logs what the training logs (a metric of both: not a step counter nor a clock) and more than one row: a
  checkpoint evaluated in a process of its own logs its scores once and must not take the place of the training's
  rows from there on;
- where its steps and the training's overlap, it logs the same steps (a resumed process runs the same code from
  the checkpoint: a fit with another batch size or logging interval that merely starts logging later does not), and
  a counter both log (the epoch) does not go back at its first step (a fresh fit counts from 0 again).

One training's pieces are read as one run (steptable.ingest.joined): each piece's rows from its first step on replace
those of the pieces before it (a process resumed from a checkpoint older than its predecessor's last row logs those
steps again) as a resume within one file replaces them (what the alerts found in them kept), and each step a piece
began at is a resume of the run.
"""

from __future__ import annotations

import math
import re
import time
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steptable.ingest.parsed import BOOKKEEPING_KEYS, Parsed, counter
from steptable.ingest.rowcut import RowCut
from steptable.ingest.store import RunStore

#: kinds of file a logger writes to a new directory for each process
KINDS = frozenset({"csv", "tensorboard"})
#: keys that are no metric of a training: Lightning's TensorBoardLogger logs ``hp_metric`` -1 at step 0 in every
#: version (log_hyperparams), as a placeholder for the hyper-parameters view
PLACEHOLDERS = frozenset({"hp_metric"})
#: rows of a piece looked through for its first row of metrics
HEAD_ROWS = 16
#: seconds a piece that would go on a training but for holding one row of metrics is held back (not shown as a run
#: of its own) after its last write: a resumed process logs its second row within a logging interval
HOLD_S = 600.0
_NUMBER = re.compile(r"(\d+)")
_TB_TIME = re.compile(r"^events\.out\.tfevents\.(\d+)")


def goes_by(store: RunStore, name: str) -> bool:
    """Is ``name`` one ``store``'s run goes by (``--run``): its id, its arm, or the id of a piece it was read from (the
    name a reader knew it by before the piece it began in was joined)?"""
    return name in (store.run, store.arm) or name in store.meta.get("piece_runs", ())


def piece_dir(store: RunStore) -> Path:
    """The directory a run's logger made for its process: its file's (a TensorBoard run's is its first event
    file)."""
    return store.path.parent


def _metric(key: str) -> bool:
    """A key whose values are measured (not the step, an epoch or another counter, a clock, a placeholder)."""
    return key not in BOOKKEEPING_KEYS and key not in PLACEHOLDERS and not counter(key)


def _begun(store: RunStore) -> tuple[int, tuple[tuple[int, int | str], ...]]:
    """The order pieces were begun in: a TensorBoard file's time (its name's), then its directory's name with its
    numbers by value (``version_10`` after ``version_9``)."""
    m = _TB_TIME.match(store.path.name) if store.kind == "tensorboard" else None
    name = piece_dir(store).name
    return (int(m.group(1)) if m else 0,
            tuple((0, int(p)) if p.isdigit() else (1, p) for p in _NUMBER.split(name) if p))


@dataclass
class _Piece:
    """What the rule reads of one run: its first row of metrics (index and step), its steps, its metrics."""

    store: RunStore
    start: int
    first: int
    steps: array[int]
    logs: set[str]
    unknown: tuple[int, int] | None = None  # steps (exclusive) it may lack (a sweep index's run: index_trainings)

    def steps_in(self, lo: int, hi: int) -> array[int]:
        """Its steps from its first row of metrics on, within ``[lo, hi]``."""
        steps = self.steps
        return steps[max(self.start, bisect_left(steps, lo)):bisect_right(steps, hi)]


def _known(steps: Sequence[int], gaps: Sequence[tuple[int, int]]) -> list[int]:
    """``steps`` but those within a gap (exclusive) of steps a run may lack."""
    return [s for s in steps if not any(lo < s < hi for lo, hi in gaps)]


def _piece(st: RunStore) -> _Piece | None:
    """``st`` as a piece (its lock held); None when its first rows hold no metric."""
    for i in range(min(len(st), HEAD_ROWS)):
        if any(map(_metric, st.row(i))):
            return _Piece(st, i, st.step_at(i), st.steps, {k for k in st.keys if _metric(k)}, st.meta.get("unknown"))
    return None


class _Begun:
    """A training found so far: its pieces, each shown up to the next one's first step."""

    def __init__(self, first: _Piece) -> None:
        self.pieces = [first]
        self.logs = set(first.logs)

    @property
    def first(self) -> int:
        return self.pieces[0].first

    def _shown(self) -> list[tuple[_Piece, int]]:
        """Each piece with the step its rows are shown up to (the next piece's first, past its last)."""
        return [(p, nxt.first - 1 if nxt is not None else p.steps[-1])
                for p, nxt in zip(self.pieces, [*self.pieces[1:], None], strict=True)]

    def steps_in(self, lo: int, hi: int) -> list[int]:
        """The training's steps within ``[lo, hi]``, as its pieces show them."""
        return [s for p, top in self._shown() for s in p.steps_in(lo, min(hi, top))]

    def value_before(self, step: int, key: str) -> Any:
        """``key``'s value in the last of the training's last ``HEAD_ROWS`` rows before ``step`` that holds it (None:
        none does)."""
        looked = 0
        for p, top in reversed(self._shown()):
            i = bisect_left(p.steps, min(step, top + 1)) - 1
            while i >= p.start and looked < HEAD_ROWS:
                if (v := p.store.value(i, key)) is not None:
                    return v
                i, looked = i - 1, looked + 1
        return None

    def goes_on(self, p: _Piece, one_row: bool = False) -> bool:
        """Does ``p`` continue this training (see the module docstring)? ``one_row``: would it, were it not for
        holding one row of metrics only?"""
        if len(p.steps) - p.start < (1 if one_row else 2) or not self.logs & p.logs:
            return False
        last = self.pieces[-1].steps[-1]
        hi = min(last, p.steps[-1])
        gaps = [q.unknown for q in (*self.pieces, p) if q.unknown is not None]
        if p.first <= hi and _known(self.steps_in(p.first, hi), gaps) != _known(p.steps_in(p.first, hi), gaps):
            return False
        for key in p.store.keys:
            if counter(key) and key != p.store.step_key and key != "step":
                now, before = p.store.value(p.start, key), self.value_before(p.first, key)
                if isinstance(now, (int, float)) and isinstance(before, (int, float)) and now < before:
                    return False
        return True


def trainings(stores: Mapping[str, RunStore], held: list[str] | None = None,
              now: float | None = None) -> list[list[tuple[str, int]]]:
    """Each training found in more than one piece: its pieces in order, each as (run id, index of its first row of
    metrics); runs that are one piece are left out (see the module docstring). ``held``: where given, gets the ids of
    the runs that would go on a training but for holding one row of metrics, written within ``HOLD_S`` of ``now``
    (a resumed process's first row: a follower that showed it as a run of its own would take it back at its second
    row), left out of the trainings too."""
    groups: dict[tuple[str, str, Path, str | None], list[RunStore]] = {}
    for st in stores.values():
        with st.lock:
            if st.kind not in KINDS or not len(st):
                continue
            groups.setdefault((st.kind, st.arm, piece_dir(st).parent, st.step_key), []).append(st)
    found: list[list[tuple[str, int]]] = []
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda st: (_begun(st), st.run))
        begun: list[_Begun] = []
        for st in group:
            with st.lock:
                p = _piece(st)
                if p is None:
                    continue
                before = [t for t in begun if t.first < p.first]
                if len(before) == 1 and before[0].goes_on(p):
                    before[0].pieces.append(p)
                    before[0].logs |= p.logs
                    continue
                if held is not None and len(before) == 1 and before[0].goes_on(p, one_row=True) and (
                        (now if now is not None else time.time()) - (st.last_update or 0.0) < HOLD_S):
                    held.append(st.run)
                    continue
                begun.append(_Begun(p))
        found += [[(p.store.run, p.start) for p in t.pieces] for t in begun if len(t.pieces) > 1]
    return found


#: newest rows of a run a sweep's index keeps for :func:`index_trainings` (it keeps no tail of its own)
INDEX_ROWS = 64


def newest(store: RunStore) -> RunStore:
    """What a sweep's index keeps of a run for :func:`index_trainings`: ``store`` itself where it holds few rows,
    else its newest ``INDEX_ROWS`` rows, after its first ``HEAD_ROWS`` where it holds its file from the start (a run
    the index reads whole: TensorBoard's); ``meta["preview_offset"]`` 0 only where the first rows are its file's."""
    n = len(store)
    if n <= INDEX_ROWS + HEAD_ROWS:
        return store
    whole = store.meta.get("preview_offset") == 0
    out = RunStore(store.run, store.path, store.kind, store.arm)
    with store.lock:
        if whole:
            out.add(rows_of(store, 0, HEAD_ROWS), math.nan)
            out.meta["unknown"] = (store.step_at(HEAD_ROWS - 1), store.step_at(n - INDEX_ROWS))
        out.add(rows_of(store, n - INDEX_ROWS), math.nan)
    out.meta["preview_offset"] = 0 if whole else 1
    return out


def index_trainings(tails: Mapping[str, RunStore], head: Callable[[RunStore], RunStore | None],
                    kept: dict[str, tuple[RunStore, RunStore, RunStore]] | None = None) -> list[list[str]]:
    """:func:`trainings` of runs known by their first and newest rows (``tails``, each :func:`newest`: a sweep's
    index reads no more), as run ids. ``head(tail)`` gives the store of a run's first rows (None: it cannot be read),
    asked for only where a run shares its directory with another of its kind and arm and its first rows are not
    kept. The steps between a run's first and newest rows are not known: the rule compares the steps a resume logged
    again where both runs know them. ``kept``: where given, each run's two ends together from the last call, made
    again only for a run whose tail or first rows are other objects now (an index asks on each of its changes)."""
    groups: dict[tuple[str, str, Path, str | None], list[RunStore]] = {}
    for st in tails.values():
        if st.kind in KINDS and len(st):
            groups.setdefault((st.kind, st.arm, piece_dir(st).parent, st.step_key), []).append(st)
    known: dict[str, RunStore] = {}
    ends: dict[str, tuple[RunStore, RunStore, RunStore]] = {}
    for group in groups.values():
        for st in group if len(group) > 1 else ():
            first = st if st.meta.get("preview_offset") == 0 else head(st)
            if first is None or not len(first):
                continue
            had = kept.get(st.run) if kept is not None else None
            if had is None or had[0] is not st or had[1] is not first:
                had = (st, first, _ends(first, st))
            ends[st.run] = had
            known[st.run] = had[2]
    if kept is not None:
        kept.clear()
        kept.update(ends)
    return [[key for key, _ in pieces] for pieces in trainings(known)]


def _ends(first: RunStore, tail: RunStore) -> RunStore:
    """A store of ``first``'s rows and then ``tail``'s after them, named, placed and keyed as ``tail``;
    ``meta["unknown"]``: the steps between them (exclusive) it may lack."""
    if first is tail:
        return tail
    out = RunStore(tail.run, tail.path, tail.kind, tail.arm)
    with first.lock:
        out.add(rows_of(first, 0), math.nan)
    with tail.lock:
        last = out.step_at(len(out) - 1) if len(out) else None
        out.add(rows_of(tail, 0 if last is None else tail.index_of_step(last + 1)), math.nan)
        if last is not None and len(tail) and tail.step_at(0) > last:
            out.meta["unknown"] = (last, tail.step_at(0))
    return out


def rows_of(st: RunStore, start: int, stop: int | None = None) -> Parsed:
    """``st``'s rows ``[start, stop)`` as stored (its lock held), to add to another store (RowCut.parsed)."""
    return RowCut(st, None, start, len(st) if stop is None else stop, False).parsed(st.step_key)
