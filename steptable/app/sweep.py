"""A sweep in the watch app: the index of every run's newest rows (its own thread, one for all runs), and the app's
part that shows it as the run list and opens the runs picked from it.

Lazy: while the list is the home screen the follower reads only the runs opened from it (``Feed.want``); the rest
are known by their file's size and last ``TAIL_BYTES`` (steptable.ingest.files.runindex), kept by one thread: the
follower's file notifications name the runs it passes over (new runs, growing files), which the index reads at once;
a stat pass (once a ``period``, or rarer where a pass over thousands of runs is costly: see ``SHARE``) and the
follower's own discovery passes (every few seconds, each naming every run) catch what notification misses (polling,
network filesystems). Once every tail is read, what the process holds then is kept out of the garbage collector's
full passes (steptable.app.heap)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.message import Message

from steptable.app import heap
from steptable.app.messages import FeedProblem

if TYPE_CHECKING:  # (the run list's rows, and the digests under them, load with the list)
    from steptable.app.armrule import ArmRule
    from steptable.app.runrows import Entry

#: first rows of runs kept, of those that may be pieces of one training resumed in new directories
MAX_HEADS = 10_000
#: seconds between the index's stat passes over every run (at least)
PERIOD = 1.0
#: ... and at least this many times as long as the last pass took (up to PERIOD_MAX): a pass over 2,000 runs takes
#: ~0.1 s of the GIL, which a pass once a second took from the UI thread (a new run's way to the list) 10% of the time
SHARE = 20
PERIOD_MAX = 10.0
#: seconds of tail reading between two posts while the first pass reads (the list fills in as it goes)
SLICE = 0.1
#: longest the tails wait for the list's first frame
DRAWN_WAIT = 2.0
#: seconds between two looks at the stop event while the index waits for a poke
WAKE_CHECK = 0.1


@dataclass
class IndexChanged(Message):
    """Runs of the sweep's index were found or changed (the list reads the index itself)."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, IndexChanged)


@dataclass
class SweepFound(Message):
    """The paths hold more runs than fit as tables: the run list is the home screen."""

    runs: int


