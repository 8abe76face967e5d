"""ColumnTable: aligned columns, steps and wall times -- the storage under RunStore. Pure; no locking, no policy.

One ``array('d')`` per numeric key (NaN where absent; JSON null is a present NaN), one list per other key (text,
bools, ``(n, d)`` fractions, lists; None where absent), a presence bitmap (``bytearray``, 1 = present) only for
columns that ever had a gap, ``array('q')`` steps, ``array('d')`` wall-clock times. No per-row dicts and no per-cell
float objects are kept: a 100k x 43 all-numeric run holds ~34 MB of doubles and little else.

The hot path appends a parsed chunk column by column: ``struct.pack`` of a column's values into its array (one C
call); a column whose values are not all numbers (nulls, non-finite sentinels, absent cells) takes a slower path,
and one that receives text or bools becomes a list (what a numeric cell is: :mod:`steptable.ingest.numcells`).

A *projection* (``keep``, a test of a key) stores the values of the kept keys only: a key it leaves out is still one
of the table's ``keys``, in its place, and holds one byte a row (absent, present but not measured, measured), which
is all that where rows go (steptable.ingest.placement) asks of it; its cells read as absent.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import islice
from typing import Any

from steptable.ingest.cellmarks import ABSENT, MEASURED, mark, marks_of, measured
from steptable.ingest.keycut import first_present, past_room
from steptable.ingest.numcells import EXACT_INT, GAPS, NUMERIC_CELLS, as_float, doubles
from steptable.ingest.parse import MISSING, norm_value
from steptable.ingest.parsed import WALL_KEYS, epoch_seconds

NAN = math.nan
#: distinct keys a run keeps. Every column holds a cell for every row, so a log that names a new key on every row
#: (per-sample metrics: sample/0, sample/1, ...) would cost rows x keys cells: gigabytes for a file of a few MB.
#: Keys first seen after this many are not stored (RunStore reports it once); real trainers log tens to hundreds. Of
#: a batch that brings more new keys than there is room for, those first by steptable.ingest.keycut are kept.
MAX_KEYS = 2000
#: a text column shares one ``str`` among its cells for up to this many distinct texts of up to SHORT_TEXT characters
#: (a tag logged on every row costs a pointer a row, not a string object: 8 bytes, not about 60)
SHARED_TEXTS = 256
SHORT_TEXT = 64


class ColumnTable:
    """Rows as aligned columns. Subclassed by RunStore, which adds locking, placement and run metadata."""

    #: the projection: which keys' values are stored (None: every key's)
    keep: Callable[[str], bool] | None = None

    def __init__(self) -> None:
        self._clear_table()

    def _clear_table(self) -> None:
        self.keys: list[str] = []
        self._num: dict[str, array[float]] = {}
        self._obj: dict[str, list[Any]] = {}
        self._pres: dict[str, bytearray] = {}
        self._ints: set[str] = set()
        self._steps: array[int] = array("q")
        self._walls: array[float] = array("d")
        self._wall_key: str | None = None
        self._texts: dict[str, dict[Any, Any]] = {}  # text column -> its shared strings (SHARED_TEXTS)
        self._gone: dict[str, bytearray] = {}  # keys the projection leaves out -> a mark a row
        self.dropped_keys = 0  # cells of keys past MAX_KEYS not stored
        self.first_dropped: str | None = None

    def __len__(self) -> int:
        return len(self._steps)

    def __contains__(self, key: object) -> bool:
        return key in self._num or key in self._obj

    # --- cells --------------------------------------------------------------------------------------------------

    def _cell(self, i: int, key: str) -> Any:
        pres = self._pres.get(key)
        if pres is not None and not pres[i]:
            return None
        arr = self._num.get(key)
        if arr is not None:
            v = arr[i]
            return int(v) if key in self._ints and math.isfinite(v) else v
        col = self._obj.get(key)
        if col is None:
            return None
        v = col[i]
        return NAN if v is None else v  # a present None is a logged null: not finite, unlike an absent cell

    def _measured(self, i: int, key: str) -> bool:
        """Row ``i`` holds a measured value of ``key`` (kept or left out by the projection)."""
        marks = self._gone.get(key)
        if marks is not None:
            return marks[i] == MEASURED
        return self._present(i, key) and measured(self._cell(i, key))

    def keep_every_key(self) -> list[str]:
        """From now on store every key's values (a reader that finds it needs a key the projection left out): such
        a key's cells of the rows held so far read as absent. Returns those keys."""
        self.keep = None
        gone, self._gone = self._gone, {}
        n = len(self._steps)
        for key in gone:
            self._num[key] = array("d", [NAN]) * n
            self._pres[key] = bytearray(n)
            self._ints.add(key)  # (until a value that is not an integer arrives, as for a new column)
        return list(gone)

    def cells_in(self, i: int) -> int:
        """How many keys row ``i`` holds a cell of (a logged null or NaN too), their values kept or left out by the
        projection: the same count whichever keys' values the file was read for."""
        return sum(1 for key in self.keys if self._present(i, key))

    def held_keys(self) -> list[str]:
        """The keys whose values are stored (all of ``keys`` but those the projection leaves out)."""
        return [k for k in self.keys if k not in self._gone]

    def _row(self, i: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in self.keys:
            pres = self._pres.get(key)
            if pres is not None and not pres[i]:
                continue
            arr = self._num.get(key)
            if arr is not None:
                v = arr[i]
                out[key] = int(v) if key in self._ints and math.isfinite(v) else v
            elif key in self._obj:  # (not a key the projection leaves out)
                v = self._obj[key][i]
                out[key] = NAN if v is None else v  # a logged null (present): not finite
        return out

    def _present(self, i: int, key: str) -> bool:
        if key not in self._num and key not in self._obj:
            marks = self._gone.get(key)
            return marks is not None and marks[i] != ABSENT
        pres = self._pres.get(key)
        return pres is None or pres[i] == 1

    # --- rows in place ------------------------------------------------------------------------------------------

    def _truncate(self, i: int) -> None:
        for arr in self._num.values():
            del arr[i:]
        for col in self._obj.values():
            del col[i:]
        for pres in self._pres.values():
            del pres[i:]
        for marks in self._gone.values():
            del marks[i:]
        del self._steps[i:]
        del self._walls[i:]

    def _insert_empty(self, i: int, step: int, wall: float) -> None:
        """An empty row at index ``i`` (every cell absent)."""
        for key in self.keys:
            if (marks := self._gone.get(key)) is not None:
                marks.insert(i, ABSENT)
                continue
            self._presence(key).insert(i, 0)
            arr = self._num.get(key)
            if arr is not None:
                arr.insert(i, NAN)
            else:
                self._obj[key].insert(i, None)
        self._walls.insert(i, wall)
        self._steps.insert(i, step)

    def _merge(self, i: int, row: dict[str, Any], now: float) -> None:
        n = len(self._steps)
        over = self._over_cap(row.keys())
        for key, v in row.items():
            if key not in self._num and key not in self._obj:
                if key in over:
                    continue
                self._create(key, v, n)
                if (marks := self._gone.get(key)) is not None:
                    marks[i] = mark(v)
                    continue
            arr = self._num.get(key)
            if arr is not None:
                f = as_float(v)
                if f is None or (type(v) is int and not -EXACT_INT <= v <= EXACT_INT):
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
        if wall is not None:  # cells without a clock (a late eval line) keep the row's time: not the read's
            self._walls[i] = wall

    # --- columns ------------------------------------------------------------------------------------------------

    def _presence(self, key: str) -> bytearray:
        pres = self._pres.get(key)
        if pres is None:
            pres = self._pres[key] = bytearray(b"\x01") * len(self._steps)
        return pres

    def _drop_key(self, key: str) -> None:
        self.dropped_keys += 1
        if self.first_dropped is None:
            self.first_dropped = key

    def _over_cap(self, keys: Collection[str], cols: Mapping[str, Sequence[Any]] | None = None) -> set[str]:
        """The keys of a batch (``keys``; of one row, or the columns ``cols`` of rows) not stored for want of room
        (:func:`~steptable.ingest.keycut.past_room`: by the row each is first in, then by rank, so that a file cut
        into other batches keeps the same keys), counted, the first left out named in ``first_dropped``."""
        if len(self.keys) + len(keys) <= MAX_KEYS:  # (the usual case: no room needed)
            return set()
        new = [k for k in keys if k not in self._num and k not in self._obj and k not in self._gone]
        out = past_room({k: 0 if cols is None else first_present(cols[k]) for k in new}, MAX_KEYS - len(self.keys))
        for key in out:
            self._drop_key(key)
        return set(out)

    def _create(self, key: str, sample: Any, base: int) -> None:
        """A new column with ``base`` absent cells; numeric unless ``sample`` says otherwise. Past MAX_KEYS keys
        nothing is created (the key's cells are not stored) and the key is counted in ``dropped_keys``."""
        if key in self._gone:
            return
        if len(self.keys) >= MAX_KEYS:
            self._drop_key(key)
            return
        if self.keep is not None and not self.keep(key):
            self._gone[key] = bytearray(base)
            self.keys.append(key)
            return
        number = as_float(sample) is not None and type(sample) is not bool
        exact = type(sample) is not int or -EXACT_INT <= sample <= EXACT_INT
        if sample is MISSING or sample is None or (number and exact):
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
        packer = doubles(n)
        num, pres, ints, gone = self._num, self._pres, self._ints, self._gone
        over = self._over_cap(cols.keys(), cols)
        for key, vals in cols.items():
            arr = num.get(key)
            if arr is not None and int_keys is not None:  # the hot path, inlined: one C call per column
                try:
                    packed = vals.tobytes() if type(vals) is array and vals.typecode == "d" else packer.pack(*vals)
                    if key in int_keys and (max(vals) > EXACT_INT or min(vals) < -EXACT_INT):
                        raise OverflowError  # an int a double would round (a seed): the exact path below
                except (struct.error, OverflowError, TypeError):
                    pass
                else:
                    arr.frombytes(packed)
                    if key in ints and key not in int_keys:
                        ints.discard(key)
                    if key in pres:
                        pres[key].extend(b"\x01" * n)
                    continue
            if arr is None and key not in self._obj:
                if key in over:
                    continue
                self._create(key, next((v for v in vals if v is not MISSING and v is not None), MISSING), base)
                if (marks := gone.get(key)) is not None:
                    marks.extend(marks_of(vals))
                    continue
            if key in num:
                self._extend_num(key, vals, int_keys)
            if key in self._obj:  # (also after _extend_num turned the column into a list)
                self._extend_obj(key, vals)
        # (cols may hold keys past MAX_KEYS that were not stored: count only the stored ones)
        if len(cols) < len(self.keys) or sum(1 for k in cols if k in num or k in self._obj or k in gone) < len(
                self.keys):
            for key in self.keys:
                if key not in cols:
                    if (marks := gone.get(key)) is not None:
                        marks.extend(bytes(n))
                        continue
                    self._presence(key).extend(bytes(n))
                    arr = num.get(key)
                    if arr is not None:
                        arr.extend(array("d", [NAN]) * n)
                    else:
                        self._obj[key].extend([None] * n)
        self._walls.extend(self._col_walls(cols, base, n, now))
        self._steps.extend(array("q", steps) if type(steps) is not array else steps)  # last: len() grows once

    def _extend_num(self, key: str, vals: Sequence[Any], int_keys: frozenset[str] | None) -> None:
        """Numeric cells that did not pack as they are: nulls, non-finite sentinels, absent cells (or from rows)."""
        arr = self._num[key]
        if int_keys is None:  # nothing guaranteed: bools would pass as 1.0, so look at the types first
            types = set(map(type, vals))
            if bool in types or not types <= NUMERIC_CELLS:
                self._to_obj(key)
                return
            all_int = float not in types or all(type(v) is not float or not math.isfinite(v) for v in vals)
        else:
            all_int = key in int_keys
            types = set(map(type, vals))  # (in C: the test below is per value, and most such columns hold no int)
        if int in types and any(type(v) is int and not -EXACT_INT <= v <= EXACT_INT for v in vals):
            self._to_obj(key)  # a double would round it: ints kept exact in a list
            return
        conv = list(map(GAPS.get, vals, vals))  # None / MISSING / "NaN"... -> float, in C; the rest as is
        try:
            arr.frombytes(doubles(len(conv)).pack(*conv))
        except (struct.error, OverflowError):  # text that is not a number, another NaN spelling, a huge int
            floats = [as_float(v) for v in vals]
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
            vals = [None if v is MISSING else norm_value(v) for v in lst]
        else:
            vals = list(map(norm_value, lst))
            if key in self._pres:
                self._pres[key].extend(b"\x01" * len(lst))
        col.extend(self._shared(key, vals))

    def _shared(self, key: str, vals: list[Any]) -> Any:
        """``vals`` with each short text the column has held before (or repeats here) as one shared object; values of
        other kinds as they are."""
        known = self._texts.setdefault(key, {})
        texts = set(map(type, vals)) <= {str, type(None)}  # (the usual case: looked up in C below)
        if len(known) < SHARED_TEXTS:
            for v in (set(vals) if texts else {v for v in vals if type(v) is str}).difference(known):
                if v is not None and len(v) <= SHORT_TEXT:
                    known[v] = v
                    if len(known) >= SHARED_TEXTS:
                        break
        if texts:
            return map(known.get, vals, vals)  # (a text not kept, or None, is itself)
        return [known.get(v, v) if type(v) is str else v for v in vals]

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
