"""The run list's rows: filter, sort, pins and selection over a sweep's index entries. Pure (no textual).

A filter is words, all of which a run must match: ``key=value`` matches the run's config (a dotted key or its last
part: ``lr=1e-5`` matches ``optim.lr: 1e-05``), ``re:PATTERN`` a regular expression searched in its name or run id, any
other word a glob (``*seed[12]``) matching its name (its arm) or its whole run id or, without glob characters, a
substring of either (case-insensitive).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from steptable.summary.sweep import RunDigest, best_value, config_matches, matcher, run_state

#: the list's own columns (then the metric columns): what ``sort`` may name
COLUMNS = ("name", "format", "state", "rows", "step", "age", "alerts")
STATS = ("last", "mean", "best")
STATE_ORDER = {"crashed": 0, "idle": 1, "live": 2, "ended": 3}
#: sort columns whose values change only with a run's digest (not with the clock: a state, an age)
TIMELESS = frozenset({"name", "format", "rows", "step", "alerts"})
#: more runs changed at once than this: the list is made whole again (``patched`` gives None)
PATCH_MAX = 64


class Entry(Protocol):
    """One run of the index (steptable.ingest.files.runindex.Indexed)."""

    @property
    def run_id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> Path: ...

    size: int
    mtime: float
    config: dict[str, Any]

    @property
    def digest(self) -> RunDigest | None: ...


class FilterError(ValueError):
    """A filter that cannot be used (a regular expression that does not compile)."""


def _regex_test(rx: re.Pattern[str]) -> Callable[[Entry], bool]:
    return lambda e: rx.search(e.run_id) is not None or rx.search(e.name) is not None


def _config_test(key: str, want: str) -> Callable[[Entry], bool]:
    return lambda e: config_matches(e.config, key, want)


def _name_test(word: str) -> Callable[[Entry], bool]:
    test = matcher(word)
    return lambda e: test(e.name) or test(e.run_id)


def parse_filter(pattern: str) -> Callable[[Entry], bool]:
    """The predicate of a filter (see the module docstring); raises FilterError for a bad regular expression."""
    tests: list[Callable[[Entry], bool]] = []
    for word in pattern.split():
        if word.startswith("re:"):
            try:
                rx = re.compile(word[3:], re.IGNORECASE)
            except re.error as e:
                raise FilterError(f"bad regular expression {word[3:]!r}: {e}") from None
            tests.append(_regex_test(rx))
        elif "=" in word.strip("="):
            key, _, want = word.partition("=")
            tests.append(_config_test(key, want))
        else:
            tests.append(_name_test(word))
    return lambda e: all(t(e) for t in tests)


@dataclass
class ListState:
    """What the user chose: filter, sort column and order, the metric statistic shown, selection, pins."""

    pattern: str = ""
    sort: str = "name"
    reverse: bool = False
    stat: str = "last"
    metrics: list[str] = field(default_factory=list)
    higher: dict[str, bool] = field(default_factory=dict)  # metric -> higher is better (for ``best``)
    selected: set[str] = field(default_factory=set)
    pinned: list[str] = field(default_factory=list)

    def toggle(self, rid: str) -> None:
        self.selected.symmetric_difference_update({rid})

    def pin(self, rid: str) -> None:
        if rid in self.pinned:
            self.pinned.remove(rid)
        else:
            self.pinned.append(rid)

    def sort_by(self, column: str) -> None:
        """Sort by ``column``; the same column again reverses the order."""
        if column == self.sort:
            self.reverse = not self.reverse
        else:
            self.sort, self.reverse = column, False

    def columns(self) -> tuple[str, ...]:
        return (*COLUMNS, *self.metrics)


def metric(e: Entry, key: str, state: ListState) -> float | None:
    d = e.digest
    return None if d is None else best_value(d, key, state.stat, state.higher.get(key, True))


Judge = Callable[[RunDigest, float], str]


#: states the clock alone never changes for a digest: a run quiet for longer only stays idle, an ended one ended
SETTLED = frozenset({"ended", "crashed", "idle"})
#: digests kept in a StateMemo past which it starts again (a settled run that wrote again leaves its old digest)
MEMO_MAX = 100_000


class StateMemo:
    """``run_state`` of each digest, judged once a second, and once for all where it settled (:data:`SETTLED`): a
    list of thousands of runs is redrawn on every key press of its filter and every new run, and its states and
    status line need not be judged again each time. For the UI thread."""

    def __init__(self) -> None:
        from steptable.alerts.rules import AlertConfig

        self._second = -1
        self._memo: dict[int, tuple[RunDigest, str]] = {}  # id(digest) -> (the digest, its state this second)
        self._config = AlertConfig()  # (the default run_state makes anew at each call otherwise)

    def __call__(self, d: RunDigest, now: float) -> str:
        second = int(now)
        if second != self._second:
            self._second = second
            memo = self._memo
            self._memo = {k: v for k, v in memo.items() if v[1] in SETTLED} if len(memo) < MEMO_MAX else {}
        hit = self._memo.get(id(d))
        if hit is not None and hit[0] is d:
            return hit[1]
        st = run_state(d, now, self._config)
        self._memo[id(d)] = (d, st)
        return st


def state_of(e: Entry, now: float, judge: Judge = run_state) -> str:
    return "…" if e.digest is None else judge(e.digest, now)


#: the file a directory is named by in the list (StepLogger's): ``lr1e-5_seed3/`` for ``lr1e-5_seed3/metrics.jsonl``
#: (14 cells of every name of a sweep, the part that tells the runs apart cut from a narrow list)
DIRECTORY_FILE = "metrics.jsonl"


def label(e: Entry) -> str:
    """The run's name in the list: its id (``dir/`` for ``dir/metrics.jsonl``), with its arm before it where the id
    does not hold it (a W&B run's ``wandb/offline-run-<time>-<id>/run-<id>.wandb``, named ``hi_seed0`` by its run
    record)."""
    arm = e.digest.arm if e.digest is not None else ""
    head, sep, name = e.run_id.rpartition("/")
    shown = f"{head}/" if sep and name == DIRECTORY_FILE else e.run_id
    return shown if not arm or arm in e.run_id else f"{arm} · {shown}"


def natural(name: str) -> tuple[tuple[int, int, str], ...]:
    """``name``'s sort key, ignoring case: its runs of digits compared as numbers (seed2 before seed10)."""
    return tuple((0, int(p), "") if p[0] in "0123456789" else (1, 0, p) for p in _DIGITS.split(name.lower()) if p)