class SweepIndex:
    """The RunIndex of a sweep and the thread that keeps it current. ``entries`` is for the UI thread."""

    def __init__(self, paths: Sequence[str], period: float = PERIOD) -> None:
        from steptable.app.runrows import StateMemo
        from steptable.ingest.copies import Copies, Sample
        from steptable.ingest.files.runindex import RunIndex
        from steptable.ingest.resumes import KINDS, newest
        from steptable.summary.sweep import digest

        self._samples: dict[str, Sample] = {}  # each run's newest rows: its copies (steptable.ingest.copies)
        self._newest: dict[str, Any] = {}  # the same of the runs that may be pieces of a training (ingest.resumes)
        self._heads: dict[Path, Any] = {}  # their first rows, once they hold as many as are looked at
        self._ends: dict[str, Any] = {}  # their first and newest rows together (resumes.index_trainings' cache)

        def make(store: Any, cand: Any) -> Any:
            self._samples = {**self._samples, store.run: Sample(store)}  # (replaced: the UI thread reads it)
            if store.kind in KINDS:
                self._newest[store.run] = newest(store)
            return digest(store, store.meta.get("size", 0))

        self._copies = Copies(paths, stay=False)  # (a list: the runs kept are keep_order's, whatever was read first)
        #: run id of each copy of another run in the index -> the run kept (as of the last change)
        self.copy_of: dict[str, str] = {}
        #: each training resumed in new directories (steptable.ingest.resumes): its first piece's run id (the one
        #: the follower shows it under, and the list) -> its pieces' run ids, the first first
        self.pieces: dict[str, list[str]] = {}
        # (no discovery of its own after the first: the follower's passes, every few seconds, name every run they
        # turn down to ``poke``; a second walk of thousands of runs would compete with the UI for the GIL)
        self.index = RunIndex(paths, make, recheck=math.inf)
        self.judge = StateMemo()  # the status line's, on the UI thread (thousands of runs at every status refresh)
        self.period = period
        self._posted = threading.Event()
        #: set by the app once the list is on screen: the tails are read after that (they compete for the GIL)
        self.drawn = threading.Event()
        self._woken = threading.Event()
        self._poked: dict[str, Any] = {}  # run id -> candidate a file event named since the last pass
        self._poke_lock = threading.Lock()

    def poke(self, cand: Any) -> None:
        """A file event named this candidate (a run new to the index, or one whose file changed): read it now.
        Called from the follower's thread."""
        with self._poke_lock:
            self._poked[cand.run_id] = cand
        self._woken.set()

    def _take_poked(self) -> list[Any]:
        with self._poke_lock:  # (cleared with the take: a poke just after it wakes the next wait)
            self._woken.clear()
            poked, self._poked = list(self._poked.values()), {}
        return poked

    def discover(self) -> int:
        self.index.discover()
        return len(self.index.runs)

    def entries(self) -> list[Entry]:
        """The index's runs but the copies of another (``copy_of``), a training resumed in new directories as one:
        its first piece with its last piece's newest rows (``pieces``)."""
        copy_of, pieces = self.copy_of, self.pieces
        runs = self.index.runs  # (the index replaces its dict, see there)
        later = {key for ids in pieces.values() for key in ids[1:]}
        out = []
        for e in runs.values():
            if e.run_id in copy_of or e.run_id in later:
                continue
            if e.run_id in pieces and (last := runs.get(pieces[e.run_id][-1])) is not None:
                e = replace(e, digest=last.digest, size=last.size, mtime=last.mtime)
            out.append(e)
        return out  # type: ignore[return-value]

    def _find_copies(self) -> None:
        from steptable.ingest.resumes import index_trainings

        samples = self._samples
        self.copy_of = dict(self._copies.update({rid: samples[rid] for rid in self.index.runs if rid in samples}))
        newest = {rid: self._newest[rid] for rid in self.index.runs if rid in self._newest}
        self.pieces = {ids[0]: ids for ids in index_trainings(newest, self._head, self._ends)}

    def _head(self, tail: Any) -> Any:
        """The first rows of a run that may be a piece of a training (kept once they are as many as are read)."""
        from steptable.ingest.files.runindex import head_of
        from steptable.ingest.resumes import HEAD_ROWS

        got = self._heads.get(tail.path)
        if got is None:
            got = head_of(tail.path, tail.kind)
            if got is not None and len(got) >= HEAD_ROWS and len(self._heads) < MAX_HEADS:
                self._heads[tail.path] = got
        return got

    def line(self, now: float, judge: Any = None) -> str:
        """The sweep's status line (steptable.summary.sweep.sweep_line), with the runs whose tails are not read yet;
        ``judge``: a memo of the runs' states (steptable.app.runrows.StateMemo), else the index's own. For the UI
        thread."""
        from steptable.summary.sweep import sweep_line

        es = self.entries()
        ds = [e.digest for e in es if e.digest is not None]
        more = f" (reading {len(es) - len(ds)} more)" if len(ds) < len(es) else ""
        if copies := len(self.copy_of):
            more += f" · {copies} cop{'ies' if copies > 1 else 'y'} of these runs by other loggers left out"
        return sweep_line(ds, now, judge or self.judge) + more

    def taken(self) -> None:
        """The UI is about to show the index (a change from now on posts again)."""
        self._posted.clear()

    def run(self, stop: threading.Event, post: Callable[[Message], Any]) -> None:
        frozen = False
        try:
            self._posted.set()  # (before the post: the UI may take it before ``post`` returns here)
            post(IndexChanged())
            self.drawn.wait(DRAWN_WAIT)
            next_pass = 0.0
            while not stop.is_set():
                changed: set[str] = set()
                poked = self._take_poked()
                if poked:
                    changed |= self.index.admit(poked)
                    changed |= self.index.refresh(budget=SLICE, only=[c.run_id for c in poked])
                if self.index.pending() or time.monotonic() >= next_pass:
                    t0 = time.monotonic()
                    changed |= self.index.refresh(budget=SLICE)
                    took = time.monotonic() - t0
                    next_pass = t0 + took + max(self.period, min(SHARE * took, PERIOD_MAX))
                if changed:
                    self._find_copies()
                if changed and not self._posted.is_set():
                    self._posted.set()
                    post(IndexChanged())
                pending = self.index.pending()
                if not pending and not frozen:  # (after the post: the list shows the last tails first)
                    _warm_tables()
                    heap.settle()
                    frozen = True
                if pending:
                    if stop.wait(0.005):
                        return
                else:
                    self._wait(stop, next_pass)
        except Exception as e:  # the UI says so; a list that silently stopped changing looks like quiet runs
            post(FeedProblem(f"the run list stopped following its runs: {type(e).__name__}: {e}"))
        finally:
            if frozen:  # (the watch is over: what it held may be collected again)
                heap.release()

    def _wait(self, stop: threading.Event, until: float) -> None:
        """Until a poke, ``stop`` or the monotonic time ``until`` (``stop`` is looked at every WAKE_CHECK s)."""
        while not stop.is_set() and not self._woken.is_set():
            left = until - time.monotonic()
            if left <= 0:
                return
            self._woken.wait(min(left, WAKE_CHECK))


