"""What the app knows about a run besides its rows: the store protocol it reads, sparklines, summaries, stalls.

Pure (no textual): the widgets call these, and tests call them directly.
"""

from __future__ import annotations

import itertools
import math
import statistics
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from steptable.table.columns import Col
from steptable.table.formatting import sanitize, to_float

if TYPE_CHECKING:
    from steptable.ingest.pyramid import Pyramid


class Bad(Protocol):
    path: Any
    lineno: int
    reason: str


class Store(Protocol):
    """The part of ``steptable.ingest.RunStore`` the app reads (read-only)."""

    keys: list[str]

    @property
    def run(self) -> str: ...

    @property
    def arm(self) -> str: ...

    @property
    def path(self) -> Any: ...

    @property
    def bad(self) -> Sequence[Any]: ...

    def bad_lines(self) -> tuple[Sequence[Any], Sequence[Any], int]: ...

    @property
    def wall_times(self) -> Sequence[float]: ...

    def wall_times_between(self, start: int = 0, stop: int | None = None) -> Sequence[float]: ...

    @property
    def last_update(self) -> float | None: ...

    @property
    def side_files(self) -> Mapping[str, Sequence[Path]]: ...

    @property
    def generation(self) -> int: ...

    @property
    def resumes(self) -> Sequence[int]: ...

    @property
    def version(self) -> int: ...

    @property
    def edit_count(self) -> int: ...

    def edits_since(self, version: int) -> list[tuple[int, frozenset[str] | None]]: ...

    def lost_since(self, version: int) -> int | None: ...

    @property
    def bad_count(self) -> int: ...

    @property
    def steps(self) -> Sequence[int]: ...

    def __len__(self) -> int: ...

    def column(self, key: str) -> Sequence[Any]: ...

    def cells_between(self, key: str, start: int = 0, stop: int | None = None) -> list[Any]: ...

    def row(self, i: int) -> dict[str, Any]: ...

    def value(self, i: int, key: str) -> Any: ...

    def step_at(self, i: int) -> int: ...

    def index_of_step(self, step: int) -> int: ...


SPARK_CHARS = "▁▂▃▄▅▆▇█"


def finite(values: Sequence[Any]) -> list[float]:
    """The finite ``to_float`` values of ``values``, in order. The usual columns (floats, ints, (n, d) pairs of
    numbers, None where a row lacks the key) take C loops or one comprehension, not a call per value: the chart
    reads the whole column the first time it is picked."""
    if isinstance(values, array) and values.typecode == "d":
        return [x for x in values if x - x == 0.0]  # (nan and inf fail x - x == 0)
    types = set(map(type, values))
    if type(None) in types:  # rows without the key
        values = [v for v in values if v is not None]
        types.discard(type(None))
    xs: Iterable[float] = map(to_float, values)
    if types <= {float, int, bool}:
        xs = map(float, values)  # (what to_float gives for these)
    elif types <= {list, tuple}:
        try:  # to_float of a pair, inlined: n / d, nan for d == 0 (an item float() refuses: value by value)
            xs = [float(n) / d if (d := float(d_)) else math.nan for n, d_ in values]
        except (TypeError, ValueError, OverflowError):
            pass
    try:
        return [x for x in xs if x - x == 0.0]
    except OverflowError:  # an int past float range: to_float reads it as inf
        return [x for x in map(to_float, values) if x - x == 0.0]


