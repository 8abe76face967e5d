"""TinyZero / verl console lines: ``step:N - key:value - key:value ...`` found anywhere in a log. Pure.

TinyZero has no file logger: its metrics exist only as console lines, tee'd to a log, usually behind Ray's
``(main_task pid=N)`` prefix (often coloured), among unrelated lines and tracebacks. A metrics line is one where
``step:<int> - `` is followed by at least one ``key:value`` pair; NaN prints as ``nan``. Values are numbers when they
read as numbers (``nan``/``inf`` included, ``np.float64(0.5)`` unwrapped), else text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

from steptable.ingest.files.tail import MAX_LINE, open_binary
from steptable.ingest.parse import step_of
from steptable.ingest.parsed import Parsed

# "step:" not preceded by a word character or a slash (global_step:, timing/step: are not it)
# A carriage return ends the metrics too: what follows it (a progress bar redrawn over the line) is not a value.
_LINE: Final = re.compile(rb"(?<![\w/])step:[ \t]*(\d+)[ \t]+-[ \t]+([^\n\r]*)")
# Terminal escapes a coloured log carries: CSI (colours, cursor moves), OSC (hyperlinks, titles; ended by BEL or
# ESC \\) and the two-byte ones. Removed before parsing so that a hyperlinked key reads as its text.
_ANSI: Final = re.compile(rb"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_WRAPPED: Final = re.compile(r"^[A-Za-z_][\w.]*\((.*)\)$")
_INT: Final = re.compile(r"^[+-]?\d+$")


def console_value(text: str) -> Any:
    """A console value as an int, a float (``nan``, ``inf`` too) or text; ``np.float64(0.5)`` is unwrapped."""
    m = _WRAPPED.match(text)
    if m is not None:
        text = m.group(1)
    try:
        if _INT.match(text):  # (past 4,300 digits int() refuses: the value is read as a float, inf at worst)
            return int(text) if len(text) <= 4000 else float(text)
        return float(text)
    except ValueError:
        return text


_RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")


def parse_console_line(text: str) -> dict[str, Any] | None:
    """The metrics of one line's tail after ``step:N - ``; None when it holds no ``key:value`` pair."""
    row: dict[str, Any] = {}
    text = _RAY_REPEATED.sub("", text)  # Ray's log dedup marks a line "[repeated 2x across cluster]"
    for part in text.split(" - "):
        key, sep, val = part.rpartition(":")
        key = key.strip()
        if sep and key and " " not in key:
            row[key] = console_value(val.strip())
    return row or None


def has_console_metrics(data: bytes) -> bool:
    """Does ``data`` hold a metrics line (``step:N - key:value``), terminal escapes aside?"""
    return b"step:" in data and _LINE.search(_ANSI.sub(b"", data) if b"\x1b" in data else data) is not None


class ConsoleParser:
    """Chunks of complete log lines -> Parsed rows keyed by ``step`` (lines without metrics are ignored)."""

    def __init__(self, label: str) -> None:
        self.label = label

    def reset(self) -> None:
        pass

    def parse(self, chunk: bytes, lineno: object = None) -> Parsed:
        steps: list[int] = []
        rows: list[dict[str, Any]] = []
        if b"step:" not in chunk:
            return Parsed(steps=steps, rows=rows)
        if b"\x1b" in chunk:
            chunk = _ANSI.sub(b"", chunk)
        for m in _LINE.finditer(chunk):
            row = parse_console_line(m.group(2).decode("utf-8", "replace").rstrip())
            if row is None:
                continue
            step = step_of(m.group(1).decode("ascii", "replace"))
            if step is None:  # a step past int64 (or 5000 digits): not a step, and not the end of the log
                continue
            steps.append(step)
            rows.append({"step": step, **row})
        return Parsed(steps=steps, rows=rows, step_key="step")


def metrics_between(path: Path, start: int, end: int) -> tuple[bool, int]:
    """Does a console log hold a complete metrics line between ``start`` (a line's start) and ``end``? And where
    does the next search start (the start of its last, unfinished line)."""
    try:
        with open_binary(path) as f:
            f.seek(start)
            carry = b""  # the unfinished line at the end of the last block (its start: ``start``)
            while True:
                block = f.read(min(end - start - len(carry), 1 << 20))
                if not block:
                    break
                data = carry + block
                done = data.rfind(b"\n") + 1
                if done and has_console_metrics(data[:done]):
                    return True, start + done
                start += done
                carry = data[done:]
                if len(carry) > MAX_LINE:  # a line too long to be read as metrics: searched from its end on
                    start, carry = start + len(carry), b""
    except OSError:
        pass
    return False, start
