"""The one run a training resumed in new logger directories is read as (steptable.ingest.resumes finds its pieces):
:class:`Training` keeps it up to date as its last piece is followed, :class:`Joiner` shows a follower's runs with
each training as one. Pure; driven by the Follower."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from steptable.ingest.edits import grow_state
from steptable.ingest.parsed import Parsed
from steptable.ingest.resumes import KINDS, rows_of, trainings
from steptable.ingest.store import RunStore


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
            self.first_step: int = last.step_at(self.starts[-1])
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
            rows, meta, bad = rows_of(st, max(after, first)), dict(st.meta), st.bad[bad_seen:]
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
                rows, meta, bad, gaps = rows_of(st, start if i else 0), dict(st.meta), list(st.bad), list(st.gaps)
            with out.lock:
                if i and rows.steps:
                    out.resume_at(rows.steps[0])
                out.add(rows, math.nan)
                out.resumes += st.resumes  # (a piece's resumes within its own file)
                _take_meta(out, meta)
                out.add_bad(bad)
                for gap in gaps:
                    out.add_gap(gap)


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
            t = old = self._by_first.get(ids[0])
            if t is None or t.key != tuple(pieces):
                before = old.store if old is not None else runs[ids[0]]
                t = Training([(runs[key], start) for key, start in pieces])
                # (a new piece after those shown: the run's rows up to its first step are those shown, a resume
                # there to a reader, as where a resume in one file replaced them; anything else is a reset)
                more = old is None or (len(pieces) > len(old.key) and old.key == tuple(pieces[:len(old.key)]))
                with before.lock:
                    grown = more and before.resumes == t.store.resumes[:len(before.resumes)]
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

