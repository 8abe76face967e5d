"""RunStore: the columnar table of one run (one metrics file). Pure; the contract every viewer reads.

Storage: one ``array('d')`` per numeric key (NaN where absent; JSON null is a present NaN), one list per other key
(text, bools, ``(n, d)`` fractions, lists; None where absent), a presence bitmap (``bytearray``, 1 = present) only
for columns that ever had a gap, ``array('q')`` steps kept ascending, ``array('d')`` wall-clock times.

Placement of a row with step ``s`` (the rows of one parsed chunk arrive together, in file order):

- ``s`` above every stored step: appended (the hot path: a whole chunk at once, column by column);
- ``s`` equal to the last stored step: merged into that row, later values winning per key (tinker's eval line,
  torchtune's one-metric lines);
- ``s`` equal to an earlier stored step and sharing at least half of its metric keys with that row: a *resume*
  (a retrain restart appends again from its checkpoint; a counter that restarts at 0): rows from ``s`` on are dropped,
  the new row appended, ``s`` recorded in ``resumes``; with mostly other keys it is merged into that row instead;
- ``s`` below the last step and not stored: inserted in order (out-of-order writers).

Threads: one writer (the follower thread) mutates a store, any number of readers read it. Every mutation happens
under ``store.lock`` (an RLock) and is one parsed chunk (a *batch*); ``version`` increments after each batch,
``generation`` after each reset (file truncated, replaced, rewritten). Every read method takes the lock too, so a
single call is consistent; hold ``with store.lock:`` around several calls that must agree with each other (a batch
holds the lock for well under a millisecond per few hundred rows). ``steps``, ``wall_times`` and ``column()``
return copies (a memcpy for numeric columns), safe to keep across batches.
"""

from __future__ import annotations

import math
import struct
import threading
import time
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from operator import lt
from pathlib import Path
from typing import Any

from steptable.ingest.parse import MISSING, NONFINITE, BadLine, norm_value

NAN = math.nan
WALL_KEYS = ("ts", "timestamp", "_timestamp", "time", "wall_time")
#: keys that say nothing about whether two rows are the same measurement (resume vs merge test)
_BOOKKEEPING = frozenset(WALL_KEYS) | {"arm", "run"}
MAX_BAD_KEPT = 1000
#: what a numeric column may receive: numbers, null, absent cells, non-finite spellings (checked per value)
_NUMERIC_CELLS = frozenset({int, float, type(None), type(MISSING), str})
#: the gaps of a numeric column as floats (dict.get in C is ~5x faster than a Python test per cell)
_GAPS: dict[Any, float] = {None: NAN, MISSING: NAN, "NaN": NAN, "Infinity": math.inf, "-Infinity": -math.inf}


@dataclass(slots=True)
class Parsed:
    """What a parser hands a store: rows in file order as rows or as columns (MISSING marks an absent cell)."""

    steps: Sequence[int]
    rows: list[dict[str, Any]] | None = None
    cols: dict[str, Sequence[Any]] | None = None
    #: with ``cols``: keys whose values the parser guarantees to be ints (or None / MISSING / non-finite sentinels);
    #: None when the parser guarantees nothing about types (the store then checks)
    int_keys: frozenset[str] | None = None
    bad: list[BadLine] = field(default_factory=list)
    step_key: str | None = None


def epoch_seconds(v: Any) -> float | None:
    """A unix time in seconds from a cell that looks like one (seconds or milliseconds since 2001..2286), else None."""
    if type(v) is float or type(v) is int:
        if 1e9 <= v < 1e10:
            return float(v)
        if 1e12 <= v < 1e13:
            return v / 1000.0
    return None


def _as_float(v: Any) -> float | None:
    """A numeric cell as float; None when the value is not a number (the column must become a list)."""
    t = type(v)
    if t is float:
        return v  # type: ignore[no-any-return]
    if t is int:
        try:
            return float(v)
        except OverflowError:
            return math.inf if v > 0 else -math.inf
    if v is None or v is MISSING:
        return NAN
    if t is str and len(v) <= 9:
        return NONFINITE.get(v.lower())
    return None


