"""What StepLogger keeps of a logged row: each value read once, at log time, those in nested mappings too (a row's
tensors on a device cost one sync for that device together; a value the loop updates in place later shows as it
was), nested mappings spread out under ``a/b`` keys as the readers of the JSONL name them, and, for the end-of-run
dump, no references to big arrays. Pure: no torch import (a tensor is known by ``sys.modules["torch"]``: without
torch loaded, no value is one)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from steptable.table.jsonvalues import MAX_ARRAY, MAX_DEPTH, array_size, masked, numeric_array, text_keys

#: value types kept as they are for the end-of-run dump (immutable: a later in-place update cannot change them)
_PLAIN = frozenset({int, float, str, bool, type(None), bytes})
_TEXT = frozenset({str})


def frozen(value: Any) -> Any:
    """The value as it is now: a tensor or array that the loop updates in place is read at log time, and so is each
    one in a short list or tuple (a list as a tuple)."""
    try:
        if isinstance(value, (list, tuple)):
            # a short run of 0-d tensors or numpy scalars ([loss_a, loss_b]) as its numbers, as the JSONL writes it
            if len(value) <= MAX_ARRAY and not _PLAIN.issuperset(map(type, value)):
                return tuple(x if type(x) in _PLAIN or isinstance(x, (list, tuple, Mapping)) else frozen(x)
                             for x in value)
            return tuple(value)
        item = getattr(value, "item", None)
        ndim = getattr(value, "ndim", None)
        if callable(item) and ndim == 0:
            return None if masked(value) else item()
        if type(ndim) is int and ndim > 0 and numeric_array(value):
            size = array_size(value)
            if size == 1 and callable(item):
                # one number, whatever its shape: torch.tensor([loss]) all-reduced, a keepdim mean, np.ones((1, 1))
                return None if masked(value) else item()
            if ndim == 1 and size <= MAX_ARRAY and callable(tolist := getattr(value, "tolist", None)):
                # a small 1-d array or tensor as the numbers it holds (np.array([passed, total]) shows as 3/16, as
                # its JSON list reads back); a big one is left for the writer to shorten
                return tuple(tolist())
    except Exception:  # a value that cannot be read is left for the writer and the renderer to make text of
        pass
    return value


#: items of one nested mapping a row's view spreads out at most (a 20k-entry Counter logged each step must not cost
#: milliseconds a row for columns that never read it)
MAX_LEAVES = 1024


def _nested(v: Any) -> bool:
    # (plain values first: the ABC check costs a microsecond a value, and almost every value is a number)
    return type(v) is dict or (type(v) not in _PLAIN and type(v) is not tuple and isinstance(v, Mapping))


def flat(cells: dict[str, Any]) -> dict[str, Any]:
    """The row as every reader of its JSONL names it: nested mappings spread out under ``a/b`` keys (the leaves read
    now), a later key winning over an earlier one of the same name; the row itself when nothing is nested (the
    common case costs one pass over the values). A mapping that holds itself is spread once along each path. A key
    that is not text is named as the JSONL names it (``0`` -> ``"0"``)."""
    for k, v in cells.items():  # (one pass for both: the common row, text keys and plain values, costs no more)
        if type(k) is not str or _nested(v):
            break
    else:
        return cells
    if not _TEXT.issuperset(map(type, cells)):
        cells = text_keys(cells)
        if not any(_nested(v) for v in cells.values()):
            return cells
    out: dict[str, Any] = {}
    left = [0]

    def spread(prefix: str, m: Mapping[Any, Any], path: frozenset[int]) -> None:
        items = list(m.items())
        # a mapping's own values before the mappings in it: {"train": {"per_task": {1500 items}, "loss": x}} must
        # not spend the budget on the tasks before train/loss
        for k, v in [*(kv for kv in items if not _nested(kv[1])), *(kv for kv in items if _nested(kv[1]))]:
            if left[0] <= 0:  # (every item counts: mappings shared down many paths add up too)
                return
            left[0] -= 1
            if not _nested(v):
                out[f"{prefix}{k}"] = v if type(v) in _PLAIN else frozen(v)
            elif id(v) not in path:  # (a cycle: the JSONL writer reports it; here it just ends)
                spread(f"{prefix}{k}/", v, path | {id(v)})

    for k, v in cells.items():
        if not _nested(v):
            out[k] = v
            continue
        left[0] = MAX_LEAVES  # each top-level mapping its own: a big histogram first must not starve train/loss
        try:
            spread(f"{k}/", v, frozenset({id(v)}))
        except Exception:  # a mapping that cannot be read is left for the writer to make text of
            out[k] = str(type(v).__name__)
    return out


def kept(view: dict[str, Any]) -> dict[str, Any]:
    """The row as the end-of-run dump keeps it: an array or tensor that was not read as numbers (2-d, or long)
    becomes its type and shape, not a reference that keeps its memory (and a tensor's autograd graph) alive."""
    out = view
    for k, v in view.items():
        nd = getattr(v, "ndim", None) if type(v) not in _PLAIN and type(v) is not tuple else None
        if isinstance(nd, int) and nd > 0:
            if out is view:
                out = dict(view)
            try:
                out[k] = f"{type(v).__name__}[{'x'.join(str(n) for n in v.shape)}]"
            except Exception:
                out[k] = type(v).__name__
    return out


#: device types whose tensors are read one by one (:func:`frozen`): a CPU tensor's ``.item()`` syncs nothing, and
#: gathering costs more than it saves (bench_rowread.py: read_row of 23 0-d CPU tensors, 18 us read one by one, 52 us
#: gathered). Tests empty it to take a device's path on CPU tensors.
READ_EACH = frozenset({"cpu"})

#: the dtypes read together (by name; their ``.item()`` is a bool, an int or a float); others are read one by one
_TOGETHER = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
_dtypes: frozenset[Any] = frozenset()  # those dtypes (made on the first row with a tensor)

_Entry = tuple[Any, Any, int]  # a key, its tensor, how many numbers it holds


def read_together(items: Mapping[Any, Any]) -> dict[Any, Any]:
    """The values of ``items`` that are tensors on a device (not in :data:`READ_EACH`) holding one number or a 1-d
    run of at most ``MAX_ARRAY``, read as :func:`frozen` reads them (a number; a tuple of numbers), with one
    transfer to the host a device: gathered on it by dtype, their bytes copied at once, each run read back in its own
    dtype, so ints stay exact ints (int64 past 2**53 too), bools bools, floats their exact value (NaN and inf too).
    A device with one such tensor, a tensor of another kind (another dtype or layout, a subclass) and a device whose
    gathering fails are left out: :func:`frozen` reads them one by one, as before. No autograd graph is recorded."""
    global _dtypes
    torch: Any = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None)
    if tensor is None:
        return {}
    groups: dict[Any, list[_Entry]] = {}
    try:
        if not _dtypes:
            _dtypes = frozenset(d for n in _TOGETHER if (d := getattr(torch, n, None)) is not None)
        dtypes, strided, each_cpu = _dtypes, torch.strided, "cpu" in READ_EACH
        for k, v in items.items():
            # (is_cpu first: a row of CPU tensors, read one by one, pays one attribute a tensor here)
            if type(v) is not tensor or (each_cpu and v.is_cpu) or v.dtype not in dtypes or v.layout is not strided:
                continue
            n = v.numel()
            if n == 1 or (v.ndim == 1 and n <= MAX_ARRAY):
                groups.setdefault(v.device, []).append((k, v, n))
    except Exception:  # (a tensor that cannot say what it is: the row is read one value at a time)
        return {}
    out: dict[Any, Any] = {}
    for device, group in groups.items():
        if len(group) > 1 and device.type not in READ_EACH:
            try:
                out.update(_one_transfer(torch, group))
            except Exception:  # (a device that cannot gather them: each is read on its own)
                continue
    return out


