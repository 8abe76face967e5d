"""Runs that are one training resumed in a new logger directory. Pure.

Lightning's CSVLogger and TensorBoardLogger write each process to a new ``version_N`` directory, transformers'
TensorBoard callback to a new ``runs/<date>_<host>`` and Stable-Baselines3 to a new ``PPO_N``: a fit resumed from
its checkpoint in a new process (a job requeued after a preemption, ``Trainer.fit(ckpt_path=...)``) is a second
file whose steps go on from the checkpoint's. Taken apart they are two runs of one arm that never overlap: two
seeds to ``compare`` (which then finds no common range), two tables in the watch. One training's pieces are found
from what they hold, as the W&B pieces are from their names (steptable.ingest.files.wandbpieces):

- they are files of one kind (CSV or TensorBoard) and one arm, in sibling directories (``armA/version_0``,
  ``armA/version_1``), taken in the order of those directories' names (numbers by value);
- a piece continues the training before it when its first step is later than that training's first: a new seed, or
  a run started again from scratch, starts where the first did (step 0) and stays a run of its own;
- exactly one training before it may be the one it continues: with two trainings begun in the same directory and
  both resumed, which piece goes on which is not known, and each stays a run of its own;
- it logs what the training logs (a metric of both: not a step counter nor a clock) and more than one row: a
  checkpoint evaluated in a process of its own (``trainer.validate``, ``trainer.test``) logs its scores once, at
  the checkpoint's step, and must not take the place of the training's rows from there on.

One training's pieces are read as one run (:class:`Training`): each piece's rows from its first step on replace those of
the pieces before it (a process resumed from a checkpoint older than its predecessor's last row logs those steps
again), and each step a piece began at is a resume of the run, as a resume within one file is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from steptable.ingest.edits import grow_state, only_grew
from steptable.ingest.parsed import BOOKKEEPING_KEYS, Parsed, counter
from steptable.ingest.store import RunStore

#: kinds of file a logger writes to a new directory for each process
KINDS = frozenset({"csv", "tensorboard"})
_NUMBER = re.compile(r"(\d+)")


def piece_dir(store: RunStore) -> Path:
    """The directory a run's logger made for its process: its file's (a TensorBoard run's is its first event
    file)."""
    return store.path.parent


def _metric(key: str) -> bool:
    """A key whose values are measured (not the step, an epoch or another counter, a clock)."""
    return key not in BOOKKEEPING_KEYS and not counter(key)


def _name_order(name: str) -> tuple[tuple[int, int | str], ...]:
    """A directory name's sort key, its numbers by value (``version_10`` after ``version_9``)."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in _NUMBER.split(name) if p)


def trainings(stores: Mapping[str, RunStore]) -> list[list[str]]:
    """The run ids of each training found in more than one piece, its pieces in order (see the module docstring);
    runs that are one piece are left out."""
    groups: dict[tuple[str, str, Path, str | None], list[RunStore]] = {}
    for st in stores.values():
        with st.lock:
            if st.kind not in KINDS or not len(st):
                continue
            place = piece_dir(st)
            groups.setdefault((st.kind, st.arm, place.parent, st.step_key), []).append(st)
    found: list[list[str]] = []
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda st: (_name_order(piece_dir(st).name), st.run))
        begun: list[tuple[int, list[str], set[str]]] = []  # (first step, pieces, metrics) of each training so far
        for st in group:
            with st.lock:
                first, n, logs = st.step_at(0), len(st), {k for k in st.keys if _metric(k)}
            before = [t for t in begun if t[0] < first]
            if len(before) == 1 and n > 1 and before[0][2] & logs:
                before[0][1].append(st.run)
                before[0][2].update(logs)
            else:
                begun.append((first, [st.run], logs))
        found += [pieces for _, pieces, _ in begun if len(pieces) > 1]
    return found