class RunStore:
    """Columnar per-run storage with a step index. See the module docstring for placement and thread rules."""

    def __init__(self, run: str, path: str | Path, kind: str = "jsonl", arm: str = "") -> None:
        self.run = run
        self.path = Path(path)
        self.kind = kind
        self.arm = arm
        self.lock = threading.RLock()
        self.version = 0
        self.generation = 0
        self.side_files: dict[str, list[Path]] = {}
        self.meta: dict[str, Any] = {}
        self.bad: list[BadLine] = []
        self._bad_count = 0
        self._clear()

    def _clear(self) -> None:
        self.keys: list[str] = []
        self.resumes: list[int] = []
        self.step_key: str | None = None
        self.last_update: float | None = None
        self._num: dict[str, array[float]] = {}
        self._obj: dict[str, list[Any]] = {}
        self._pres: dict[str, bytearray] = {}
        self._ints: set[str] = set()
        self._steps: array[int] = array("q")
        self._walls: array[float] = array("d")
        self._wall_key: str | None = None

    def __repr__(self) -> str:
        return f"RunStore({self.run!r}, arm={self.arm!r}, kind={self.kind!r}, rows={len(self)}, keys={len(self.keys)})"

    # --- reading ------------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._steps)

    def __contains__(self, key: object) -> bool:
        return key in self._num or key in self._obj

    @property
    def steps(self) -> array[int]:
        with self.lock:
            return self._steps[:]

    @property
    def wall_times(self) -> array[float]:
        """Per-row unix time: the row's own ``ts``/``timestamp``/... when it looks like one, else ingestion time."""
        with self.lock:
            return self._walls[:]

    @property
    def bad_count(self) -> int:
        return self._bad_count

    def step_at(self, i: int) -> int:
        return self._steps[i]

    def is_numeric(self, key: str) -> bool:
        return key in self._num

    def is_integer(self, key: str) -> bool:
        """Numeric and every present value so far was an integer (``value``/``row`` then give ints)."""
        return key in self._ints

    def column(self, key: str) -> Sequence[Any]:
        """A copy aligned with ``steps``: floats (NaN where absent) for numeric keys, else values or None.

        An unknown key gives a column of None (a run that lacks a key shows it as missing, not as an error)."""
        with self.lock:
            arr = self._num.get(key)
            if arr is not None:
                return arr[:]
            col = self._obj.get(key)
            return col[:] if col is not None else [None] * len(self._steps)

    def value(self, i: int, key: str) -> Any:
        """One cell: None when absent, else the stored value (int for integer columns, NaN floats as such)."""
        with self.lock:
            pres = self._pres.get(key)
            if pres is not None and not pres[i]:
                return None
            arr = self._num.get(key)
            if arr is not None:
                v = arr[i]
                return int(v) if key in self._ints and math.isfinite(v) else v
            col = self._obj.get(key)
            return col[i] if col is not None else None

    def row(self, i: int) -> dict[str, Any]:
        """The keys present in row ``i`` with their values (as ``value`` gives them)."""
        with self.lock:
            out: dict[str, Any] = {}
            for key in self.keys:
                pres = self._pres.get(key)
                if pres is not None and not pres[i]:
                    continue
                arr = self._num.get(key)
                if arr is not None:
                    v = arr[i]
                    out[key] = int(v) if key in self._ints and math.isfinite(v) else v
                else:
                    out[key] = self._obj[key][i]
            return out

    def rows(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [self.row(i) for i in range(*slice(start, stop).indices(len(self._steps)))]

    def index_of_step(self, step: int) -> int:
        """Index of the first row whose step is >= ``step`` (``len(self)`` when none): bisect on the step index."""
        with self.lock:
            return bisect_left(self._steps, step)

    # --- writing (the follower thread) --------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every row (the file was truncated or replaced); bad lines of the old content are kept."""
        with self.lock:
            self._clear()
            self.generation += 1
            self.version += 1

    def add_bad(self, lines: Iterable[BadLine]) -> None:
        with self.lock:
            for b in lines:
                self._bad_count += 1
                if len(self.bad) < MAX_BAD_KEPT:
                    self.bad.append(b)
            self.version += 1

    def add(self, parsed: Parsed, now: float | None = None) -> None:
        """Apply one parsed chunk as one batch."""
        now = time.time() if now is None else now
        with self.lock:
            if parsed.bad:
                self.add_bad(parsed.bad)
            if parsed.step_key is not None:
                self.step_key = parsed.step_key
            steps = parsed.steps
            if steps:
                if parsed.cols is not None and self._appendable(steps):
                    self._append(steps, parsed.cols, parsed.int_keys, now)
                else:
                    rows = parsed.rows if parsed.rows is not None else _cols_to_rows(parsed.cols or {}, len(steps))
                    self._add_rows(steps, rows, now)
            self.version += 1

    def _appendable(self, steps: Sequence[int]) -> bool:
        if self._steps and steps[0] <= self._steps[-1]:
            return False
        return all(map(lt, steps, islice(steps, 1, None)))

    def _add_rows(self, steps: Sequence[int], rows: list[dict[str, Any]], now: float) -> None:
        pend_steps: list[int] = []
        pend_rows: list[dict[str, Any]] = []
        last = self._steps[-1] if self._steps else None
        for step, row in zip(steps, rows, strict=True):
            if last is None or step > last:
                pend_steps.append(step)
                pend_rows.append(row)
                last = step
            elif pend_steps and step == pend_steps[-1]:
                pend_rows[-1] = {**pend_rows[-1], **row}
            else:
                if pend_steps:
                    self._append(pend_steps, _rows_to_cols(pend_rows), None, now)
                    pend_steps, pend_rows = [], []
                self._place(step, row, now)
                last = self._steps[-1]
        if pend_steps:
            self._append(pend_steps, _rows_to_cols(pend_rows), None, now)

    def _place(self, step: int, row: dict[str, Any], now: float) -> None:
        n = len(self._steps)
        i = bisect_left(self._steps, step)
        if i < n and self._steps[i] == step:
            if i < n - 1 and self._shares_keys(i, row):
                self._truncate(i)
                self.resumes.append(step)
                self._append([step], _rows_to_cols([row]), None, now)
            else:
                self._merge(i, row, now)
            return
        for key in self.keys:  # out of order: an empty row at i, then fill it in
            pres = self._presence(key)
            pres.insert(i, 0)
            arr = self._num.get(key)
            if arr is not None:
                arr.insert(i, NAN)
            else:
                self._obj[key].insert(i, None)
        self._walls.insert(i, now)
        self._steps.insert(i, step)
        self._merge(i, row, now)

    def _shares_keys(self, i: int, row: dict[str, Any]) -> bool:
        metric = [k for k in row if k != self.step_key and k not in _BOOKKEEPING]
        if not metric:
            return False
        shared = 0
        for k in metric:
            if k in self._num or k in self._obj:
                pres = self._pres.get(k)
                shared += pres is None or pres[i] == 1
        return shared * 2 >= len(metric)

    def _truncate(self, i: int) -> None:
        for arr in self._num.values():
            del arr[i:]
        for col in self._obj.values():
            del col[i:]
        for pres in self._pres.values():
            del pres[i:]
        del self._steps[i:]
        del self._walls[i:]

    def _merge(self, i: int, row: dict[str, Any], now: float) -> None:
        n = len(self._steps)
        for key, v in row.items():
            if key not in self._num and key not in self._obj:
                self._create(key, v, n)
            arr = self._num.get(key)
            if arr is not None:
                f = _as_float(v)
                if f is None:
                    self._to_obj(key)
                else:
                    arr[i] = f
                    if type(v) is not int and key in self._ints and math.isfinite(f):
                        self._ints.discard(key)
            col = self._obj.get(key)
            if col is not None:
                col[i] = norm_value(v)
            pres = self._pres.get(key)
            if pres is not None:
                pres[i] = 1
        wall = self._row_wall(row)
        self._walls[i] = wall if wall is not None else now
        self._note_row(row.get("arm"), self._walls[i])

    # --- columns ------------------------------------------------------------------------------------------------

    def _presence(self, key: str) -> bytearray:
        pres = self._pres.get(key)
        if pres is None:
            pres = self._pres[key] = bytearray(b"\x01") * len(self._steps)
        return pres

    def _create(self, key: str, sample: Any, base: int) -> None:
        """A new column with ``base`` absent cells; numeric unless ``sample`` says otherwise."""
        if sample is MISSING or sample is None or (_as_float(sample) is not None and type(sample) is not bool):
            self._num[key] = array("d", [NAN]) * base
            if type(sample) is int:
                self._ints.add(key)
        else:
            self._obj[key] = [None] * base
        if base:
            self._pres[key] = bytearray(base)
        self.keys.append(key)

    def _to_obj(self, key: str) -> None:
        arr = self._num.pop(key)
        ints = key in self._ints
        self._ints.discard(key)
        col: list[Any] = [int(v) if ints and math.isfinite(v) else v for v in arr]
        pres = self._pres.get(key)
        if pres is not None:
            col = [v if p else None for v, p in zip(col, pres, strict=True)]
        self._obj[key] = col

    def _append(self, steps: Sequence[int], cols: Mapping[str, Sequence[Any]], int_keys: frozenset[str] | None,
                now: float) -> None:
        base = len(self._steps)
        n = len(steps)
        packer = _doubles(n)
        num, pres, ints = self._num, self._pres, self._ints
        for key, vals in cols.items():
            arr = num.get(key)
            if arr is not None and int_keys is not None:  # the hot path, inlined: one C call per column
                try:
                    arr.frombytes(packer.pack(*vals))
                except (struct.error, OverflowError):
                    pass
                else:
                    if key in ints and key not in int_keys:
                        ints.discard(key)
                    if key in pres:
                        pres[key].extend(b"\x01" * n)
                    continue
            if arr is None and key not in self._obj:
                self._create(key, next((v for v in vals if v is not MISSING and v is not None), MISSING), base)
            if key in num:
                self._extend_num(key, vals, int_keys)
            if key in self._obj:  # (also after _extend_num turned the column into a list)
                self._extend_obj(key, vals)
        if len(cols) < len(self.keys):
            for key in self.keys:
                if key not in cols:
                    self._presence(key).extend(bytes(n))
                    arr = num.get(key)
                    if arr is not None:
                        arr.extend(array("d", [NAN]) * n)
                    else:
                        self._obj[key].extend([None] * n)
        walls = self._col_walls(cols, base, n, now)
        self._walls.extend(walls)
        arms = cols.get("arm")
        self._note_row(next((a for a in reversed(arms) if type(a) is str), None) if arms else None, walls[-1])
        self._steps.extend(array("q", steps) if type(steps) is not array else steps)  # last: len() grows once

    def _extend_num(self, key: str, vals: Sequence[Any], int_keys: frozenset[str] | None) -> None:
        """Numeric cells that did not pack as they are: nulls, non-finite sentinels, absent cells (or from rows)."""
        arr = self._num[key]
        if int_keys is None:  # nothing guaranteed: bools would pass as 1.0, so look at the types first
            types = set(map(type, vals))
            if bool in types or not types <= _NUMERIC_CELLS:
                self._to_obj(key)
                return
            all_int = float not in types or all(type(v) is not float or not math.isfinite(v) for v in vals)
        else:
            all_int = key in int_keys
        conv = list(map(_GAPS.get, vals, vals))  # None / MISSING / "NaN"... -> float, in C; the rest as is
        try:
            arr.frombytes(_doubles(len(conv)).pack(*conv))
        except (struct.error, OverflowError):  # text that is not a number, another NaN spelling, a huge int
            floats = [_as_float(v) for v in vals]
            if None in floats:
                self._to_obj(key)
                return
            arr.fromlist(floats)  # type: ignore[arg-type]  # no None left
        if not all_int:
            self._ints.discard(key)
        if MISSING in vals:
            self._presence(key).extend(bytes(v is not MISSING for v in vals))
        elif key in self._pres:
            self._pres[key].extend(b"\x01" * len(vals))

    def _extend_obj(self, key: str, lst: Sequence[Any]) -> None:
        col = self._obj[key]
        if MISSING in lst:
            self._presence(key).extend(bytes(v is not MISSING for v in lst))
            col.extend([None if v is MISSING else norm_value(v) for v in lst])
            return
        col.extend(map(norm_value, lst))
        if key in self._pres:
            self._pres[key].extend(b"\x01" * len(lst))

    # --- wall times and arm -------------------------------------------------------------------------------------

    def _row_wall(self, row: dict[str, Any]) -> float | None:
        keys = (self._wall_key,) if self._wall_key is not None else WALL_KEYS
        for k in keys:
            if k is not None and k in row:
                t = epoch_seconds(row[k])
                if t is not None:
                    self._wall_key = k
                    return t
        return None

    def _col_walls(self, cols: Mapping[str, Sequence[Any]], base: int, n: int, now: float) -> array[float]:
        keys = (self._wall_key,) if self._wall_key is not None else WALL_KEYS
        for k in keys:
            vals = cols.get(k) if k is not None else None
            if vals and any(epoch_seconds(v) is not None for v in islice(vals, 0, 8)):
                self._wall_key = k
                arr = self._num.get(k)
                if arr is not None:  # usually: unix seconds throughout, checked in C
                    seg = arr[base:]
                    if len(seg) == n and 1e9 <= min(seg) and max(seg) < 1e10 and not math.isnan(sum(seg)):
                        return seg
                return array("d", [t if (t := epoch_seconds(v)) is not None else now for v in vals])
        return array("d", [now]) * n

    def _note_row(self, arm: Any, wall: float) -> None:
        if type(arm) is str and arm:
            self.arm = arm
        self.last_update = wall


@lru_cache(maxsize=64)
def _doubles(n: int) -> struct.Struct:
    return struct.Struct(f"{n}d")


def _rows_to_cols(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    if len(rows) == 1:
        return {k: [v] for k, v in rows[0].items()}
    keys = dict.fromkeys(k for r in rows for k in r)
    return {k: [r.get(k, MISSING) for r in rows] for k in keys}


def _cols_to_rows(cols: dict[str, Sequence[Any]], n: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, vals in cols.items():
        for r, v in zip(rows, vals, strict=True):
            if v is not MISSING:
                r[key] = v
    return rows
