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

One training's pieces are read as one run (:class:`Training`): each piece's rows from its first step on replace
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
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steptable.ingest.edits import grow_state
from steptable.ingest.parse import MISSING
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
            out.add(_rows_of(store, 0, HEAD_ROWS), math.nan)
            out.meta["unknown"] = (store.step_at(HEAD_ROWS - 1), store.step_at(n - INDEX_ROWS))
        out.add(_rows_of(store, n - INDEX_ROWS), math.nan)
    out.meta["preview_offset"] = 0 if whole else 1
    return out


def index_trainings(tails: Mapping[str, RunStore], head: Callable[[RunStore], RunStore | None]) -> list[list[str]]:
    """:func:`trainings` of runs known by their first and newest rows (``tails``, each :func:`newest`: a sweep's
    index reads no more), as run ids. ``head(tail)`` gives the store of a run's first rows (None: it cannot be read),
    asked for only where a run shares its directory with another of its kind and arm and its first rows are not
    kept. The steps between a run's first and newest rows are not known: the rule compares the steps a resume logged
    again where both runs know them."""
    groups: dict[tuple[str, str, Path, str | None], list[RunStore]] = {}
    for st in tails.values():
        if st.kind in KINDS and len(st):
            groups.setdefault((st.kind, st.arm, piece_dir(st).parent, st.step_key), []).append(st)
    known: dict[str, RunStore] = {}
    for group in groups.values():
        for st in group if len(group) > 1 else ():
            first = st if st.meta.get("preview_offset") == 0 else head(st)
            if first is not None and len(first):
                known[st.run] = _ends(first, st)
    return [[key for key, _ in pieces] for pieces in trainings(known)]


def _ends(first: RunStore, tail: RunStore) -> RunStore:
    """A store of ``first``'s rows and then ``tail``'s after them, named, placed and keyed as ``tail``;
    ``meta["unknown"]``: the steps between them (exclusive) it may lack."""
    if first is tail:
        return tail
    out = RunStore(tail.run, tail.path, tail.kind, tail.arm)
    with first.lock:
        out.add(_rows_of(first, 0), math.nan)
    with tail.lock:
        last = out.step_at(len(out) - 1) if len(out) else None
        out.add(_rows_of(tail, 0 if last is None else tail.index_of_step(last + 1)), math.nan)
        if last is not None and len(tail) and tail.step_at(0) > last:
            out.meta["unknown"] = (last, tail.step_at(0))
    return out


