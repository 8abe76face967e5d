"""The fast path: decode a whole chunk of lines into columns with a msgspec Struct built from the rows seen so far.

Why: decoding into a typed Struct is ~25% faster than into dicts, the Struct is validated in C (a bool where a number
was, a key never seen before -> the decode fails and the chunk goes the tolerant line-by-line way), and the rows of a
chunk can be transposed into columns in C (``zip(*map(astuple, rows))``) instead of one Python step per cell.

A *shape* is the nested structure of the raw rows: ``{key: kind | shape}`` with kind one of ``none`` (only nulls or
non-finite sentinels so far), ``int``, ``float``, ``obj`` (text, bools, lists). Absent keys decode to ``MISSING``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from msgspec.structs import astuple

from steptable.ingest.parse import MISSING, NONFINITE, STEP_MAX, STEP_MIN, norm_value
from steptable.ingest.table import MAX_KEYS

Shape = dict[str, Any]  # values: str kinds or nested Shape

_RANK = {"none": 0, "int": 1, "float": 2, "obj": 3}
_INT = int | str | None  # str: the quoted non-finite sentinels
_FLOAT = float | str | None
#: msgspec decodes ints up to 2**64 - 1; the store keeps steps as int64
_STEP = Annotated[int, msgspec.Meta(ge=STEP_MIN, le=STEP_MAX)]
_names = itertools.count()


def _kind(v: Any) -> str:
    t = type(v)
    if t is int:
        return "int"
    if t is float:
        return "float"
    if v is None or (t is str and len(v) <= 9 and v.lower() in NONFINITE):
        return "none"
    return "obj"


def learn(shape: Shape, obj: dict[str, Any]) -> tuple[bool, bool]:
    """Merge one raw row into ``shape``. Returns (still consistent, changed).

    Inconsistent: a key holds an object in one row and a leaf in another; the fast path is then given up for the file.
    """
    changed = False
    for k, v in obj.items():
        cur = shape.get(k)
        if type(v) is dict:
            if cur is None:
                shape[k] = cur = {}
                changed = True
            elif type(cur) is not dict:
                return False, changed
            ok, sub_changed = learn(cur, v)
            changed = changed or sub_changed
            if not ok:
                return False, changed
            continue
        if type(cur) is dict:
            return False, changed
        kind = _kind(v)
        if cur is None or _RANK[kind] > _RANK[cur]:
            shape[k] = kind
            changed = True
    return True, changed


def more_keys_than(shape: Shape, limit: int) -> bool:
    """Does ``shape`` have more than ``limit`` leaves? (Counted without recursion, and only up to ``limit``.)"""
    count, todo = 0, [shape]
    while todo:
        for kind in todo.pop().values():
            if type(kind) is dict:
                todo.append(kind)
            else:
                count += 1
                if count > limit:
                    return True
    return False


@dataclass
class _Level:
    entries: list[tuple[str, str, _Level | None]]  # (flat key, kind, nested level), in Struct field order


class TypedDecoder:
    """Chunk -> columns for rows that fit ``shape``; ``decode`` returns None when the chunk does not fit."""

    def __init__(self, shape: Shape, step_key: str | None, step_optional: bool = False) -> None:
        """``step_optional``: a row without ``step_key`` decodes (to MISSING there) rather than failing the chunk."""
        if more_keys_than(shape, MAX_KEYS):
            # msgspec looks a key up from the field after the last one found: rows whose keys come in another order
            # cost fields x keys each (35 s for 6 rows of 50 000), and a run keeps MAX_KEYS keys anyway
            raise ValueError("more keys than a run keeps")
        self.step_key = step_key
        self._step_optional = step_optional
        self.int_keys: set[str] = set()
        self._step_found = False
        root_type, self._root = self._build(shape, "", top=True)
        #: the row's keys in the Struct's field order (a line whose keys come in it is decoded fastest: msgspec
        #: looks each key up from the field after the last one found)
        self.keys = tuple(entry[0] for entry in self._root.entries)
        if step_key is not None and not self._step_found:
            raise ValueError("step key not in shape")
        self._decoder: Any = msgspec.json.Decoder(root_type)
        self.int_keys_frozen = frozenset(self.int_keys)

    def _build(self, shape: Shape, prefix: str, top: bool) -> tuple[type, _Level]:
        fields: list[tuple[str, Any, Any] | tuple[str, Any]] = []
        rename: dict[str, str] = {}
        entries: list[tuple[str, str, _Level | None]] = []
        for i, (key, kind) in enumerate(shape.items()):
            name = f"f{i}"
            rename[name] = key
            if type(kind) is dict:
                sub_prefix = "" if (top and key == "data") else prefix + key + "/"
                sub_type, level = self._build(kind, sub_prefix, top=False)
                fields.append((name, sub_type, MISSING))
                entries.append((prefix + key, "nested", level))
                continue
            flat = prefix + key
            if flat == self.step_key:
                self._step_found = True
                # required: a row without its step (or with one beyond int64) goes the tolerant way
                fields.append((name, _STEP, MISSING) if self._step_optional else (name, _STEP))
                self.int_keys.add(flat)
            elif kind == "int":
                fields.append((name, _INT, MISSING))
                self.int_keys.add(flat)
            elif kind == "obj":
                fields.append((name, Any, MISSING))
            else:
                fields.append((name, _FLOAT, MISSING))
            entries.append((flat, kind, None))
        # required fields first (a Python rule for defaults); the JSON key order does not matter to msgspec
        fields.sort(key=lambda f: len(f) == 3)
        order = [f[0] for f in fields]
        by_name = {f"f{i}": e for i, e in enumerate(entries)}
        struct = msgspec.defstruct(f"_Row{next(_names)}", fields, rename=rename, forbid_unknown_fields=True, gc=False)
        level = _Level([by_name[n] for n in order])
        return struct, level

    def decode(self, chunk: bytes) -> dict[str, Sequence[Any]] | None:
        """Columns (flat key -> values, MISSING where absent) of a chunk of complete lines, or None.

        Blank lines are skipped (line numbers are the tail's business, and nothing here is reported)."""
        try:
            rows = self._decoder.decode_lines(chunk)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
            return None
        out: dict[str, Sequence[Any]] = {}
        try:
            _extract(rows, self._root, out)
        except (TypeError, _NotFlat, RecursionError):
            return None  # an absent nested object (MISSING is no Struct), or an object where a leaf was
        return out


class _NotFlat(Exception):
    pass


def _norm_obj(v: Any) -> Any:
    if type(v) is dict:
        raise _NotFlat
    return norm_value(v)


def _extract(rows: Sequence[Any], level: _Level, out: dict[str, Sequence[Any]]) -> None:
    if not rows:
        for flat, _, sub in level.entries:
            if sub is None:
                out[flat] = ()
        return
    # rows -> columns in C: astuple is ~3x faster than an attrgetter over the fields
    cols = zip(*map(astuple, rows), strict=True)
    for (flat, kind, sub), col in zip(level.entries, cols, strict=True):
        if sub is not None:
            _extract(col, sub, out)
        elif kind == "obj":
            out[flat] = [_norm_obj(v) for v in col]
        else:
            out[flat] = col
