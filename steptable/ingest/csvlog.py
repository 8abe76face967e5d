"""CsvParser: a CSV metrics log (Lightning's CSVLogger ``metrics.csv``, stable-baselines3's ``progress.csv``).

The first line is the header (a key may hold a space); each later line is a row. An empty cell is absent (Lightning
writes the union of all keys and leaves the others empty), ``nan`` / ``inf`` are non-finite numbers, an integer or a
decimal is a number, anything else is text. Both writers rewrite the file from the top when keys are added; the
tail sees the changed first bytes, resets, and the parser reads the new header. The step key is the first of
``STEP_KEYS`` in the header (``step`` for Lightning, ``time/total_timesteps`` for SB3), else rows are numbered by
position. A row with more cells than the header is a bad line.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from steptable.ingest.jsonl import LineNo
from steptable.ingest.parse import BOM, NONFINITE, STEP_KEYS, BadLine, step_of
from steptable.ingest.store import Parsed


def cell(text: str) -> Any:
    """One CSV cell as the value it stands for; None for an empty cell (absent)."""
    s = text.strip()
    if not s:
        return None
    if len(s) <= 9 and (f := NONFINITE.get(s.lower())) is not None:
        return f
    try:
        return int(s) if s.lstrip("+-").isdigit() and s.isascii() else float(s)
    except ValueError:
        return text


class CsvParser:
    def __init__(self, label: str) -> None:
        self.label = label
        self.reset()

    def reset(self) -> None:
        self.header: list[str] | None = None
        self.step_key: str | None = None
        self.ordinal = 0
        self.last_step: int | None = None

    def parse(self, chunk: bytes, lineno: LineNo) -> Parsed:
        first = lineno() if callable(lineno) else lineno
        text = chunk.decode("utf-8", "replace")
        steps: list[int] = []
        rows: list[dict[str, Any]] = []
        bad: list[BadLine] = []
        for i, cells in enumerate(csv.reader(io.StringIO(text))):
            no = first + i
            if self.header is None:
                self.header = [c.strip() for c in cells]
                if self.header:
                    self.header[0] = self.header[0].removeprefix(BOM.decode("utf-8"))
                self.step_key = next((k for k in STEP_KEYS if k in self.header), None)
                continue
            if not cells:
                continue
            if len(cells) > len(self.header):
                bad.append(BadLine(self.label, no, f"{len(cells)} cells under a header of {len(self.header)}"))
                continue
            row = {k: v for k, c in zip(self.header, cells, strict=False) if k and (v := cell(c)) is not None}
            step = step_of(row.get(self.step_key)) if self.step_key is not None else None
            if step is None:
                step = self.ordinal if self.step_key is None or self.last_step is None else self.last_step
            if self.step_key is not None:
                row[self.step_key] = step
            self.ordinal += 1
            self.last_step = step
            steps.append(step)
            rows.append(row)
        return Parsed(steps=steps, rows=rows, bad=bad, step_key=self.step_key)