class Training:
    """A training's pieces (in order, each with the index of its first row of metrics) and the one run they are read
    as (``store``): named, placed and described as the first (its arm, config, side files), its rows each piece's
    from its first row of metrics on, the rows before that of the pieces before it, every later piece's first step
    a resume; the last piece's description of how the run ended; every piece's bad lines and gaps; the pieces' paths
    in ``meta["pieces"]``, their run ids in ``meta["piece_runs"]``; arrival times unknown (NaN), as for any re-read.
    Kept up to date as its last piece is followed (:meth:`sync`): rows it adds are added, cells merged into its rows
    (a validation's) merged; anything else (a piece rewritten, reset or resumed within its file, an earlier piece
    changed) fills the run again, as a reset readers start over from."""

    def __init__(self, pieces: Sequence[tuple[RunStore, int]]) -> None:
        self.pieces = [st for st, _ in pieces]
        self.starts = [start for _, start in pieces]
        self.ids = tuple(st.run for st in self.pieces)
        self.key = tuple((st.run, start) for st, start in pieces)  # (a piece beginning elsewhere: another)
        last = self.pieces[-1]
        with last.lock:  # (the step its last piece begins at: a row logged before it is no edit to replay)
            self.first_step = last.step_at(self.starts[-1]) if self.starts[-1] < len(last) else None
        first = self.pieces[0]
        self.store = RunStore(first.run, first.path, first.kind, first.arm, first.on_resume, first.keep)
        self.store.side_files = first.side_files
        # each piece's (generation, rows, edits, resumes), bad lines, version and last step when read
        self._seen: list[tuple[tuple[int, int, int, int], int, int, int | None]] = []
        self.sync()

    def _state(self) -> list[tuple[tuple[int, int, int, int], int, int, int | None]]:
        out = []
        for st in self.pieces:
            with st.lock:
                out.append((grow_state(st), len(st.bad), st.version, st.step_at(len(st) - 1) if len(st) else None))
        return out

    def sync(self) -> bool:
        """Bring ``store`` up to date with the pieces; True when it changed."""
        now = self._state()
        if now == self._seen:
            return False
        if not (self._seen and self._seen[:-1] == now[:-1] and self._went_on(now[-1])):
            if self._seen:
                self.store.reset()
            self._fill()
        with self.store.lock:  # (rows without a clock are as old as their file: the newest piece's, not the first's)
            self.store.last_update = self.pieces[-1].last_update or self.store.last_update
        self._seen = now
        return True

    def _went_on(self, now: tuple[tuple[int, int, int, int], int, int, int | None]) -> bool:
        """The last piece only went on since it was read (rows added, cells merged into its rows, rows inserted
        among them): do the same to the run and say True; else (reset, rewritten, resumed within its file, more
        edits than its log keeps) False, the run untouched."""
        (gen, _, _, resumes), bad_seen, version, last_step = self._seen[-1]
        st, out = self.pieces[-1], self.store
        with st.lock:
            if now[0][0] != gen or now[0][3] != resumes or st.lost_since(version) is not None:
                return False
            first = self.starts[-1]
            if first >= len(st) or st.step_at(first) != self.first_step:
                return False  # (a row came before its first row of metrics: where it begins is read again)
            after = len(st) if last_step is None else st.index_of_step(last_step + 1)
            edited: dict[int, frozenset[str] | None] = {}
            for step, keys in st.edits_since(version):
                if step < self.first_step:
                    return False
                if last_step is not None and step <= last_step:
                    had = edited.get(step, frozenset())
                    edited[step] = None if had is None or keys is None else had | keys
            merges = []
            for step, keys in sorted(edited.items()):
                i = st.index_of_step(step)
                if first <= i < after and st.step_at(i) == step:
                    row = st.stored_rows(i, i + 1)[0]
                    merges.append(Parsed(steps=[step], rows=[row if keys is None else
                                                            {k: row[k] for k in keys if k in row}],
                                         step_key=st.step_key))
            rows, meta, bad = _rows_of(st, max(after, first)), dict(st.meta), st.bad[bad_seen:]
        with out.lock:
            for m in merges:
                out.add(m, None)
            out.add(rows, None)
            _take_meta(out, meta, list_too=False)
            out.add_bad(bad)
        return True

    def _fill(self) -> None:
        out = self.store
        out.meta["pieces"] = [str(st.path) for st in self.pieces]
        out.meta["piece_runs"] = list(self.ids)
        for i, (st, start) in enumerate(zip(self.pieces, self.starts, strict=True)):
            with st.lock:
                rows, meta, bad, gaps = _rows_of(st, start if i else 0), dict(st.meta), list(st.bad), list(st.gaps)
            with out.lock:
                if i and rows.steps:
                    out.resume_at(rows.steps[0])
                out.add(rows, math.nan)
                out.resumes += st.resumes  # (a piece's resumes within its own file)
                _take_meta(out, meta)
                out.add_bad(bad)
                for gap in gaps:
                    out.add_gap(gap)


def _rows_of(st: RunStore, start: int, stop: int | None = None) -> Parsed:
    """``st``'s rows ``[start, stop)`` as stored (its lock held), column by column: a copy of each column (a memcpy
    for a numeric one), never a dict a row (a 100k-row piece as dicts is hundreds of MB)."""
    cut = RowCut(st, None, start, len(st) if stop is None else stop, False)
    cols: dict[str, Any] = {}
    for key, vals, pres, ints in cut.columns():
        cells: Any = vals  # (a numeric column's array: NaN a logged null; an object column's list: None one)
        if type(vals) is array and ints:
            cells = [int(v) if math.isfinite(v) else v for v in vals]
        if pres is not None:
            cells = [v if p else MISSING for v, p in zip(cells, pres, strict=True)]
        cols[key] = cells
    return Parsed(steps=cut.steps, cols=cols, step_key=st.step_key)


