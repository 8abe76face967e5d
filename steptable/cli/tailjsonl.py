"""`tail --format jsonl` of a long run, column by column: the lines of a batch of rows written from their columns
(one C pass per column for the numbers) instead of a dict and an encoder call per row. The text is the one
:func:`steptable.logger.rowjson.json_line` writes for each row's record; anything else than numbers (text, pairs)
leaves the batch to the general path."""

from __future__ import annotations

import math
from array import array
from collections.abc import Collection
from json.encoder import encode_basestring  # type: ignore[attr-defined]

from steptable.ingest.rowcut import RowCut
from steptable.schemas import Schema

_NONFINITE = {"nan": "null", "inf": "1e999", "-inf": "-1e999"}


def _numbers(vals: array[float], ints: bool) -> list[str]:
    """JSON numbers as json_line writes them: ``float.__repr__`` (an integer column's as ints), a NaN as null and
    an infinity as ``1e999``."""
    if ints:
        return [int.__repr__(int(v)) if math.isfinite(v) else _NONFINITE[repr(v)] for v in vals]
    out = list(map(float.__repr__, vals))
    if not math.isfinite(sum(vals)):  # (rare, or a sum past the largest double: only then is each cell looked at)
        out = [_NONFINITE.get(x, x) for x in out]
    return out


def jsonl_lines(run: str, arm: str, cut: RowCut, lo: int, hi: int, keep: Collection[str] | None) -> str | None:
    """The JSONL lines (``{"run", "arm", then the row's keys}``) of rows ``[lo, hi)`` of ``cut`` with the keys in
    ``keep`` (None: all), or None when a cell is not a number or a row's key would clash with ``run``/``arm``."""
    head = '{"run":' + encode_basestring(run) + ',"arm":' + encode_basestring(arm)
    cols: list[list[str]] = []
    if cut.numbered and (keep is None or "step" in keep):
        cols.append([',"step":' + int.__repr__(s) for s in cut.steps[lo:hi]])
    for key, vals, pres, ints in cut.columns(lo, hi):
        if keep is not None and key not in keep:
            continue
        if type(vals) is not array or key in ("run", "arm"):
            return None
        name = "," + encode_basestring(key) + ":"
        col = [name + x for x in _numbers(vals, ints)]
        if pres is not None:
            col = [x if p else "" for x, p in zip(col, pres, strict=True)]
        cols.append(col)
    if not cols:
        return "".join(head + "}\n" for _ in range(len(cut.steps[lo:hi])))
    return "".join([head + "".join(t) + "}\n" for t in zip(*cols, strict=True)])


def plain(schema: Schema, keep: Collection[str] | None) -> bool:
    """The rows need nothing ``schema.derive`` adds: no printed key is one it fills in (an alias, a derived value)."""
    fills = [c.key for c in schema.cols if c.aliases] + [d.key for d in schema.derived]
    return not fills if keep is None else not any(k in keep for k in fills)
