"""What a logged row becomes before anything is written or shown: its values read once, and its JSONL record.

The record is ``step``, then ``arm`` (the logger's, unless the row names its own), then ``ts`` (the caller's, else
ours to the millisecond), then the row's own keys in their order, a None left out. Nothing here writes, prints or
raises for a value: a step that is not a whole number and a row's own ``arm`` that differs from the logger's are
said once per logger (``topic``), and the row is recorded as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from steptable.logger.backlog import NUMBERS
from steptable.logger.sinks import report_once
from steptable.table.formatting import sanitize
from steptable.table.rowvalues import freeze

#: a row of these value types alone is written as it is, every value (no None to leave out)
_WRITTEN = frozenset({float, int, str, bool})


def read_row(raw: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """``raw``'s values, each read once now, and whether they are all plain floats and ints.

    The row's tensors on a device cost one sync here, all of them together (:func:`freeze`), rather than one each
    for the JSONL, the rendered row and the dump, and a value the loop updates in place later shows as it was at
    this step. A dict of floats and ints (the common row)
    is copied as it is: nothing to read, no None to leave out."""
    if type(raw) is dict:
        cells = raw.copy()  # (one step no other thread interleaves, as in freeze)
        numbers = NUMBERS.issuperset(map(type, cells.values()))
        return (cells if numbers else freeze(cells)), numbers
    return freeze(raw), False


def record_of(cells: Mapping[str, Any], step: Any, arm: str | None, ns: int, numbers: bool,
              topic: str) -> dict[str, Any]:
    """The JSONL record of ``cells`` (read by :func:`read_row`) logged as ``step`` at ``ns`` (time.time_ns())."""
    if type(step) is float and not step.is_integer():
        report_once(f"{topic}-float-step", f"steptable: step {step!r} is not a whole number: readers of the JSONL "
                    "(tail, summary, watch, table.txt) keep such a row under the step before it; log an integer "
                    "step and the fraction as a column of its own")
    record: dict[str, Any] = {"step": step}
    if arm is not None:  # a row that names its own arm keeps it, as ``ts`` does
        own = cells.get("arm")
        record["arm"] = arm if own is None else own
        if own is not None and own != arm:
            report_once(f"{topic}-arm", f"steptable: a row's 'arm' ({sanitize(repr(own)):.40}) is filed as its "
                        f"arm, not this logger's ({sanitize(repr(arm)):.40}): readers show it as another arm's row; "
                        "a metric named 'arm' needs another name")
    # The caller's own timestamp (e.g. the step's start, or a clock of its own) wins over ours. Ours is to the
    # millisecond by integer division (round(now, 3) goes through decimal text: microseconds a row in a loop)
    record["ts"] = ns // 1_000_000 / 1000 if cells.get("ts") is None else cells["ts"]
    if numbers or _WRITTEN.issuperset(map(type, cells.values())):  # (in C: the loop below, where no None is)
        record.update(cells)
    else:
        for k, v in cells.items():
            # None is "not measured this step": left out, since JSON's null is also what a NaN becomes, and a
            # reader would take it for one (a NaN alert from the file that the loop rightly never raised).
            if k not in record and v is not None:
                record[k] = v
    return record
