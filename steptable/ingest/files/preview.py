"""preview_tail: rows from the end of a huge file, for a first frame before the full parse is done; preview_head:
rows from its start. Pure."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import BinaryIO

from steptable.ingest.files.discover import CONSOLE_SUFFIXES
from steptable.ingest.files.regular import open_regular
from steptable.ingest.files.tail import BLOCK, MAX_LINE
from steptable.ingest.parse import BadLine
from steptable.ingest.readers.arms import arm_values
from steptable.ingest.readers.console import ConsoleParser
from steptable.ingest.readers.csvlog import CsvParser
from steptable.ingest.readers.hf import parse_trainer_state
from steptable.ingest.readers.jsonl import JsonlParser
from steptable.ingest.store import RunStore

PREVIEW_BYTES = 4 * 1024 * 1024


def preview_tail(path: str | Path, max_bytes: int = PREVIEW_BYTES, kind: str | None = None,
                 max_lines: int | None = None) -> RunStore:
    """A store of the complete lines within the last ``max_bytes`` of ``path`` (from the first full line there),
    only the last ``max_lines`` of them where given (a JSONL's row per line: no more rows than a screen shows).

    ``meta["preview_offset"]`` is the byte offset the window starts at (0: the whole file was read);
    ``meta["arms"]`` how many arms its rows name. Line numbers in
    ``bad`` count from the start of the window; a file without a step key is numbered from 0 within the window.
    """
    path = Path(path)
    if kind is None:
        kind = ("trainer_state" if path.name == "trainer_state.json"
                else "csv" if path.suffix.lower() == ".csv"
                else "console" if path.suffix.lower() in CONSOLE_SUFFIXES else "jsonl")
    store = RunStore(path.name, path, kind)
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if kind == "trainer_state":  # one JSON document: there is no tail to take
            store.meta["preview_offset"] = 0
            try:
                store.add(parse_trainer_state(f.read(), str(path)), math.nan)
            except ValueError as e:
                store.add_bad([BadLine(str(path), 0, str(e))])
            return store
        start = max(0, size - max_bytes)
        head: list[bytes] = []
        for _ in range(3):
            # a CSV's header is at the top, not in the window: the one before the window was read and the one after
            # must agree (a file rewritten in between, as Lightning's is for a new key, has other columns)
            head = _header_lines(f) if kind == "csv" and start > 0 else []
            f.seek(start)
            data = f.read(size - start)
            if not head or _header_lines(f) == head:
                break
    if start > 0:
        data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
    data = data[: data.rfind(b"\n") + 1]
    whole = len(data)
    if max_lines is not None and kind != "csv":  # (a CSV's header is read apart: its window keeps its rows)
        data = _last_lines(data, max(max_lines, 1))
    store.meta["preview_offset"] = size - len(data) if start > 0 or len(data) < whole else 0
    parser = _parser(kind, str(path))
    if isinstance(parser, CsvParser):
        for no, line in enumerate(head, 1):
            parser.parse(line, no)
        parser.ordinal, parser.last_step = 0, None  # a row read with its header is not in the window
    pos, lineno = 0, 1
    arms: set[str] = set()  # the arms the rows name (several: StepLoggers of several arms share the file)
    while pos < len(data):
        end = data.find(b"\n", pos + BLOCK)
        end = len(data) if end < 0 else end + 1
        chunk = data[pos:end]
        parsed = parser.parse(chunk, lineno)
        arms.update(a for a in arm_values(parsed) or () if type(a) is str)
        store.add(parsed, math.nan)  # a backlog: arrival times unknown
        lineno += chunk.count(b"\n")
        pos = end
    store.meta["arms"] = len(arms)
    return store


def preview_head(path: str | Path, max_bytes: int, kind: str) -> RunStore:
    """A store of the complete lines within the first ``max_bytes`` of the ``kind`` (csv, jsonl, console) file
    ``path``: its first rows (a resumed process's first steps: steptable.ingest.resumes). Raises OSError."""
    path = Path(path)
    with open_regular(path) as f:
        data = f.read(max_bytes)
    if len(data) == max_bytes:
        data = data[: data.rfind(b"\n") + 1]
    store = RunStore(path.name, path, kind)
    store.add(_parser(kind, str(path)).parse(data, 1), math.nan)
    store.meta["preview_offset"] = 0
    return store


def _parser(kind: str, label: str) -> ConsoleParser | CsvParser | JsonlParser:
    """The line parser of a ``kind`` (csv, console, else jsonl) file."""
    return CsvParser(label) if kind == "csv" else ConsoleParser(label) if kind == "console" else JsonlParser(label)


def _last_lines(data: bytes, n: int) -> bytes:
    """The last ``n`` lines of ``data`` (complete lines, each ending in a newline); all of them if fewer."""
    cut = len(data) - 1
    for _ in range(n):
        cut = data.rfind(b"\n", 0, cut)
        if cut < 0:
            return data
    return data[cut + 1 :]


def _header_lines(f: BinaryIO) -> list[bytes]:
    """The lines of the CSV ``f`` up to its header: blank and comment lines before it, at most 1000 lines."""
    f.seek(0)
    parser = CsvParser("")
    lines = []
    for no in range(1, 1001):
        line = f.readline(MAX_LINE)  # (a header of thousands of keys is long)
        if not line:
            break
        lines.append(line)
        parser.parse(line, no)
        if parser.header is not None:
            break
    return lines