def _warm_tables() -> None:
    """Import what a run's table needs (its schema, layout, column widths) before the first run is opened from the
    list: opening one then costs its file's read, not seconds of imports."""
    import steptable.app.layouts
    import steptable.schemafiles.resolve
    import steptable.schemas  # noqa: F401


#: the run list's screen, installed under this name for the app's life
RUNS_SCREEN = "steptable-runs"


class SweepHost(Protocol):
    session: Any
    feed: Any

    @property
    def arm_rule(self) -> Callable[[], ArmRule]: ...

    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...

    def install_screen(self, screen: Any, name: str) -> None: ...

    @property
    def screen_stack(self) -> list[Any]: ...

    def notify(self, message: str, *, severity: Any = "information", markup: bool = True) -> None: ...

    def call_after_refresh(self, callback: Any, *args: Any) -> bool: ...

    def put_away(self, run_ids: Collection[str], hidden: Collection[str] | None = None) -> None: ...


class Sweep:
    """The app's part for a sweep: the run list screen, opening runs from it, the status line."""

    def __init__(self, app: SweepHost, clock: Callable[[], float] = time.time) -> None:
        self.app = app
        self.clock = clock
        self.screen: Any = None
        self.opened: list[str] = []
        self._read: set[str] = set()  # the runs the feed was asked to read (an opened training's pieces among them)
        self._few_opened = False  # (a sweep that was few trainings written by several loggers: opened once)

    @property
    def index(self) -> SweepIndex | None:
        return getattr(self.app.feed, "sweep", None)

    def found(self) -> None:
        self.show_list()

    def show_list(self) -> None:
        from steptable.app.screens.runs import RunsScreen

        if self.index is None:
            return
        if self.screen is None:
            self.screen = RunsScreen(self, clock=self.clock)
            # (installed: a screen dismissed is otherwise removed, and pushed again it drew nothing until a resize)
            self.app.install_screen(self.screen, RUNS_SCREEN)
        if self.screen not in self.app.screen_stack:
            self.app.push_screen(self.screen)

    def changed(self) -> None:
        idx = self.index
        if idx is None:
            return
        idx.taken()  # (first: a run the index reads while the list is made posts again, it is not lost)
        if self.screen is not None and self.screen.is_attached:
            self.screen.refresh_list()
            self.screen.call_after_refresh(idx.drawn.set)
        self._open_if_few(idx)
        # a training opened from the list that the index finds resumed again since (a requeued job's new version, or
        # a run opened before its resume began): its new pieces are read too, into the table shown
        more = [key for rid in self.opened for key in idx.pieces.get(rid, ()) if key not in self._read]
        if more:
            self._read_runs(more)

    def _read_runs(self, run_ids: Sequence[str]) -> None:
        """Ask the feed to read ``run_ids`` (looking in their directories alone)."""
        runs = self.index.index.runs if self.index is not None else {}
        self._read.update(run_ids)
        self.app.feed.open(run_ids, {runs[r].path.parent for r in run_ids if r in runs})

    def _open_if_few(self, idx: SweepIndex) -> None:
        """Once every run is read: files that are few runs once the copies of one training by other loggers are
        left out (a handful of trainings reporting to W&B, trackio and TensorBoard) or its pieces are one run (a few
        fits, each resumed in a new version directory) open as tables, as few runs are shown; the list stays a key
        away. Once, and only before a run was opened from the list."""
        if self._few_opened or self.opened or not (idx.copy_of or idx.pieces) or idx.index.pending():
            return
        entries = idx.entries()
        if 0 < len(entries) <= getattr(self.app.feed, "sweep_min", 0):
            self._few_opened = True
            self.open_runs([e.run_id for e in entries])

    # ListHost
    def entries(self) -> list[Entry]:
        idx = self.index
        return idx.entries() if idx is not None else []

    def sweep_line(self, now: float, judge: Any = None) -> str:
        idx = self.index
        return idx.line(now, judge) if idx is not None else ""

    def open_runs(self, run_ids: Sequence[str]) -> None:
        """Show ``run_ids`` as tables (their histories are read now, in the background), put the others opened away
        (hidden, in no seed group's means and no compare view)."""
        for rid in run_ids:
            if rid not in self.opened:
                self.opened.append(rid)
        pieces = self.index.pieces if self.index is not None else {}
        self._read_runs([key for r in run_ids for key in pieces.get(r, [r])])  # (a training's pieces: one run)
        if self.screen is not None and self.screen in self.app.screen_stack:
            self.screen.dismiss(None)
        self.app.put_away([rid for rid in self.opened if rid not in run_ids])

    def bring_back(self, run_ids: Collection[str] | None = None) -> None:
        """Runs put away by :meth:`open_runs` count again (their seed groups, the compare view): those of
        ``run_ids`` (shown again by their keys: a seed of a folded group is folded into its table of means again,
        as its other seeds are), or every one (every arm is shown again)."""
        gone = self.app.session.put_away
        if run_ids is None:
            if gone:
                self.app.put_away(())
        elif back := gone & set(run_ids):
            self.app.put_away(gone - back, hidden=self.app.session.hidden)

    def compare_runs(self, run_ids: Sequence[str]) -> None:
        """:meth:`open_runs`, then the compare view over those runs alone (it fills in as their histories are read;
        runs opened before and the seeds' groups are not in it)."""
        from steptable.app.screens.compare import CompareScreen

        self.open_runs(run_ids)
        runs = self.app.session.runs
        self.app.call_after_refresh(self.app.push_screen, CompareScreen(
            lambda: [runs[r].store for r in run_ids if r in runs], wanted=len(run_ids), rule=self.app.arm_rule()))

    def can_close_list(self) -> bool:
        return bool(self.opened)

    def metric_defaults(self) -> list[str]:
        return default_metrics(self.entries())


def default_metrics(entries: Sequence[Entry], most: int = 3) -> list[str]:
    """The metric columns a list starts with: the ranking keys (steptable.summary.sweep.RANK_KEYS) the runs log."""
    from steptable.summary.sweep import default_keys

    return default_keys([k for e in entries if e.digest is not None for k in e.digest.keys], most)
