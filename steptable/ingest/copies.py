"""Which runs are copies of one training: the same rows written by several loggers. Pure.

A training that reports to several trackers at once (transformers' ``report_to=["wandb", "trackio",
"tensorboard"]``, its checkpoints' ``trainer_state.json`` beside them) is found as one run per file. Taken as
separate runs, ``compare`` counts them as seeds of one arm (an interval narrowed by duplicates) and the watch shows
each training several times. Two runs are copies when

- they were written by different loggers (kinds of file): two runs of one logger are two runs, even with the same
  rows so far (an arm whose change starts later logs its baseline's rows until then);
- every value both hold agrees (the same step, the same metric once transformers' tracker names are undone:
  ``train/loss`` is ``loss``, ``eval/loss`` is ``eval_loss``) to float32 precision (TensorBoard keeps float32), at
  up to :data:`SAMPLED` steps spread over the steps both hold, and
- what they share includes a metric that goes up and down more than once over those steps (a loss, a reward): a
  schedule or a counter (a learning rate, even warmed up then decayed; an epoch) agrees across seeds too, a measured
  metric does not.

Of a set of copies one is kept: a file named on the command line first, then, followed live, the run already shown
(with rows, before its copies were known), then the one that goes furthest (its newest step, then its rows: of a
training killed and resumed, the state that holds both event files' rows), then by kind (:func:`keep_order`):
steptable's own JSONL, W&B's (its run record names the run and says how it ended), the other trackers' files,
TensorBoard (float32), and last a ``trainer_state.json`` (as far as its last checkpoint); among equals the first run
id.
"""

from __future__ import annotations

import itertools
import math
import os
import struct
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from steptable.ingest.edits import GrowState, grow_state, only_grew
from steptable.ingest.parsed import BOOKKEEPING_KEYS

#: shared steps compared at most (spread over the steps both runs hold, the last included)
SAMPLED = 256
#: shared steps needed to say anything: a metric going up and down twice takes four values
MIN_SHARED = 4
#: the first and the last rows whose values find the runs worth comparing (copies start at the same step, and a
#: sweep's copies that ended end at one; a sweep of 2,000 runs indexes 40 values a run)
END_ROWS = 1
#: a first value held by more runs than this is a schedule's or a counter's (every seed has it): it finds no pair
SHARED_BY = 8
#: the newest rows a :class:`Sample` keeps
SAMPLE_ROWS = 16
_SAMPLES = itertools.count()
#: values closer than this (relative) agree: float32 keeps 24 bits (6e-8)
TOLERANCE = 1e-6
#: which of a set of copies is kept, by kind (others: 2): W&B's run record names the run and says how it ended
_KIND_ORDER = {"jsonl": 0, "wandb": 1, "tensorboard": 3, "trainer_state": 4}


