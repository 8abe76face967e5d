"""table.txt: every row a StepLogger's arm logged, with every column, rendered from its JSONL at the end of the run.

The rows are the ones every reader of the file shows, read back by steptable.logger.endofrun in O(columns) memory (plus
32 bytes a row). Rendering costs about 50 us a row, so a longer run's table holds its last ``MAX_ROWS`` rows, and
its first line says so.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from steptable.logger.wholefile import replace_whole
from steptable.table import render, runinfo
from steptable.table.cells import sanitize
from steptable.table.columns import Col, fit_to, with_notations

TABLE_NAME = "table.txt"
#: rows table.txt holds at most: the last ones of a longer run (about 5 s of rendering)
MAX_ROWS = 100_000
#: cells of the columns no printed row had (keys an automatic row had no room for) a table holds at most: each is
#: fitted, noted and rendered at close (about 10 us; 500 such keys over 3000 rows made a 1.4 s close 14 s)
EXTRA_CELLS = 500_000


@dataclass(frozen=True, slots=True)
class Written:
    """What :func:`write_table` wrote: the table's path and its row counts."""

    path: Path
    rows: int  # rows of the run
    shown: int  # rows in the file: the last ``shown`` of them
    logged: int  # lines of the arm in the JSONL (more than ``rows`` where rows of one step merged, or a step that
    # went back replaced the rows logged after it, as every reader of the file takes it)
    went_back: int = 0  # how many times a step went back so
    jsonl_name: str = "metrics.jsonl"  # the file read back
    cut: int = 0  # columns given as ``extra`` left out of the file (past EXTRA_CELLS)

    def columns(self) -> str:
        """Which columns the table holds, for the end-of-run line: "every column", or how many were left out."""
        if not self.cut:
            return "every column"
        return f"every column but {self.cut} (too many cells; every key: {sanitize(self.jsonl_name)})"

    def note(self, logged_here: int, why_missing: str) -> str:
        """What the table holds, for the end-of-run dump: "all rows", or which rows and why not all of them.
        ``logged_here``: the rows the logger logged; ``why_missing``: why the JSONL holds fewer, as its writer saw
        it (said only then)."""
        note = "all rows" if self.shown == self.rows else f"the last {self.shown} rows"
        if self.rows < self.logged:  # (a per-epoch step counter: each epoch read as a restart of the last)
            some = f"the {self.rows}" if self.shown == self.rows else f"the last {self.shown} of {self.rows}"
            why = (f"a step went back {self.went_back} time(s) and replaced the rows logged after it"
                   if self.went_back else "rows of one step merged")
            note = f"{some} steps ({self.logged} rows logged: {why})"
        if self.logged < logged_here:  # the file lost rows the logger wrote: the table cannot hold them
            name = self.jsonl_name
            note = (f"{self.logged} of {logged_here} rows ({why_missing})" if note == "all rows" else
                    f"{note}; {name} holds {self.logged} of the {logged_here} rows logged ({why_missing})")
        return note


def _fitted(cols: Sequence[Col], rows: Iterable[Mapping[str, Any]]) -> tuple[Col, ...]:
    """``cols``, those declared without a width widened to their values in ``rows``."""
    out = tuple(cols)
    for r in rows:
        out = fit_to(out, r) or out
    return out


def write(cols: Sequence[Col], jsonl: Path, run_dir: Path, arm: Any, header_every: int,
          max_rows: int | None = MAX_ROWS) -> Path | None:
    """:func:`write_table`'s path."""
    done = write_table(cols, jsonl, run_dir, arm, header_every, max_rows)
    return None if done is None else done.path


def write_table(cols: Sequence[Col], jsonl: Path, run_dir: Path, arm: Any, header_every: int,
                max_rows: int | None = MAX_ROWS, extra: Sequence[Col] = ()) -> Written | None:
    """Render ``jsonl``'s rows of ``arm`` to ``table.txt`` in ``run_dir`` (``table.<arm>.txt`` when other arms
    write to the same file), the header again every ``5 * header_every`` rows; the last ``max_rows`` rows of a
    longer run (None: every row), under a first line that says so. ``extra``: columns after ``cols`` that no row
    was fitted to (keys the printed row had no room for), fitted to the rows here, the first of them only past
    :data:`EXTRA_CELLS` (:attr:`Written.cut` counts the others). Written to a temporary file and renamed: never
    half a table. None when there is no regular JSONL file to read (a FIFO or /dev/stdout cannot be
    read back). Raises OSError."""
    try:
        if not stat.S_ISREG(os.stat(jsonl).st_mode):
            return None
    except OSError:  # no JSONL to read back (its failure was reported when it could not be written)
        return None
    from steptable.logger.endofrun import Plan  # (at the end of a run only: the loop never pays for the readers)

    every = header_every * 5
    # non-blocking: a FIFO put at the path since the look above must not hold up the close waiting for its writer
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    with open(os.open(jsonl, flags), "rb") as src:
        if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            return None
        plan = Plan(str(jsonl), arm)
        plan.read(src)
        n = len(plan.steps)
        lo = 0 if max_rows is None else max(n - max(max_rows, 1), 0)
        kept = list(extra[: EXTRA_CELLS // max(n - lo, 1)])
        if kept:
            cols = (*cols, *_fitted(kept, plan.rows(src, lo, [c.key for c in kept])))
        keys = [c.key for c in cols]
        cols = with_notations(cols, plan.rows(src, lo, keys))  # each column's notation, from the rows written
        render_row = render.compile_row(cols)
        head = render.header(cols) + "\n"
        out = run_dir / (f"table.{runinfo.name_part(str(arm))}.txt" if plan.shared else TABLE_NAME)
        def fill(dst: TextIO) -> None:
            if lo:
                dst.write(f"# the last {n - lo} of {n} rows; every row: {sanitize(jsonl.name)} beside this file "
                          f"(steptable tail {sanitize(str(run_dir))} -n 0)\n")
            dst.write(head)
            for i, cells in enumerate(plan.rows(src, lo, keys)):
                if every and i and i % every == 0:
                    dst.write(head)
                dst.write(render_row(cells) + "\n")

        replace_whole(out, fill)
    return Written(out, n, n - lo, plan.count, plan.went_back, jsonl.name, len(extra) - len(kept))