def _take_meta(out: RunStore, meta: Mapping[str, Any], list_too: bool = True) -> None:
    """A piece's run facts as its training's: the first piece's config (a resumed process's adds its resume's own
    arguments), every piece's lists (TensorBoard's text summaries: added to when ``list_too``; kept as they are
    otherwise, for a piece that only grew has said them), the newest piece's anything else (how the run ended)."""
    for k, v in meta.items():
        had = out.meta.get(k)
        if isinstance(had, list) and isinstance(v, list):
            if list_too:
                out.meta[k] = had + v
        elif not (k == "config" and had is not None):
            out.meta[k] = v


class Joiner:
    """The runs a follower shows, with each training found in pieces as one (:class:`Training`), kept between
    passes: a training's run is the same store while its pieces stay the same, and takes the place of the run shown
    under its id before (steptable.ingest.store.RunStore.succeed: to readers, resumed at the new piece's first
    step)."""

    def __init__(self) -> None:
        self._by_first: dict[str, Training] = {}
        #: runs held back as the first row of a training's resumed piece (:func:`trainings`' ``held``): not shown
        self.held: set[str] = set()
        self._last: tuple[Mapping[str, RunStore], Mapping[str, RunStore], dict[str, str]] | None = None

    def view(self, runs: Mapping[str, RunStore], changed_runs: Collection[str] | None = None
             ) -> tuple[Mapping[str, RunStore], dict[str, str], set[str]]:
        """(``runs`` as shown: the same mapping where no training is in pieces; each piece's id -> its training's
        id; the trainings whose run changed since the last call). ``changed_runs``: the runs that changed since the
        last call, where the caller knows (None: any may have): with the same ``runs`` and none of a kind that is
        joined, the answer is the last one, at no cost (a follower's pass that found nothing new)."""
        last = self._last
        if last is not None and last[0] is runs and changed_runs is not None and not self.held and not any(
                (st := runs.get(r)) is not None and st.kind in KINDS for r in changed_runs):
            return last[1], last[2], set()
        held: list[str] = []  # (a resumed piece's first row, until its second joins it to its training)
        found = trainings(runs, held) if any(st.kind in KINDS for st in runs.values()) else []
        came_back, self.held = self.held - set(held), set(held)
        if not found and not self._by_first and not held:
            self._last = (runs, runs, {})
            return runs, {}, came_back
        kept: dict[str, Training] = {}
        changed: set[str] = set()
        for pieces in found:
            ids = [key for key, _ in pieces]
            t = self._by_first.get(ids[0])
            if t is None or t.key != tuple(pieces):
                before = t.store if t is not None else runs[ids[0]]
                t = Training([(runs[key], start) for key, start in pieces])
                with before.lock:
                    # (its rows are the run's shown up to the new piece's first step: a resume there to a reader,
                    # as where a resume in one file replaced them; but where a resume it held is lost, a reset)
                    grown = before.resumes == t.store.resumes[:len(before.resumes)]
                    t.store.succeed(before.generation, before.version, reset=not grown)
                changed.add(ids[0])
            elif t.sync():
                changed.add(ids[0])
            kept[ids[0]] = t
        for first, t in self._by_first.items():  # a training no longer in pieces: its first piece shown again
            if first not in kept and (st := runs.get(first)) is not None:
                with t.store.lock:
                    st.succeed(t.store.generation, t.store.version)
                changed.add(first)
        self._by_first = kept
        piece_of = {key: t.ids[0] for t in kept.values() for key in t.ids}
        shown = {k: (kept[k].store if k in kept else v) for k, v in runs.items()
                 if k in kept or (k not in piece_of and k not in self.held)}
        self._last = (runs, shown, piece_of)
        return shown, piece_of, changed | {k for k in came_back if k in shown}