class Rows(Protocol):
    """What is compared of a run (a ``RunStore``)."""

    keys: list[str]
    step_key: str | None

    @property
    def run(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def path(self) -> Any: ...
    @property
    def generation(self) -> int: ...
    @property
    def edit_count(self) -> int: ...
    @property
    def resumes(self) -> Sequence[int]: ...
    @property
    def steps(self) -> Sequence[int]: ...
    def __len__(self) -> int: ...
    def is_numeric(self, key: str) -> bool: ...
    def column(self, key: str) -> Sequence[Any]: ...
    def column_between(self, key: str, start: int = 0, stop: int | None = None) -> Sequence[Any]: ...
    def steps_between(self, start: int = 0, stop: int | None = None) -> Sequence[int]: ...


R = TypeVar("R", bound=Rows)


def canonical(key: str) -> str:
    """``key`` with transformers' tracker renaming undone (``train/loss`` -> ``loss``, ``eval/loss`` ->
    ``eval_loss``, ``test/x`` -> ``test_x``): how ``trainer_state.json`` names what W&B, trackio and TensorBoard
    name with a prefix."""
    if key.startswith("train/"):
        return key[6:]
    if key.startswith(("eval/", "test/")):
        return key[:4] + "_" + key[5:]
    return key


def _f32(x: float) -> float:
    try:
        return float(struct.unpack("f", struct.pack("f", x))[0])
    except (OverflowError, struct.error):
        return x


def _compared(store: Rows) -> dict[str, str]:
    """Canonical name -> the store's key, for its numeric metrics (no step, clock or tracker bookkeeping)."""
    out: dict[str, str] = {}
    for key in store.keys:
        if key == "step" or key == store.step_key or key in BOOKKEEPING_KEYS or key.startswith("_"):
            continue
        if store.is_numeric(key):
            out.setdefault(canonical(key), key)
    return out


#: the hash of (step, canonical key, float32 value) of a cell (two that collide only make a pair to compare)
_Item = int




def _items(store: Rows, start: int, stop: int) -> set[_Item]:
    """The items of the finite numbers of the store's rows ``[start, stop)``."""
    items: set[_Item] = set()
    steps = store.steps_between(start, stop)
    for name, key in _compared(store).items():
        for step, v in zip(steps, store.column_between(key, start, stop), strict=True):
            if isinstance(v, float) and math.isfinite(v):
                items.add(hash((step, name, _f32(v))))
    return items


def _end_items(store: Rows) -> set[_Item]:
    """The items of the store's first and of its last :data:`END_ROWS` rows: copies read from their start meet at
    their first rows, a sweep's windows of their newest rows (:class:`Sample`) at their last."""
    n = len(store)
    return _items(store, 0, min(n, END_ROWS)) | _items(store, max(END_ROWS, n - END_ROWS), n)


def _agree(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= TOLERANCE * max(abs(a), abs(b))


def _turns(values: Sequence[float]) -> int:
    """How often the values change direction (equal neighbours skipped)."""
    turns, last = 0, 0
    for x, y in itertools.pairwise(values):
        d = (y > x) - (y < x)
        if d:
            if last and d != last:
                turns += 1
            last = d
    return turns


def _row_map(store: Rows) -> dict[int, int]:
    """Step -> its last row."""
    return {st: i for i, st in enumerate(store.steps)}


def _check(a: Rows, b: Rows, rows_a: Mapping[int, int], rows_b: Mapping[int, int]) -> str:
    """"same", "different", or "unsure" (too few shared steps, or no metric moving over them yet) of two runs
    (``rows_a``, ``rows_b``: step -> row of each)."""
    shared = sorted(rows_a.keys() & rows_b.keys())
    if len(shared) > SAMPLED:
        shared = [shared[(len(shared) - 1) * i // (SAMPLED - 1)] for i in range(SAMPLED)]
    if len(shared) < MIN_SHARED:
        return "unsure"
    keys_a, keys_b = _compared(a), _compared(b)
    moving = False
    for name in keys_a.keys() & keys_b.keys():
        col_a, col_b = a.column(keys_a[name]), b.column(keys_b[name])
        both = []
        for step in shared:
            x, y = col_a[rows_a[step]], col_b[rows_b[step]]
            if math.isfinite(x) and math.isfinite(y):
                if not _agree(x, y):
                    return "different"
                both.append(x)
        moving = moving or _turns(both) >= 2
    # (as many shared steps as are compared, and nothing moved: no measured metric is shared)
    return "same" if moving else "different" if len(shared) >= SAMPLED else "unsure"


def same_training(a: Rows, b: Rows) -> bool:
    """Are ``a`` and ``b`` copies of one training (see the module docstring)?"""
    return a.kind != b.kind and _check(a, b, _row_map(a), _row_map(b)) == "same"


def _new_rows_agree(a: Rows, a_from: int, b: Rows, b_rows: Mapping[int, int]) -> bool:
    """Do the rows of ``a`` from ``a_from`` agree with ``b``'s rows of the same steps (``b_rows``: step -> row)?"""
    n = len(a)
    steps = a.steps_between(a_from, n)
    at = [(i, b_rows[st]) for i, st in enumerate(steps) if st in b_rows]
    if not at:
        return True
    keys_b = _compared(b)
    for name, key in _compared(a).items():
        other = keys_b.get(name)
        if other is None:
            continue
        new = a.column_between(key, a_from, n)
        for i, j in at:
            x, y = new[i], b.column_between(other, j, j + 1)[0]
            if math.isfinite(x) and math.isfinite(y) and not _agree(x, y):
                return False
    return True


def _short_of(store: Rows) -> tuple[float, int]:
    """How far a copy falls short, to sort by: minus its newest row's step, then minus its rows. Of copies that
    stop at different steps (a ``trainer_state.json`` at its last checkpoint; the event file of a training's first
    process beside the resumed one's, each a copy of the state) the one that goes furthest is kept: the others'
    rows are in it."""
    n = len(store)
    return (-store.steps_between(n - 1, n)[0] if n else math.inf), -n  # (the newest step alone, not a copy of all)


def keep_order(store: Rows, named: Collection[str]) -> tuple[int, str]:
    """Which of a set of copies is kept: the smallest (a named file, steptable's JSONL, W&B's, the other trackers',
    TensorBoard, ``trainer_state.json``; then the run id)."""
    return (-1 if store.run in named else _KIND_ORDER.get(store.kind, 2), store.run)


class Copies:
    """The copies among a changing set of runs (a follower's), found again as they grow: ``update`` compares only
    the pairs of runs of different kinds whose first or last rows, as they were when the run was new (or rewritten),
    share a value; a pair is then checked again on its new rows alone (a followed run's history is not read again
    for a row more). ``stay``: a run shown (with rows, no copy) stays the one kept of the copies found for it later
    (what prints rows as they come must not print them again from another file); without it, the kept is
    :func:`keep_order`'s alone (a list of runs, whatever order they were read in)."""

    def __init__(self, roots: Iterable[str | Path] = (), stay: bool = True) -> None:
        """``roots``: the paths the runs were found under; a run whose file is one of them (named on the command
        line) is kept over its copies."""
        self.stay = stay
        self._files = {os.path.abspath(r) for r in roots if os.path.isfile(r)}  # (looked at once)
        #: run -> (its state, its first and last rows' items when it was new)
        self._items: dict[str, tuple[GrowState, set[_Item]]] = {}
        self._by_item: dict[_Item, list[str]] = {}  # item -> the runs holding it
        self._rows: dict[str, tuple[GrowState, dict[int, int]]] = {}  # run -> (its state, step -> its last row)
        #: (run, run) -> (:func:`_state` of each when checked, "same" / "different" / "unsure")
        self._pairs: dict[tuple[str, str], tuple[GrowState, GrowState, str]] = {}
        #: run id of each copy -> the run id kept for it
        self.of: dict[str, str] = {}
        self._lock = threading.Lock()  # (a UI thread and a worker may both ask)
        self._shown: set[str] = set()  # runs that had rows while no copy: the one kept of their copies later

    def distinct(self, stores: Mapping[str, R], keep: Collection[str] = ()) -> dict[str, R]:
        """``stores`` (run id -> store) without the copies of another run (see :meth:`update`)."""
        of = self.update(stores, keep)
        return {k: s for k, s in stores.items() if k not in of} if of else dict(stores)

    def update(self, stores: Mapping[str, Rows], keep: Collection[str] = ()) -> dict[str, str]:
        """Find the copies among ``stores`` (run id -> store); runs named on the command line (``roots``) and
        those in ``keep`` (asked for by id) are kept over their copies. Returns (and keeps in ``of``) each copy's
        run id -> the kept run's id."""
        files = self._files
        named = {r for r, st in stores.items() if os.path.abspath(st.path) in files} if files else set()
        with self._lock:
            return self._update(stores, named | set(keep))

    def _update(self, stores: Mapping[str, Rows], named: Collection[str]) -> dict[str, str]:
        anew: set[str] = set()  # runs new, rewritten or gone: their pairs are found again from their values
        grew: set[str] = set()  # runs that only grew: their pairs stand, checked on their new rows
        for run, st in stores.items():
            got = self._items.get(run)
            state = grow_state(st)
            if got is not None and got[0] != state and got[0][1] >= END_ROWS and only_grew(got[0], state):
                # (a followed run's first rows stand, and its copies meet it there: its values are not read again)
                self._items[run] = (state, got[1])
                grew.add(run)
            elif got is None or got[0] != state:
                items = _end_items(st)
                self._index(run, None if got is None else got[1], items)
                self._items[run] = (state, items)
                anew.add(run)
        for gone in self._items.keys() - stores.keys():
            self._index(gone, self._items.pop(gone)[1], set())
            self._rows.pop(gone, None)
            anew.add(gone)
        if anew or grew:
            pairs = {k: v for k, v in self._pairs.items() if k[0] not in anew and k[1] not in anew}
            found = self._candidates({run: self._items[run][1] for run in anew if run in stores}, stores)
            for a, b in sorted(found | {k for k in pairs if k[0] in grew or k[1] in grew}):
                pairs[(a, b)] = self._pair(a, stores[a], b, stores[b])
            self._pairs = pairs
        parent = {run: run for run in stores}
        for (a, b), checked in self._pairs.items():
            if checked[2] == "same":
                parent[_root(parent, a)] = _root(parent, b)
        groups: dict[str, list[str]] = {}
        for run in stores:
            groups.setdefault(_root(parent, run), []).append(run)
        self.of = {}
        shown = self._shown if self.stay else set()
        for members in groups.values():
            if len(members) > 1:
                # (a run shown with rows before its copies were known stays the one shown: a follower of the
                # output would otherwise get the same rows again, from the other file)
                kept = min(members, key=lambda r: (r not in named, r not in shown, _short_of(stores[r]),
                                                   keep_order(stores[r], named)))
                self.of.update({r: kept for r in members if r != kept and r not in named})
        self._shown = {r for r, st in stores.items() if r not in self.of and len(st)} | (shown & stores.keys())
        return self.of

    def _index(self, run: str, old: set[_Item] | None, new: set[_Item]) -> None:
        """The item index (value -> the runs holding it) with ``run``'s items ``old`` replaced by ``new``."""
        for item in (old or set()) - new:
            runs = self._by_item[item]
            runs.remove(run)
            if not runs:
                del self._by_item[item]
        for item in new - (old or set()):
            self._by_item.setdefault(item, []).append(run)

    def _candidates(self, values: Mapping[str, set[_Item]], stores: Mapping[str, Rows]) -> set[tuple[str, str]]:
        """The pairs of each run of ``values`` with the runs of another kind that share one of those values, held
        by at most :data:`SHARED_BY` runs."""
        out: set[tuple[str, str]] = set()
        for run, items in values.items():
            kind = stores[run].kind
            for item in items:
                runs = self._by_item.get(item, ())
                if 1 < len(runs) <= SHARED_BY:
                    out.update((min(run, o), max(run, o)) for o in runs if o != run and stores[o].kind != kind)
        return out

    def _pair(self, a: str, sa: Rows, b: str, sb: Rows) -> tuple[GrowState, GrowState, str]:
        now = (grow_state(sa), grow_state(sb))
        got = self._pairs.get((a, b))
        if got is not None and got[:2] == now:
            return got
        if got is None or got[2] == "unsure" or not (only_grew(got[0], now[0]) and only_grew(got[1], now[1])):
            return (*now, _check(sa, sb, self._rows_of(a, sa), self._rows_of(b, sb)))
        if got[2] == "different":
            return (*now, "different")
        # the same so far: their new rows decide
        same = (_new_rows_agree(sa, got[0][1], sb, self._rows_of(b, sb))
                and _new_rows_agree(sb, got[1][1], sa, self._rows_of(a, sa)))
        return (*now, "same" if same else "different")

    def _rows_of(self, run: str, st: Rows) -> dict[int, int]:
        """Step -> its last row of ``st``, brought up to date with its new rows only (mapped again after a
        rewrite, an edit or a resume)."""
        now = grow_state(st)
        got = self._rows.get(run)
        if got is None or not only_grew(got[0], now):
            got = ((now[0], 0, now[2], now[3]), {})
        rows = got[1]
        for i, step in enumerate(st.steps_between(got[0][1], now[1]), got[0][1]):
            rows[step] = i
        self._rows[run] = (now, rows)
        return rows


class Sample:
    """A run's newest rows (at most ``rows``), kept to find its copies where the run itself is not kept (a sweep's
    index keeps a digest of each run)."""

    def __init__(self, store: Rows, rows: int = SAMPLE_ROWS) -> None:
        n = len(store)
        start = max(0, n - rows)
        self.run, self.kind, self.path = store.run, store.kind, store.path
        self.generation = next(_SAMPLES)  # (each sample is new rows: its pairs are checked again)
        self.step_key = store.step_key
        self.edit_count, self.resumes = 0, ()  # (a sample is not followed: no edits to tell)
        self._steps = store.steps_between(start, n)
        self._cols = {key: store.column_between(key, start, n) for key in _compared(store).values()}
        self.keys = list(self._cols)

    @property
    def steps(self) -> Sequence[int]:
        return self._steps

    def __len__(self) -> int:
        return len(self._steps)

    def is_numeric(self, key: str) -> bool:
        return key in self._cols

    def column(self, key: str) -> Sequence[Any]:
        return self._cols[key]

    def column_between(self, key: str, start: int = 0, stop: int | None = None) -> Sequence[Any]:
        return self._cols[key][start:stop]

    def steps_between(self, start: int = 0, stop: int | None = None) -> Sequence[int]:
        return self._steps[start:stop]


def _root(parent: dict[str, str], run: str) -> str:
    while parent[run] != run:
        parent[run] = parent[parent[run]]
        run = parent[run]
    return run


def left_out(n: int, done: str = "left out") -> str:
    """What a command says of the ``n`` copies it left out (or hid: ``done``)."""
    return (f"{n} run{'s' if n > 1 else ''} {done}, the same rows as another run (one training through several"
            " loggers; `steptable runs` says which)")