class Training:
    """A training's pieces (in order) and the one run they are read as (``store``): named, placed and described as
    the first (its arm, config, side files), its rows each piece's from its first step on, the rows before that of
    the pieces before it, every later piece's first step a resume; the last piece's description of how the run ended;
    every piece's bad lines and gaps; the pieces' paths in ``meta["pieces"]``; arrival times unknown (NaN), as for
    any re-read. Kept up to date as its last piece is followed (:meth:`sync`): rows it adds are added; anything else
    (a piece rewritten, reset or resumed within its file, a row changed in place, an earlier piece changed) fills the
    run again, as a reset readers start over from."""

    def __init__(self, pieces: Sequence[RunStore]) -> None:
        self.pieces = list(pieces)
        self.ids = tuple(st.run for st in pieces)
        first = pieces[0]
        self.store = RunStore(first.run, first.path, first.kind, first.arm, first.on_resume, first.keep)
        self.store.side_files = first.side_files
        self._seen: list[tuple[int, int, int, int, int]] = []  # each piece's state and bad lines when read
        self.sync()

    def sync(self) -> bool:
        """Bring ``store`` up to date with the pieces; True when it changed."""
        now = [(*grow_state(st), len(st.bad)) for st in self.pieces]
        if now == self._seen:
            return False
        out, last = self.store, self.pieces[-1]
        if self._seen and self._seen[:-1] == now[:-1] and only_grew(self._seen[-1][:4], now[-1][:4]):
            with last.lock:
                n, had_bad = self._seen[-1][1], self._seen[-1][4]
                steps, rows = list(last.steps_between(n)), last.stored_rows(n)
                meta, bad, step_key = dict(last.meta), last.bad[had_bad:], last.step_key
            with out.lock:
                out.add(Parsed(steps=steps, rows=rows, step_key=step_key), None)
                _take_meta(out, meta, list_too=False)
                out.add_bad(bad)
        else:
            if self._seen:
                out.reset()
            self._fill()
        with out.lock:  # (rows without a clock are as old as their file: the newest piece's, not the first's)
            out.last_update = last.last_update if last.last_update is not None else out.last_update
        self._seen = now
        return True

    def _fill(self) -> None:
        out = self.store
        out.meta["pieces"] = [str(st.path) for st in self.pieces]
        for i, st in enumerate(self.pieces):
            with st.lock:
                steps, rows, step_key = list(st.steps), st.stored_rows(), st.step_key
                meta, bad, gaps = dict(st.meta), list(st.bad), list(st.gaps)
            if i and steps:
                out.withdraw(out.index_of_step(steps[0]))
                out.resumes.append(steps[0])
            out.add(Parsed(steps=steps, rows=rows, step_key=step_key), math.nan)
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
        self._last: tuple[Mapping[str, RunStore], Mapping[str, RunStore], dict[str, str]] | None = None

    def view(self, runs: Mapping[str, RunStore], changed_runs: Collection[str] | None = None
             ) -> tuple[Mapping[str, RunStore], dict[str, str], set[str]]:
        """(``runs`` as shown: the same mapping where no training is in pieces; each piece's id -> its training's
        id; the trainings whose run changed since the last call). ``changed_runs``: the runs that changed since the
        last call, where the caller knows (None: any may have): with the same ``runs`` and none of a kind that is
        joined, the answer is the last one, at no cost (a follower's pass that found nothing new)."""
        last = self._last
        if last is not None and last[0] is runs and changed_runs is not None and not any(
                (st := runs.get(r)) is not None and st.kind in KINDS for r in changed_runs):
            return last[1], last[2], set()
        found = trainings(runs) if any(st.kind in KINDS for st in runs.values()) else []
        if not found and not self._by_first:
            self._last = (runs, runs, {})
            return runs, {}, set()
        kept: dict[str, Training] = {}
        changed: set[str] = set()
        for ids in found:
            t = self._by_first.get(ids[0])
            if t is None or t.ids != tuple(ids):
                before = t.store if t is not None else runs[ids[0]]
                t = Training([runs[key] for key in ids])
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
        shown = {k: (kept[k].store if k in kept else v) for k, v in runs.items() if k in kept or k not in piece_of}
        self._last = (runs, shown, piece_of)
        return shown, piece_of, changed