_DIGITS = re.compile(r"([0-9]+)")


def sort_key(e: Entry, column: str, state: ListState, now: float, judge: Judge = run_state) -> tuple[int, Any]:
    """(absent or NaN/inf last, value) of ``e``'s cell in ``column``."""
    d = e.digest
    value: Any
    if column == "name":
        value = natural(label(e))
    elif column == "format":
        value = d.kind if d is not None else ""
    elif column == "state":
        value = STATE_ORDER.get(state_of(e, now, judge), 9)
    elif column == "rows":
        value = d.rows if d is not None else e.size
    elif column == "step":
        value = d.last_step if d is not None else None
    elif column == "age":
        value = now - (d.updated if d is not None and d.updated is not None else e.mtime)
    elif column == "alerts":
        value = (-(d.errors), -(d.warnings)) if d is not None else None
    else:
        value = metric(e, column, state)
    return (1, 0) if value is None or (isinstance(value, float) and not math.isfinite(value)) else (0, value)


def shown(entries: Sequence[Entry], state: ListState, now: float, judge: Judge = run_state) -> list[Entry]:
    """The entries the filter keeps, pinned ones first (in pin order), the rest sorted; runs without the sort
    column's value last either way."""
    keep = parse_filter(state.pattern)
    by_id = {e.run_id: e for e in entries}
    pins = [by_id[r] for r in state.pinned if r in by_id]
    pinned = set(state.pinned)
    rest = [e for e in entries if e.run_id not in pinned and keep(e)]
    keyed = [(sort_key(e, state.sort, state, now, judge), e) for e in rest]
    have = [ke for ke in keyed if ke[0][0] == 0]
    have.sort(key=lambda ke: ke[0][1], reverse=state.reverse)
    return [*pins, *(e for _, e in have), *(e for k, e in keyed if k[0] != 0)]


def patched(prev: Sequence[Entry], entries: Sequence[Entry], changed: Collection[str], state: ListState, now: float,
            judge: Judge = run_state) -> list[Entry] | None:
    """``shown(entries, state, now, judge)`` made from ``prev``, what ``shown`` gave for the same ``state`` before the
    runs ``changed`` came or got a new digest: the others keep their places, each changed run is placed by a binary
    search (a new run in a list of thousands costs a few sort keys, not thousands). None where that cannot give the
    same list: a sort that moves with the clock, a run gone from ``entries``, more than ``PATCH_MAX`` changed."""
    if len(changed) > PATCH_MAX or (state.sort not in TIMELESS and state.sort not in state.metrics):
        return None
    pos = {e.run_id: i for i, e in enumerate(entries)}
    pinned = set(state.pinned)
    head = sum(1 for r in state.pinned if r in pos)  # (the pins lead, in pin order, whatever the filter)
    if any(e.run_id not in pos for e in prev) or len(prev) < head:
        return None
    keep = parse_filter(state.pattern)
    out = [e for e in prev[head:] if e.run_id not in changed]
    for rid in sorted(changed, key=lambda r: pos.get(r, -1)):
        if rid in pinned:
            if not any(e.run_id == rid for e in prev[:head]):
                return None  # a pin that comes back
            continue
        if rid not in pos or not keep(e := entries[pos[rid]]):
            continue
        rank = _rank(e, pos, state, now, judge)
        lo, hi = 0, len(out)
        while lo < hi:
            mid = (lo + hi) // 2
            if _before(_rank(out[mid], pos, state, now, judge), rank, state.reverse):
                lo = mid + 1
            else:
                hi = mid
        out.insert(lo, e)
    return [*prev[:head], *out]


def _rank(e: Entry, pos: dict[str, int], state: ListState, now: float, judge: Judge) -> tuple[int, Any, int]:
    """(runs without the sort column's value after those with one, the value, the run's place in the index)."""
    has, value = sort_key(e, state.sort, state, now, judge)
    return has, value if has == 0 else None, pos[e.run_id]


def _before(a: tuple[int, Any, int], b: tuple[int, Any, int], reverse: bool) -> bool:
    """Does ``a`` come before ``b`` in ``shown``'s order (a stable sort of the runs in index order, by value)?"""
    if a[0] != b[0]:
        return a[0] < b[0]
    if a[0] == 0 and a[1] != b[1]:
        return bool(a[1] > b[1]) if reverse else bool(a[1] < b[1])
    return a[2] < b[2]
