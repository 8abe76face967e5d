"""CsvParser: a CSV metrics log (Lightning's CSVLogger ``metrics.csv``, stable-baselines3's ``progress.csv``).

The first line is the header (a key may hold a space); each later line is a row. Before the header, a BOM, blank lines
and ``#`` comment lines are skipped (SB3's ``monitor.csv`` starts with ``#{"t_start": ...}``); when the first line after
comments holds a number, it is a row and the last comment, as wide and without numbers, is the header (numpy's
``savetxt`` writes ``# step,loss``). An empty cell is absent (Lightning writes the union of all keys and leaves the
others empty), ``nan`` / ``inf`` are non-finite numbers, an integer or a decimal is a number (``parse.number``: not
``007`` or ``0x10``), anything else is text. Both writers rewrite the file from the top when keys are added; the tail
sees the changed first bytes, resets, and the parser reads the new header (the new content is read aside until it
settles: steptable.ingest.rewrite). The step key is the first of ``STEP_KEYS`` in the header (``step`` for Lightning,
``time/total_timesteps`` for SB3), else rows are numbered by position. A row with more cells than the header is a bad
line. A quoted cell may hold newlines (Python's ``csv.writer`` quotes any text with one), in a row or in the header
(Lightning's CSVLogger writes a key holding a newline as such a cell): its record is read whole, also when a read cut
it, up to ``MAX_RECORD_LINES`` lines (a stray quote costs its own line, not the rows after it; in the header, the
header is its line alone, so that the rows after it keep their columns).
"""

from __future__ import annotations

import csv
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from steptable.ingest.parse import NONFINITE, BadLine, number, step_of
from steptable.ingest.parsed import Parsed, stepless
from steptable.ingest.readers.jsonl import LineNo
from steptable.table.stepkeys import step_key_among