def downsample(values: Sequence[Any], buckets: int, per_bucket: int = 16, n: int | None = None) -> list[float]:
    """``buckets`` means over equal slices of ``values`` (nan where a slice has no finite value).

    A slice longer than ``per_bucket`` is read at ``per_bucket`` evenly spaced points, so the cost stays
    O(buckets * per_bucket) on a million-row column. ``n`` reads only the first n values.
    """
    n = len(values) if n is None else min(n, len(values))
    if n == 0 or buckets <= 0:
        return []
    if n <= buckets:
        return [to_float(values[i]) for i in range(n)]
    out: list[float] = []
    for b in range(buckets):
        lo, hi = n * b // buckets, n * (b + 1) // buckets
        stride = max((hi - lo) // per_bucket, 1)
        xs = finite(values[lo:hi:stride])
        out.append(sum(xs) / len(xs) if xs else math.nan)
    return out


#: a sparkline's cell whose rows hold a NaN / inf the run logged
SPARK_BAD = "×"


def extremes(pyramid: Pyramid, rows: int, buckets: int) -> list[float]:
    """A sparkline's values: the max of every row of each of ``buckets`` equal slices of the first ``rows`` rows
    (a one-point spike shows at full height), ``inf`` where a slice holds a NaN / inf the run logged (drawn as
    SPARK_BAD), nan where it holds no value. One cell per row when there are fewer rows than buckets."""
    from steptable.ingest.pyramid import even_edges

    rows = min(rows, len(pyramid))
    bs = pyramid.buckets(even_edges(0, rows, min(buckets, rows)))
    return [math.inf if b.bad else math.nan if b.empty else b.hi for b in bs]


def spark(values: Sequence[float], lo: float | None = None, hi: float | None = None) -> str:
    """One block character per value, scaled between ``lo`` and ``hi`` (their min / max by default); nan -> space."""
    xs = [v for v in values if math.isfinite(v)]
    if not xs:
        return " " * len(values)
    lo = min(xs) if lo is None else lo
    hi = max(xs) if hi is None else hi
    span = hi - lo
    top = len(SPARK_CHARS) - 1
    chars = []
    for v in values:
        if v == math.inf:
            chars.append(SPARK_BAD)
        elif not math.isfinite(v):
            chars.append(" ")
        elif span <= 0:
            chars.append(SPARK_CHARS[top // 2])
        else:
            chars.append(SPARK_CHARS[min(max(round((v - lo) / span * top), 0), top)])
    return "".join(chars)


@dataclass
class Summary:
    """min / max of a column's finite values and its latest logged value (nan and inf too: a run that diverged
    must not look healthy), kept up to date incrementally as rows are appended."""

    seen: int = 0
    lo: float = math.inf
    hi: float = -math.inf
    last: float = math.nan
    mark: Any = None
    version: int = -1  # the store's version when last updated (for the edits after it)

    def update(
        self,
        values: Sequence[Any],
        n: int | None = None,
        mark: Any = None,
        restart: bool = False,
        logged: Callable[[int], bool] | None = None,
    ) -> Summary:
        """Start over when ``mark`` changes (a rewrite of the file, a resume) or with ``restart`` (a row already
        seen changed in this column); else fold in the new rows only. ``logged(i)`` tells a nan the run logged in
        row i from a row without the key (a numeric column holds nan for both); without it a nan counts as
        logged. A row whose value is None lacks the key."""
        n = len(values) if n is None else min(n, len(values))
        if n < self.seen or mark != self.mark or restart:
            self.seen, self.lo, self.hi, self.last, self.mark = 0, math.inf, -math.inf, math.nan, mark
        xs = finite(values[self.seen : n])
        if xs:
            self.lo, self.hi = min(self.lo, min(xs)), max(self.hi, max(xs))
        for i in range(n - 1, self.seen - 1, -1):  # newest first: a run that logs the key every row stops at once
            v = values[i]
            if v is None:
                continue
            x = to_float(v)
            if math.isnan(x) and logged is not None and not logged(i):
                continue
            self.last = x
            break
        self.seen = n
        return self


@dataclass
class Summaries:
    """Summary per (run, key)."""

    items: dict[tuple[str, str], Summary] = field(default_factory=dict)

    def get(
        self,
        run: str,
        key: str,
        values: Sequence[Any],
        n: int | None = None,
        store: Store | None = None,
        version: int | None = None,
    ) -> Summary:
        """The summary of ``values``: the column ``key`` of ``store`` as it was at ``version`` (read before the
        values were copied, so an edit that lands in between is seen next time), whose edits say when to start
        over."""
        s = self.items.get((run, key))
        if s is None:
            s = self.items[(run, key)] = Summary()
        if store is None:
            return s.update(values, n)
        restart = s.version >= 0 and (
            store.lost_since(s.version) is not None
            or any(keys is None or key in keys for _, keys in store.edits_since(s.version))
        )  # a merge of other keys (an eval line) leaves this column as it was: no O(rows) pass on the UI thread
        s.version = store.version if version is None else version
        return s.update(values, n, (store.generation, len(store.resumes)), restart, lambda i: _logged(store, i, key))


def _logged(store: Store, i: int, key: str) -> bool:
    try:
        return store.value(i, key) is not None
    except IndexError:  # the follower emptied the store since the column was copied
        return False


def ended(store: Store) -> bool:
    """The run's StepLogger was closed (its steptable.json says so): the run ended, it cannot stall."""
    from steptable.table.runinfo import closed_at

    meta = getattr(store, "meta", None)
    return isinstance(meta, dict) and closed_at(meta.get("runinfo")) is not None


def change_mark(store: Store) -> tuple[int, int, int]:
    """What changes when rows a viewer has seen may have changed, apart from appends: a rewrite of the file, a
    resume from a checkpoint, a row merged into or inserted among the stored ones."""
    return store.generation, len(store.resumes), store.edit_count


#: the rows a run's usual interval is read from (a stall check copies no more of its clock than these)
INTERVAL_WINDOW = 50


def usual_interval(wall_times: Sequence[float], window: int = INTERVAL_WINDOW) -> float | None:
    """Median seconds between the last ``window`` rows, or None with fewer than 5 intervals."""
    ts = [t for t in wall_times[-(window + 1):] if t is not None and math.isfinite(t)]
    dts = [b - a for a, b in itertools.pairwise(ts) if b > a]
    return statistics.median(dts) if len(dts) >= 5 else None


def stalled_for(
    wall_times: Sequence[float], last_update: float | None, now: float, factor: float = 10.0, min_s: float = 60.0
) -> float | None:
    """Seconds since the last row when that is much longer than the run's usual row interval, else None."""
    if last_update is None:
        return None
    med = usual_interval(wall_times)
    gap = now - last_update
    if med is None or not gap > max(factor * med, min_s):
        return None
    return gap


def display_order(cols: Sequence[Col], pinned: Sequence[str], step_key: str = "step") -> tuple[Col, ...]:
    """The step column, then pinned columns (in pin order), then the rest in layout order."""
    by = {c.key: c for c in cols}
    head = [by[step_key]] if step_key in by else list(cols[:1])
    keys = {c.key for c in head}
    pins = [by[k] for k in pinned if k in by and k not in keys]
    keys |= {c.key for c in pins}
    return (*head, *pins, *(c for c in cols if c.key not in keys))


def filter_globs(pattern: str) -> list[str]:
    """The globs of a comma/space separated filter (``kl*,rew*``); a pattern without glob characters matches as a
    substring (``/loss`` finds ``actor/pg_loss``)."""
    return [p if any(ch in p for ch in "*?[") else f"*{p}*" for p in pattern.replace(",", " ").split()]


def key_matches(key: str, glob: str) -> bool:
    """Does ``key`` match ``glob`` as logged or as shown (made inert, as a prompt prefilled with keys shows them)?
    A glob that is the key itself names it too: a key holding glob characters (``acc[0]``, ``loss*``) as written."""
    if key == glob or fnmatchcase(key, glob):
        return True
    shown = sanitize(key)
    return shown == glob or fnmatchcase(shown, glob)


def filter_cols(cols: Sequence[Col], pattern: str, keep: Sequence[str] = ()) -> tuple[Col, ...]:
    """Columns whose key or header matches the filter ``pattern`` (:func:`filter_globs`); ``keep`` always stays."""
    globs = filter_globs(pattern)
    if not globs:
        return tuple(cols)
    return tuple(
        c
        for i, c in enumerate(cols)
        if i == 0 or c.key in keep or any(key_matches(c.key, g) or fnmatchcase(c.header.strip(), g) for g in globs)
    )


def arm_label(store: Store, dup_arms: set[str]) -> str:
    """The arm name, or the run id when two runs share an arm name."""
    arm = store.arm or store.run
    return store.run if arm in dup_arms else arm
