"""The rows of table.txt, read back from the JSONL at the end of a run without a RunStore of the whole run.

A RunStore of the whole run would hold every cell of a long run in memory and take long to build at close. Instead a
first pass places each row of the file as RunStore places it (steptable.ingest.store: a resumed run's rows replace the
crashed run's, an evaluation of an earlier step joins that step's row), keeping per row of the table only its step, the
first and last file rows that set it and a bitmask of the keys it holds (:class:`Plan`), and the column types the store
would end with (``_Types``: what ``RunStore.row`` gives, an int or a float, depends on every value the column ever
took). A second pass reads again the rows the table shows and hands each one on once it is whole. Memory: O(columns)
plus 32 bytes a row, and keys / 8 + 28 more for a row that lacks some key other rows of its chunk have (a None or NaN
cell).
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import lt
from typing import IO, Any

from steptable.ingest.numcells import as_float
from steptable.ingest.parse import MISSING, norm_value
from steptable.ingest.parsed import BOOKKEEPING_KEYS, Parsed, cols_to_rows, counter, measured, rows_to_cols
from steptable.ingest.readers.jsonl import JsonlParser
from steptable.ingest.table import MAX_KEYS, ColumnTable

_CHUNK = 1 << 20
def _select(parsed: Parsed, arm: Any) -> tuple[Sequence[int], list[dict[str, Any]] | None,
                                                dict[str, Sequence[Any]] | None, bool]:
    """The rows of ``arm`` in a parsed chunk: (steps, rows, columns, whether rows of other arms were left out)."""
    rows, cols = parsed.rows, parsed.cols
    if arm is not None:
        arms = [r.get("arm", MISSING) for r in rows] if rows is not None else (cols or {}).get("arm")
        if arms is not None:
            keep = [i for i, a in enumerate(arms) if a is MISSING or a == arm]
            if len(keep) < len(parsed.steps):
                rows = rows if rows is not None else cols_to_rows(dict(cols or {}), len(parsed.steps))
                return [parsed.steps[i] for i in keep], [rows[i] for i in keep], None, True
    return parsed.steps, rows, cols, False


class _Types(ColumnTable):
    """The column types a RunStore fed the same operations ends with, holding no rows: each operation is applied to
    an empty table and its cells dropped after it (a type, once widened, never narrows again)."""

    def __init__(self) -> None:
        super().__init__()
        self.op = 0  # the first file row of the operation in progress
        self.converted: dict[str, tuple[int, bool]] = {}  # key -> (first row stored as it is, integers until then)

    def _to_obj(self, key: str) -> None:
        self.converted.setdefault(key, (self.op, key in self._ints))
        super()._to_obj(key)

    def append(self, first: int, steps: Sequence[int], cols: Mapping[str, Sequence[Any]],
               int_keys: frozenset[str] | None) -> None:
        self.op = first
        self._append(steps, cols, int_keys, math.nan)
        self._truncate(0)

    def merge(self, j: int, step: int, row: dict[str, Any]) -> None:
        self.op = j
        self._insert_empty(0, step, math.nan)
        self._merge(0, row, math.nan)
        self._truncate(0)

    def known(self) -> set[str]:
        return self._num.keys() | self._obj.keys()

    def convert(self, key: str, vals: Sequence[Any], base: int) -> list[Any]:
        """The values of ``key`` set by file rows ``base``, ``base + 1``... as ``RunStore.row`` gives them (MISSING
        kept where a row does not set it)."""
        if key in self._num:  # a double; an int again for an integer column
            if key in self._ints:
                return [v if type(v) is int or v is MISSING else _stored(v, True) for v in vals]
            return [v if type(v) is float or v is MISSING else _stored(v, False) for v in vals]
        since, ints = self.converted.get(key, (-1, False))  # a numeric column until file row ``since``
        # (a logged null in a column of objects is a NaN, as RunStore.row gives it)
        if base >= since:
            return [norm_value(v) if type(v) is str or type(v) is list else math.nan if v is None else v
                    for v in vals]
        return [v if v is MISSING else _stored(v, ints) if j < since else _obj_cell(v)
                for j, v in enumerate(vals, base)]


def _obj_cell(v: Any) -> Any:
    """A cell of a column of objects as the store keeps it (a logged null: NaN)."""
    v = norm_value(v)
    return math.nan if v is None else v


def _stored(v: Any, ints: bool) -> Any:
    """A cell of a numeric column as the store keeps it: a double (an int again for an integer column)."""
    f = as_float(v)
    if f is None:
        return norm_value(v)
    return int(f) if ints and math.isfinite(f) else f


@dataclass(frozen=True, slots=True)
class _Chunk:
    offset: int
    size: int
    lineno: int
    base: int  # file rows of the arm before it
    step_key: str | None
    ordinal: int
    last_step: int | None


class Plan:
    """Where each row of the arm's file lands, placed as RunStore places it, without the rows' cells."""

    def __init__(self, label: str, arm: Any) -> None:
        self.label = label
        self.arm = arm
        self.types = _Types()
        self.steps = array("q")  # the table's rows, in step order
        self.first = array("q")  # the file row that made each (earlier ones were dropped with a resumed run)
        self.last = array("q")  # the last file row that set a cell of it
        # the keys each row holds measured values for, one bit a key (by _bits): rows with the same keys in a chunk
        # share one int, and a row with its own keys costs an int of keys / 8 bytes (a set of them, 56 bytes a key)
        self.held: list[int] = []
        self._bits: dict[str, int] = {}
        self.chunks: list[_Chunk] = []
        self.count = 0  # file rows of the arm so far
        self.went_back = 0  # rows whose step went back over rows after it (a resume: those were dropped)
        self._other: tuple[int, str | None, int] = (-1, None, 0)  # (keys known, step key, their bits not metrics)
        self.step_key: str | None = None
        self.shared = False  # rows of other arms in the file
        self.late: set[int] = set()  # file rows merged into an earlier step's row: they fill it in, overwrite nothing

    # --- the first pass -----------------------------------------------------------------------------------------

    def read(self, src: IO[bytes]) -> None:
        """The first pass over ``src`` (the JSONL, from its start): place every row of the arm, keep no cells."""
        parser = JsonlParser(self.label)
        offset, lineno = 0, 1
        while lines := src.readlines(_CHUNK):  # whole lines (a partial last one from a crash is a bad line)
            data = b"".join(lines)
            self.chunks.append(_Chunk(offset, len(data), lineno, self.count, parser.step_key, parser.ordinal,
                                      parser.last_step))
            parsed = parser.parse(data, lineno)
            offset += len(data)
            lineno += len(lines)
            steps, rows, cols, shared = _select(parsed, self.arm)
            self.shared = self.shared or shared
            self._add(steps, rows, cols, parsed.int_keys if cols is not None else None, parsed.step_key)

    def _bit(self, key: str) -> int:
        b = self._bits.get(key)
        if b is None:
            b = self._bits[key] = len(self._bits)
        return 1 << b

    def _mask(self, keys: Iterable[str]) -> int:
        """The bits of those of ``keys`` that a row may hold (a key with no bit yet is held by no row)."""
        bits = self._bits
        return sum(1 << b for k in keys if (b := bits.get(k)) is not None)

    def _held_by(self, cols: Mapping[str, Sequence[Any]], n: int) -> list[int]:
        """Per row of a chunk given as columns (MISSING where absent), the keys it holds measured values for."""
        full = {k for k in cols if k in self.types}
        gaps: dict[int, int] = {}  # row -> the bits of the keys it lacks
        for k in list(full):
            vals = cols[k]
            try:
                total = sum(vals)  # numbers only, in C: NaN only if a value is one (or +inf and -inf meet)
                if total == total:
                    continue
            except (TypeError, OverflowError):  # text, lists, absent cells; an int past float range
                pass
            texts: dict[str, bool] = {}  # (a text column repeats a few words: each read once)
            rows = []
            for r, v in enumerate(vals):
                if v is MISSING or v is None or (type(v) is float and v != v):
                    rows.append(r)
                elif type(v) is str:
                    ok = texts.get(v)
                    if ok is None:
                        ok = texts[v] = measured(norm_value(v))  # ("nan" is a NaN)
                    if not ok:
                        rows.append(r)
            if len(rows) == n:  # (a key the decoder knows that no row of this chunk has)
                full.discard(k)
                continue
            bit = self._bit(k)
            for r in rows:
                gaps[r] = gaps.get(r, 0) | bit
        whole = 0
        for k in full:
            whole |= self._bit(k)
        held = [whole] * n
        seen: dict[int, int] = {}  # (rows lacking the same keys share one int)
        for r, missing in gaps.items():
            got = seen.get(missing)
            if got is None:
                got = seen[missing] = whole & ~missing
            held[r] = got
        return held

    def _extend(self, steps: Sequence[int], first: Sequence[int], last: Sequence[int], held: list[int]) -> None:
        self.steps.extend(steps)
        self.first.extend(first)
        self.last.extend(last)
        self.held.extend(held)

    def _add(self, steps: Sequence[int], rows: list[dict[str, Any]] | None, cols: dict[str, Sequence[Any]] | None,
             int_keys: frozenset[str] | None, step_key: str | None) -> None:
        """RunStore.add: a chunk appended as it is, or placed row by row."""
        if step_key is not None:
            self.step_key = step_key
        n = len(steps)
        if not n:
            return
        base = self.count
        self.count += n
        if cols is not None and self._appendable(steps):
            self.types.append(base, steps, cols, int_keys)
            ids = range(base, base + n)
            self._extend(steps, ids, ids, self._held_by(cols, n))
            return
        self._add_rows(base, steps, rows if rows is not None else cols_to_rows(dict(cols or {}), n))

    def _appendable(self, steps: Sequence[int]) -> bool:
        if self.steps and steps[0] <= self.steps[-1]:
            return False
        return all(map(lt, steps, islice(steps, 1, None)))

    def _add_rows(self, base: int, steps: Sequence[int], rows: list[dict[str, Any]]) -> None:
        """RunStore._add_rows: runs of rows with rising steps appended together, any other row placed alone."""
        if len(self.types.keys) >= MAX_KEYS:  # full: cells of keys not stored are dropped first
            known = self.types.known()
            rows = [r if r.keys() <= known else {k: v for k, v in r.items() if k in known} for r in rows]
        pend: list[int] = []
        first: list[int] = []
        last_ids: list[int] = []
        pend_rows: list[dict[str, Any]] = []
        last = self.steps[-1] if self.steps else None
        for j, (step, row) in enumerate(zip(steps, rows, strict=True), base):
            if last is None or step > last:
                pend.append(step)
                first.append(j)
                last_ids.append(j)
                pend_rows.append(row)
                last = step
            elif pend and step == pend[-1]:
                pend_rows[-1] = {**pend_rows[-1], **row}
                last_ids[-1] = j
            else:
                if pend:
                    self._append_rows(pend, first, last_ids, pend_rows)
                    pend, first, last_ids, pend_rows = [], [], [], []
                self._place(j, step, row)
                last = self.steps[-1]
        if pend:
            self._append_rows(pend, first, last_ids, pend_rows)

    def _append_rows(self, steps: list[int], first: list[int], last: list[int], rows: list[dict[str, Any]]) -> None:
        cols = rows_to_cols(rows)
        self.types.append(first[0], steps, cols, None)
        self._extend(steps, first, last, self._held_by(cols, len(rows)))

    def _place(self, j: int, step: int, row: dict[str, Any]) -> None:
        """RunStore._place: a resume, a merge into the row of that step, or a row inserted in order."""
        n = len(self.steps)
        i = bisect_left(self.steps, step)
        if i < n and self.steps[i] == step:
            if i < n - 1 and self._shares_keys(i, row):
                self.went_back += 1
                for arr in (self.steps, self.first, self.last, self.held):
                    del arr[i:]
                self._append_rows([step], [j], [j], [row])
                return
            if i < n - 1:  # RunStore._unheld: a late row fills in the cells its step's row holds no value for
                self.late.add(j)
                held, bits = self.held[i], self._bits
                row = {k: v for k, v in row.items() if k not in bits or not held >> bits[k] & 1}
            self.types.merge(j, step, row)
            self.last[i] = j
            kept = self.held[i] & ~self._mask(row)
            self.held[i] = kept | self._held_by(rows_to_cols([row]), 1)[0]
            return
        self.types.merge(j, step, row)
        for arr, v in ((self.steps, step), (self.first, j), (self.last, j)):
            arr.insert(i, v)
        self.held.insert(i, self._held_by(rows_to_cols([row]), 1)[0])

    def _shares_keys(self, i: int, row: dict[str, Any]) -> bool:
        """RunStore._shares_keys: does ``row`` measure again what row ``i`` holds (a resume)?"""
        metric = [k for k, v in row.items() if k != self.step_key and k not in BOOKKEEPING_KEYS and measured(v)]
        held, bits = self.held[i], self._bits
        again = [k for k in metric if k in bits and held >> bits[k] & 1]
        if all(counter(k) for k in again):  # (RunStore._shares_keys: a late evaluation, not a resume)
            return False
        shared = len(again)
        if shared * 2 >= len(metric):
            return True
        if self._other[0] != len(bits) or self._other[1] != self.step_key:  # (bits only grow: made again then)
            mask = sum(1 << b for k, b in bits.items() if k == self.step_key or k in BOOKKEEPING_KEYS)
            self._other = (len(bits), self.step_key, mask)
        return shared * 2 > (held & ~self._other[2]).bit_count()

    # --- the second pass ----------------------------------------------------------------------------------------

    def rows(self, src: IO[bytes], lo: int, keys: Sequence[str]) -> Iterator[dict[str, Any]]:
        """The cells of ``keys`` of the table's rows from ``lo`` on, as ``RunStore.row`` gives them, in order."""
        n = len(self.steps)
        if lo >= n:
            return
        positional = "step" in keys and "step" not in self.types
        want = [k for k in dict.fromkeys(keys) if k in self.types]
        low = self.steps[lo]
        start = min(self.first[lo:])
        k = max(bisect_right([c.base for c in self.chunks], start) - 1, 0)
        parser = JsonlParser(self.label)
        chunk = self.chunks[k]  # the parser as it was there: the same steps for the same lines
        parser.step_key, parser.ordinal, parser.last_step = chunk.step_key, chunk.ordinal, chunk.last_step
        pending: dict[int, dict[str, Any]] = {}
        e = lo
        for chunk in self.chunks[k:]:
            src.seek(chunk.offset)
            steps, rows, cols, _ = _select(parser.parse(src.read(chunk.size), chunk.lineno), self.arm)
            if rows is not None:
                cols = {key: [r.get(key, MISSING) for r in rows] for key in want}
            names = [key for key in want if key in (cols or {})]
            got = [self.types.convert(key, (cols or {})[key], chunk.base) for key in names]
            j = chunk.base - 1
            for r, step in enumerate(steps):
                j += 1
                if step < low:
                    continue
                i = bisect_left(self.steps, step, lo)
                if i == n or self.steps[i] != step or j < self.first[i]:
                    continue  # a row dropped with a resumed run
                cells = {key: v for key, vals in zip(names, got, strict=True) if (v := vals[r]) is not MISSING}
                if step in pending:
                    got_row = pending[step]
                    if j in self.late:  # (RunStore._unheld: what the row holds stays)
                        cells = {key: v for key, v in cells.items() if not measured(got_row.get(key))}
                    else:  # a later row of the same step in order adds the keys it lacks (RunStore._place)
                        cells = {key: v for key, v in cells.items() if key not in got_row}
                    got_row.update(cells)
                else:
                    pending[step] = {"step": step, **cells} if positional else cells
            while e < n and self.last[e] <= j:
                done = pending.pop(self.steps[e], None)
                if done is None:  # (the file was rewritten between the passes)
                    break
                yield done
                e += 1
            if e == n:
                return
            if self.last[e] <= j:
                break
        raise OSError(f"{self.label} changed while its rows were read back")