#: lines and characters one record may span; past either, its first line is a bad line (a quote that is never closed)
#: and the lines after it are read as lines of their own
MAX_RECORD_LINES = 100
MAX_RECORD_CHARS = 1 << 20
#: lines after an open quote that each read as a whole row (steps rising): the quote was a stray one, and a live
#: table must not wait for MAX_RECORD_LINES more rows to show them
STRAY_ROWS = 3


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
    """A CSV log read chunk by chunk: the header, the step key and a record still open carry over between chunks."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.reset()

    def reset(self) -> None:
        """Forget the header and any held record: the file is read again from its start."""
        self.header: list[str] | None = None
        self._comment: tuple[str, int] | None = None  # the last ``#`` line before the header, and its number
        self.step_key: str | None = None
        self.ordinal = 0
        self.last_step: int | None = None
        self._told_stepless = False  # a row without a step was reported (once a file)
        self._held: list[str] = []  # the lines of a record whose quoted cell is still open (the next read ends it)
        self._held_at = 0  # the number of its first line
        self._held_chars = 0
        self._alone: int | None = None  # the number of a line given up as a record's start: read without the next

    def parse(self, chunk: bytes, lineno: LineNo) -> Parsed:
        """The rows of ``chunk`` (complete lines, the first of them line ``lineno``) and its bad lines; a record
        whose quoted cell is still open at the chunk's end is held for the next chunk (or :meth:`flush`)."""
        first = lineno() if callable(lineno) else lineno
        text = chunk.decode("utf-8", "replace")
        steps: list[int] = []
        rows: list[dict[str, Any]] = []
        bad: list[BadLine] = []
        # Record by record: one bad record costs that record, never the chunk.
        for no, line in self._records(text, first, bad):
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
                step = self.ordinal
                if self.step_key is not None:
                    step, note, once = stepless(self.label, no, self.step_key, row.get(self.step_key), self.last_step,
                                          self.ordinal)
                    if not (once and self._told_stepless):
                        self._told_stepless = self._told_stepless or once
                        bad.append(note)
            if self.step_key is not None:
                row[self.step_key] = step
            self.ordinal += 1
            self.last_step = step
            steps.append(step)
            rows.append(row)
        return Parsed(steps=steps, rows=rows, bad=bad, step_key=self.step_key)

    def flush(self) -> Parsed:
        """The end of a one-shot read: a record whose quote never closed costs its first line (said), and the lines
        held after it are read as the rows they are (nothing would end them: a last read had them unshown, unsaid);
        a header's is always given up so (the file's rows would all go unread), also where the read caught the
        header being written (a quoted name with a newline, cut there): that read says it, the next reads it."""
        if not self._held:
            return Parsed(steps=[], rows=[], bad=[], step_key=self.step_key)
        if self.header is not None and not self._stray(self._held):  # a row still being written: not a row yet
            self._held = []
            return Parsed(steps=[], rows=[], bad=[], step_key=self.step_key)
        bad: list[BadLine] = []
        again = self._let_go("quote not closed by the end of the file", bad)
        parsed = self.parse("".join(line + "\n" for _, line in again).encode(), again[0][0])
        parsed.bad[:0] = bad
        return parsed

    def _stray(self, held: Sequence[str]) -> bool:
        """Do the lines after the first of ``held`` (the lines of a record whose quote is open) each read as a whole
        row, of steps rising from the last row's? Then the quote was a stray one, not a cell with newlines (whose lines
        are parts of one cell: ``42``, ``the end``). Before the header, rows of the header the first line makes
        alone."""
        header, key = self.header, self.step_key
        if header is None:
            header = [c.strip() for c in _cells(held[0]) or []]
            key = step_key_among(k for k in header if k)
        last = self.last_step if self.last_step is not None else -1
        for line in held[1:]:
            cells = _cells(line)
            if cells is None or len(cells) != len(header):
                return False
            if key is not None:
                step = step_of(cell(cells[header.index(key)]))
                if step is None or step <= last:
                    return False
                last = step
        return len(held) > 1

    def _records(self, text: str, first: int, bad: list[BadLine]) -> Iterable[tuple[int, str]]:
        """The records of a chunk whose first line is line ``first``, each with the number of its first line: a line,
        or the lines a quoted cell with newlines spans (begun, maybe, in an earlier chunk). Lines end at a newline only:
        ``splitlines`` also ends them at characters the csv module keeps in a cell (U+2028, U+001C), and the rest of
        such a row would read as a row of its own, merged into the step before it."""
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        if "\r" in text:
            lines = [line.removesuffix("\r") for line in lines]
        if not self._held and '"' not in text:  # (the usual chunk: no quote, each line a record)
            return enumerate(lines, first)
        return self._joined(deque(enumerate(lines, first)), bad)

    def _joined(self, todo: deque[tuple[int, str]], bad: list[BadLine]) -> Iterator[tuple[int, str]]:
        while todo:
            no, line = todo.popleft()
            if not self._held:
                if no != self._alone and self._opens(line):
                    self._held, self._held_at, self._held_chars = [line], no, len(line)
                else:
                    self._alone = None
                    yield no, line
                continue
            self._held.append(line)
            self._held_chars += len(line) + 1
            if not ends_quoted(line, quoted=True):
                yield self._held_at, "\n".join(self._held)
                self._held = []
            elif (len(self._held) >= MAX_RECORD_LINES or self._held_chars > MAX_RECORD_CHARS
                  or (len(self._held) > STRAY_ROWS and self._stray(self._held))):
                todo.extendleft(reversed(self._let_go(f"quote not closed within {len(self._held)} lines", bad)))

    def _opens(self, line: str) -> bool:
        """Does ``line``, read as the start of a record, leave a quoted cell open? Never a comment or blank line
        before the header (nor the BOM before it: the csv module would read its quote as a character)."""
        if self.header is None:
            line = line.removeprefix("\ufeff")
            if line.lstrip().startswith("#"):
                return False
        return ends_quoted(line)

    def _let_go(self, why: str, bad: list[BadLine]) -> list[tuple[int, str]]:
        """Give up the held record (said in ``bad`` as ``why``): the numbered lines to read again, as lines of their
        own. A row's first line is skipped; the header's is kept, read alone (the names before its open quote, and
        the rest of the line as the last name: the rows after it keep their columns)."""
        held, at = self._held, self._held_at
        self._held = []
        if self.header is None:
            bad.append(BadLine(self.label, at, f"{why}: line read alone"))
            self._alone = at
            return list(enumerate(held, at))
        bad.append(BadLine(self.label, at, f"{why}: line skipped"))
        return list(enumerate(held[1:], at + 1))

    def _header_in_comment(self, cells: list[str], bad: list[BadLine]) -> list[str] | None:
        """The first line after ``#`` lines is a row (a number in it: a header names, it holds no number) and the
        last of them has as many cells, none a number (``#step,phase,loss`` over ``0,warmup,1.0``): that comment is
        the header (read now and returned) and the line a row. None otherwise."""
        if self._comment is None or not any(type(cell(c)) in (int, float) for c in cells):
            return None
        text, at = self._comment
        named = _cells(text)
        if named is None or len(named) != len(cells) or any(type(cell(c)) in (int, float) for c in named):
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
        self.step_key = step_key_among(k for k in header if k)
        return header


def _cells(line: str) -> list[str] | None:
    """The cells of one record as the csv module reads them; None where it refuses it."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return None


def ends_quoted(line: str, quoted: bool = False) -> bool:
    """Does ``line`` end inside a quoted cell (``quoted``: it starts inside one)? Read as the csv module reads it: a
    quote opens a quoted cell only at a cell's start, ``""`` in one is a quote, and another quote closes it."""
    at = 0
    while True:
        q = line.find('"', at)
        if not quoted:
            while q > 0 and line[q - 1] != ",":  # in an unquoted cell (``5" screen``): a character
                q = line.find('"', q + 1)
            if q < 0:
                return False
            q = line.find('"', q + 1)
        while q >= 0 and line.startswith('"', q + 1):
            q = line.find('"', q + 2)
        if q < 0:
            return True
        quoted, at = False, q + 1
