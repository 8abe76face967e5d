"""table.txt: every row a StepLogger's arm logged, with every column, rendered from its JSONL at the end of the run."""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from steptable import render, runinfo
from steptable.columns import Col

TABLE_NAME = "table.txt"


def write(cols: Sequence[Col], jsonl: Path, run_dir: Path, arm: str | None, header_every: int) -> Path | None:
    """Render ``jsonl``'s rows of ``arm`` to ``table.txt`` in ``run_dir`` (``table.<arm>.txt`` when other arms
    write to the same file), the header again every ``5 * header_every`` rows. The rows are read as every reader
    of the file reads them (steptable.ingest: a resumed run's rows replace the crashed run's, a second row of a
    step joins the first), so table.txt, tail and watch show the same rows. None when there is no regular JSONL
    file to read (a FIFO or /dev/stdout cannot be read back). Raises OSError."""
    from steptable.ingest.jsonl import JsonlParser  # (at the end of a run only: the loop never pays for it)
    from steptable.ingest.store import Parsed, RunStore
    from steptable.ingest.table import cols_to_rows

    try:
        if not stat.S_ISREG(os.stat(jsonl).st_mode):
            return None
    except OSError:  # no JSONL to read back (its failure was reported when it could not be written)
        return None
    cols = tuple(cols)
    store = RunStore(TABLE_NAME, jsonl, "jsonl", arm or "")
    parser = JsonlParser(str(jsonl))
    shared = False
    with open(jsonl, "rb") as src:
        lineno = 1
        while lines := src.readlines(1 << 20):  # whole lines (a partial last one from a crash is a bad line)
            parsed = parser.parse(b"".join(lines), lineno)
            lineno += len(lines)
            rows = parsed.rows if parsed.rows is not None else cols_to_rows(parsed.cols or {}, len(parsed.steps))
            keep = [i for i, r in enumerate(rows) if arm is None or r.get("arm", arm) == arm]
            shared = shared or len(keep) < len(rows)
            store.add(Parsed(steps=[parsed.steps[i] for i in keep], rows=[rows[i] for i in keep],
                             step_key=parsed.step_key), math.nan)
    render_row = render.compile_row(cols)
    tmp = run_dir / f".{TABLE_NAME}.{os.getpid()}.{id(cols)}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as dst:
            dst.write(render.header(cols) + "\n")
            for i in range(len(store)):
                if header_every and i and i % (header_every * 5) == 0:
                    dst.write(render.header(cols) + "\n")
                dst.write(render_row(store.row(i)) + "\n")
        out = run_dir / (f"table.{runinfo.name_part(str(arm))}.txt" if shared else TABLE_NAME)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