def _one_transfer(torch: Any, group: list[_Entry]) -> dict[Any, Any]:
    """The tensors of ``group``, all on one device, read with one copy to the host."""
    runs: dict[Any, tuple[list[_Entry], list[_Entry]]] = {}  # dtype -> its 0-d tensors, its others
    for e in group:
        runs.setdefault(e[1].dtype, ([], []))[e[1].ndim != 0].append(e)
    # by element size, largest first: each dtype's bytes then start on the host at a multiple of its size
    order = sorted(((dtype, (zero or other)[0][1].element_size(), zero, other)
                    for dtype, (zero, other) in runs.items()), key=lambda r: -r[1])
    with torch.no_grad():
        gathered = []
        for _, _, zero, other in order:
            parts = [torch.stack([v for _, v, _ in zero])] if zero else []  # (one call for a dtype's 0-d tensors)
            parts += [v.reshape(-1) for _, v, _ in other]
            # (a lone slice or broadcast view is made contiguous: its bytes are viewed in place)
            gathered.append((parts[0].contiguous() if len(parts) == 1 else torch.cat(parts)).view(torch.uint8))
        # the row's one host sync on this device
        host = (gathered[0] if len(gathered) == 1 else torch.cat(gathered)).to(device="cpu", copy=True)
    out: dict[Any, Any] = {}
    at = 0
    for dtype, size, zero, other in order:
        count = len(zero) + sum(n for _, _, n in other)
        values = host[at:at + count * size].view(dtype).tolist()
        at += count * size
        out.update(zip([k for k, _, _ in zero], values, strict=False))  # (the others follow)
        first = len(zero)
        for k, _, n in other:
            out[k] = values[first] if n == 1 else tuple(values[first:first + n])
            first += n
    return out


