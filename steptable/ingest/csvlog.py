"""CsvParser: a CSV metrics log (Lightning's CSVLogger ``metrics.csv``, stable-baselines3's ``progress.csv``).

The first line is the header (a key may hold a space); each later line is a row. Before the header, a BOM, blank
lines and ``#`` comment lines are skipped (SB3's ``monitor.csv`` starts with ``#{"t_start": ...}``); when the first
line after comments holds a number, it is a row and the last comment, as wide and without numbers, is the header
(numpy's ``savetxt`` writes ``# step,loss``). An empty cell is absent (Lightning writes the union of all keys and
leaves the others empty), ``nan`` / ``inf`` are non-finite numbers, an integer or a decimal is a number
(``parse.number``: not ``007`` or ``0x10``), anything else is text. Both writers rewrite the file from the top when
keys are added; the tail sees the changed first bytes, resets, and the parser reads the new header. The step key is
the first of ``STEP_KEYS`` in the header (``step`` for Lightning, ``time/total_timesteps`` for SB3), else rows are
numbered by position. A row with more cells than the header is a bad line.
"""

from __future__ import annotations

import csv
from typing import Any

from steptable.ingest.jsonl import LineNo
from steptable.ingest.parse import NONFINITE, STEP_KEYS, BadLine, number, step_of
from steptable.ingest.store import Parsed


def cell(text: str) -> Any:
    """One CSV cell as the value it stands for; None for an empty cell (absent)."""
    s = text.strip()
    if not s:
        return None
    if len(s) <= 9 and (f := NONFINITE.get(s.lower())) is not None:
        return f
    n = number(s)  # not float(): it reads "1_000" and Arabic-Indic digits; "007" is a name
    return text if n is None else n


class CsvParser:
    def __init__(self, label: str) -> None:
        self.label = label
        self.reset()

    def reset(self) -> None:
        self.header: list[str] | None = None
        self._comment: tuple[str, int] | None = None  # the last ``#`` line before the header, and its number
        self.step_key: str | None = None
        self.ordinal = 0
        self.last_step: int | None = None

    def parse(self, chunk: bytes, lineno: LineNo) -> Parsed:
        first = lineno() if callable(lineno) else lineno
        text = chunk.decode("utf-8", "replace")
        steps: list[int] = []
        rows: list[dict[str, Any]] = []
        bad: list[BadLine] = []
        # Line by line (a record split over lines by a quoted newline is not a metrics row): one bad line costs
        # that line, never the chunk.
        for i, line in enumerate(text.splitlines()):
            no = first + i
            if self.header is None:
                line = line.removeprefix("\ufeff")  # before the csv module sees it: a BOM would keep the quotes
                if not line.strip():
                    continue
                if line.lstrip().startswith("#"):
                    self._comment = line.lstrip()[1:], no
                    continue
            try:
                cells = next(csv.reader([line]), [])
            except csv.Error as e:
                bad.append(BadLine(self.label, no, f"malformed CSV ({e})"))
                continue
            header = self.header
            if header is None:
                header = self._header_in_comment(cells, bad)
                if header is None:
                    self._read_header(cells, no, bad)
                    continue
            if not cells:
                continue
            if len(cells) > len(header):
                bad.append(BadLine(self.label, no, f"{len(cells)} cells under a header of {len(header)}"))
                continue
            row = {k: v for k, c in zip(header, cells, strict=False) if k and (v := cell(c)) is not None}
            step = step_of(row.get(self.step_key)) if self.step_key is not None else None
            if step is None:
                step = self.ordinal if self.step_key is None or self.last_step is None else self.last_step
                if self.step_key is not None:
                    got = row.get(self.step_key)
                    what = "missing" if got is None else f"not an integer ({got!r:.40})"
                    bad.append(BadLine(self.label, no, f"step {self.step_key!r} {what}: row kept under step {step}"))
            if self.step_key is not None:
                row[self.step_key] = step
            self.ordinal += 1
            self.last_step = step
            steps.append(step)
            rows.append(row)
        return Parsed(steps=steps, rows=rows, bad=bad, step_key=self.step_key)

    def _header_in_comment(self, cells: list[str], bad: list[BadLine]) -> list[str] | None:
        """The first line after ``#`` lines is a row (a number in it: a header names, it holds no number) and the
        last of them has as many cells, none a number (``#step,phase,loss`` over ``0,warmup,1.0``): that comment is
        the header (read now and returned) and the line a row. None otherwise."""
        if self._comment is None or not any(type(cell(c)) in (int, float) for c in cells):
            return None
        text, at = self._comment
        try:
            named = next(csv.reader([text]), [])
        except csv.Error:
            return None
        if len(named) != len(cells) or any(type(cell(c)) in (int, float) for c in named):
            return None
        return self._read_header(named, at, bad)

    def _read_header(self, cells: list[str], no: int, bad: list[BadLine]) -> list[str]:
        header = [c.strip() for c in cells]
        seen: set[str] = set()
        for j, k in enumerate(header):  # a name used twice would mix two columns: the later ones are left out
            if k in seen:
                bad.append(BadLine(self.label, no, f"header name {k!r} repeated: that column is left out"))
                header[j] = ""
            seen.add(k)
        self.header = header
        self.step_key = next((k for k in STEP_KEYS if k in header), None)
        return header
