"""table.txt: every row a StepLogger's arm logged, with every column, rendered from its JSONL at the end of the run."""

from __future__ import annotations

import bisect
import json
import math
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from steptable import render
from steptable.columns import Col

TABLE_NAME = "table.txt"

#: keys that say nothing about whether two rows of one step are the same measurement
_NOT_MEASURES = frozenset({"step", "arm", "ts"})


def write(cols: Sequence[Col], jsonl: Path, run_dir: Path, arm: str | None, header_every: int) -> Path | None:
    """Render ``jsonl``'s rows of ``arm`` to ``table.txt`` in ``run_dir`` (``table.<arm>.txt`` when other arms
    write to the same file), the header again every ``5 * header_every`` rows. None when there is no regular JSONL
    file to read (a FIFO or /dev/stdout cannot be read back). Raises OSError."""
    try:
        if not stat.S_ISREG(os.stat(jsonl).st_mode):
            return None
    except OSError:  # no JSONL to read back (its failure was reported when it could not be written)
        return None
    cols = tuple(cols)
    render_row = render.compile_row(cols)
    tmp = run_dir / f".{TABLE_NAME}.{os.getpid()}.{id(cols)}.tmp"
    shared = False
    steps: list[float] = []
    rows: list[dict[str, Any]] = []
    try:
        with open(jsonl, "rb") as src, open(tmp, "w", encoding="utf-8") as dst:
            for raw in src:
                try:
                    row = json.loads(raw)
                except ValueError:
                    continue  # a partial line from a crash before this run resumed
                if not isinstance(row, dict):
                    continue
                if arm is not None and row.get("arm", arm) != arm:
                    shared = True
                    continue
                place_row(steps, rows, row)
            dst.write(render.header(cols) + "\n")
            for kept, row in enumerate(rows):
                if header_every and kept and kept % (header_every * 5) == 0:
                    dst.write(render.header(cols) + "\n")
                dst.write(render_row(row) + "\n")
        out = run_dir / (f"table.{file_safe(str(arm))}.txt" if shared else TABLE_NAME)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def place_row(steps: list[float], rows: list[dict[str, Any]], row: dict[str, Any]) -> None:
    """Put a row read back from the JSONL where every reader of the file puts it (steptable.ingest.store): a step
    logged again that shares keys with its first row is a run resumed from a checkpoint (its rows replace the
    crashed run's from there on); one that does not adds to that row (an evaluation logged after training)."""
    step = row.get("step")
    at: float | None = None
    if isinstance(step, (int, float)) and not isinstance(step, bool) and math.isfinite(step):
        at = float(step)
    if at is None or not steps or at > steps[-1]:
        steps.append(at if at is not None else (steps[-1] if steps else -math.inf))
        rows.append(row)
        return
    i = bisect.bisect_left(steps, at)
    if steps[i] == at:
        if i < len(steps) - 1 and (rows[i].keys() & row.keys()) - _NOT_MEASURES:
            del steps[i:], rows[i:]
            steps.append(at)
            rows.append(row)
        else:
            rows[i] = {**rows[i], **row}
        return
    steps.insert(i, at)
    rows.insert(i, row)


def file_safe(text: str) -> str:
    """``text`` as a file name part: letters, digits, ``.-_`` kept, anything else ``_``; at most 64 characters."""
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in ".-_") else "_" for ch in text)[:64].strip(".")
    return safe or "arm"