#: types of values found not to be mappings (tensors, numpy scalars...), a few at most
_LEAVES: set[type] = set()


_Leaf = tuple[dict[Any, Any], Any, Any]  # a dict of the row's copy, a key, the value there to read


def _copied(m: Mapping[Any, Any], leaves: list[_Leaf], tensor: Any, each_cpu: bool) -> dict[Any, Any] | None:
    """``m`` as dicts of its items now, nested as it is, its leaves that are not plain values read (:func:`frozen`),
    those that may be read together (a ``tensor`` not on the CPU where ``each_cpu``) added to ``leaves`` instead;
    None for a mapping that holds itself, holds more than MAX_LEAVES items in all or deeper than MAX_DEPTH, or cannot
    be read (left as it is, for the writer to say so)."""
    left, had = MAX_LEAVES, len(leaves)

    def copy(m: Mapping[Any, Any], path: frozenset[int]) -> dict[Any, Any]:
        nonlocal left
        left -= len(m)
        if left < 0 or len(path) > MAX_DEPTH:
            raise OverflowError
        out = dict(m.items())
        if _PLAIN.issuperset(map(type, out.values())):  # (in C: a mapping of numbers)
            return out
        for k, v in out.items():
            if type(v) in _PLAIN:
                continue
            if _nested(v):
                if id(v) in path:
                    raise RecursionError
                out[k] = copy(v, path | {id(v)})
            elif type(v) is tensor and not (each_cpu and v.is_cpu):
                leaves.append((out, k, v))
            else:
                out[k] = frozen(v)
        return out

    try:
        return copy(m, frozenset({id(m)}))
    except Exception:
        del leaves[had:]
        return None


def freeze(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A snapshot of the logged ``raw`` row: its items as they are now, each value read at once (:func:`frozen`),
    a nested mapping as a copy with its values read (:func:`_copied`), the tensors of each device together, wherever
    they are in the row (:func:`read_together`)."""
    # The items first, at once: another thread (an evaluation callback) may add keys to the loop's metrics dict
    # while it is logged, and iterating a dict that changes raises. dict.copy() is one step no thread interleaves.
    if type(raw) is dict:
        items = raw.copy()
    else:
        for _ in range(3):  # any other Mapping: read again if it changed under us
            try:
                items = dict(raw.items())
                break
            except RuntimeError:
                continue
        else:
            items = dict(raw.items())
    if _PLAIN.issuperset(map(type, items.values())):  # (in C: the common row, nothing to read)
        return items
    # Nested mappings are copied with their leaves (a loop that updates its own dict of metrics in place later
    # leaves this row as it was), and every leaf is read here; with torch loaded, the tensors of each device together.
    # (a tensor that may be read together waits in ``leaves``: the others are read at once, as they cost no sync)
    tensor = getattr(sys.modules.get("torch"), "Tensor", None)
    leaves: list[_Leaf] = []
    each_cpu = "cpu" in READ_EACH
    for k, v in items.items():
        t = type(v)
        if t in _PLAIN:
            continue
        if t is dict and _PLAIN.issuperset(map(type, v.values())):  # (in C: a dict of numbers, the common one)
            items[k] = v.copy()
            continue
        if t not in _LEAVES:  # (the ABC check costs more than reading a number: made once a type)
            try:
                if t is dict or _nested(v):
                    if (copy := _copied(v, leaves, tensor, each_cpu)) is not None:
                        items[k] = copy
                    continue
                if len(_LEAVES) < 64:
                    _LEAVES.add(t)
            except Exception:  # (a value that cannot say what it is: read as a value, which never raises)
                pass
        if t is tensor and not (each_cpu and v.is_cpu):
            leaves.append((items, k, v))
        else:
            items[k] = frozen(v)
    if leaves:
        read = read_together({i: v for i, (_, _, v) in enumerate(leaves)}) if len(leaves) > 1 else {}
        for i, (d, k, v) in enumerate(leaves):
            d[k] = read[i] if i in read else frozen(v)
    return items
