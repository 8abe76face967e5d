"""A logged row's values as strict-JSON data: plain numbers, text, lists and objects, whatever was logged (numpy or
torch scalars and arrays, masked values, nested or self-holding containers, objects whose ``str`` raises). Bounded in
depth, size and work per row, and never raising: one odd value must not cost a row its other metrics.
Pure: no torch or numpy import (their values are read through duck typing)."""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

from steptable.table.formatting import unique_name

#: nesting deeper than this is written as a short text
MAX_DEPTH = 32
#: arrays (numpy, torch) of at most this many numbers are written as JSON lists, larger ones as their short text
MAX_ARRAY = 1024
#: containers (lists, tuples, mappings) converted per row at most: one that shares its parts can be exponentially
#: large when written out
MAX_NODES = 20_000

_INF = float("inf")
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 3, 200, 200


def _text(value: Any, short: bool = False) -> str:
    """``str(value)``; with ``short``, a bounded repr (for a structure nested past MAX_DEPTH). Never raises."""
    try:
        return _SHORT.repr(value) if short else str(value)
    except Exception:  # a hostile __str__/__repr__, or an int past str()'s digit limit
        try:
            name = type(value).__name__
        except Exception:
            name = "object"
        return f"<unprintable {name}>"


def key_text(key: Any, taken: dict[str, Any]) -> str:
    """A mapping's key as its JSON line names it, beside the names ``taken`` already: its text (``0`` -> ``"0"``),
    a name already taken (``3`` beside ``"3"``) as ``3~2``."""
    return unique_name(key if type(key) is str else _text(key), taken)


def text_keys(row: Mapping[Any, Any]) -> dict[str, Any]:
    """``row`` with every key as its JSON line names it (:func:`key_text`), the values as they are."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        out[key_text(k, out)] = v
    return out


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of a raw value: NaN -> None (an infinity stays a float: a diverged loss is not a missing
    value, and the row's writer spells it ``1e999``; so does an int past the double range), tuples -> lists,
    scalars of numpy/torch (and their one-element arrays) -> float, anything else -> its text. Never raises, and
    takes time linear in what it writes (a container that holds itself is written as "<cycle>", one nested past
    MAX_DEPTH as its short text, and past MAX_NODES containers the rest as "<omitted>"): one odd value must not cost
    the row its other metrics."""
    return _Converter().convert(value, 0)


class _Converter:
    __slots__ = ("budget", "path")

    def __init__(self) -> None:
        self.budget = MAX_NODES
        self.path: set[int] = set()  # ids of the containers being converted (cycle detection)

    def convert(self, value: Any, depth: int) -> Any:
        if value is None or type(value) in (bool, str):
            return value
        t = type(value)
        if t is float:
            return None if value != value else value
        if t is int:
            return self._int(value)
        try:
            return self._other(value, depth)
        except Exception:  # isinstance() itself can raise (a __class__ property); so can iteration
            return _text(value)

    @staticmethod
    def _int(value: int) -> Any:
        if value.bit_length() <= 1000:
            return value
        try:  # json.dumps cannot write an int past str()'s digit limit; a 300-digit count is a bug anyway
            return float(value)
        except OverflowError:  # past the double range: an infinity of its sign, as a float that overflowed
            return _INF if value > 0 else -_INF

    def _other(self, value: Any, depth: int) -> Any:
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, str):
            return str.__str__(value)  # the characters (a (str, Enum) member's value), not its __str__
        if isinstance(value, int):
            return self._int(int(value))
        if isinstance(value, float):
            f = float(value)
            return None if f != f else f
        container = isinstance(value, (Mapping, list, tuple))
        if container:
            self.budget -= 1
            if self.budget < 0:
                return "<omitted>"
            if depth >= MAX_DEPTH:
                return _text(value, short=True)
            key = id(value)
            if key in self.path:
                return "<cycle>"
            self.path.add(key)
            try:
                if isinstance(value, Mapping):
                    return self._mapping(value, depth)
                return [self.convert(v, depth + 1) for v in value]
            finally:
                self.path.discard(key)
        return self._scalar(value, depth)

    def _mapping(self, value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        """Keys as text; keys whose text is the same (``3`` and ``"3"``, ``None`` and ``"None"``) are all kept, the
        later ones as ``key~2``, ``key~3``..."""
        out: dict[str, Any] = {}
        for k, v in list(value.items()):
            out[key_text(k, out)] = self.convert(v, depth + 1)
        return out

    def _scalar(self, value: Any, depth: int) -> Any:
        try:
            item = getattr(value, "item", None)
            if getattr(value, "ndim", 0) and callable(tolist := getattr(value, "tolist", None)):
                # a numpy array or tensor: its numbers as a JSON list; a big one as its short text (numpy's own
                # summary), as a row is a line of scalars, not a place for an activation dump. One element is that
                # number (torch.tensor([loss]) all-reduced), read below as a 0-d one is: [nan] would hide a NaN.
                size = array_size(value)
                if size != 1 or not callable(item) or not numeric_array(value):  # (["abc"], an object array: lists)
                    return self.convert(tolist(), depth + 1) if size <= MAX_ARRAY else _text(value)
                if masked(value):  # np.ma's .item() would give the value under the mask, which is not there
                    return None
        except Exception:  # a proxy whose __getattr__ raises something other than AttributeError
            item = None
        if callable(item):  # numpy / torch 0-d: the caller chose to hand us a tensor; .item() is its sync, not ours
            if masked(value):  # np.ma.masked (the mean of all-masked values): no value, not its 0.0
                return None
            try:
                got = item()
            except Exception:
                pass
            else:
                if got is not value and type(got) is not type(value):  # np.longdouble.item() is a longdouble
                    return self.convert(got, depth + 1)
        try:
            return self.convert(float(value), depth + 1)
        except Exception:
            return _text(value)


def numeric_array(array: Any) -> bool:
    """Does a numpy array or torch tensor hold integers, real floats or bools (not dates, objects, complex)?"""
    dtype = getattr(array, "dtype", None)
    kind = getattr(dtype, "kind", None)  # numpy
    if isinstance(kind, str):
        return kind in "iufb"
    return bool(getattr(dtype, "is_floating_point", False)) or str(dtype).startswith(
        ("torch.int", "torch.uint", "torch.bool"))


def masked(array: Any) -> bool:
    """A numpy masked array with a masked element (a torch tensor or a plain array has no ``mask``)."""
    mask = getattr(array, "mask", None)
    try:
        return mask is not None and bool(mask.any() if callable(getattr(mask, "any", None)) else mask)
    except Exception:
        return False


def array_size(value: Any) -> int:
    """How many numbers a numpy array or torch tensor holds (a tensor's ``size`` is a method, an array's a number;
    something else is taken as too big)."""
    numel = getattr(value, "numel", None)
    return int(numel() if callable(numel) else getattr(value, "size", MAX_ARRAY + 1))
