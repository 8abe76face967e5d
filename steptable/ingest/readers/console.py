"""Console metrics lines found in a log, among unrelated lines and tracebacks. Pure. Two writers:

- TinyZero / verl: ``step:N - key:value - key:value ...`` anywhere in a line. TinyZero has no file logger: its metrics
  exist only as console lines, tee'd to a log, usually behind Ray's ``(main_task pid=N)`` prefix (often coloured). A
  metrics line is one where ``step:<int> - `` is followed by at least one ``key:value`` pair.
- torchtune: ``Step N | key:value key:value ...`` at a line's start (its ``DiskLogger`` file ``log_<ts>.txt``, its
  ``StdoutLogger`` tee'd to a log). Such a line that does not read whole is a bad line, reported with its number: a
  step that is not an integer, text that is not ``key:value``, a key without its value; the pairs that do read are
  kept. A line cut by a crash and continued by the next write (``... lr:0.0Step 7 | ...``) is reported and the row
  after the cut kept. A value may hold spaces (a tensor's repr): words without a colon belong to the pair before.

NaN prints as ``nan``. Values are numbers when they read as numbers (``nan``/``inf`` included, ``np.float64(0.5)``
and ``tensor(0.5)`` unwrapped), else text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

from steptable.ingest.files.tail import MAX_LINE, open_binary
from steptable.ingest.parse import BadLine, step_of
from steptable.ingest.parsed import Parsed
from steptable.ingest.readers.jsonl import LineNo

# "step:" not preceded by a word character or a slash (global_step:, timing/step: are not it)
# A carriage return ends the metrics too: what follows it (a progress bar redrawn over the line) is not a value.
_LINE: Final = re.compile(rb"(?<![\w/])step:[ \t]*(\d+)[ \t]+-[ \t]+([^\n\r]*)")
# torchtune's "Step N | ..." at a line's start (NULs before it: a crash's hole in the file); the step is any word, so
# that a damaged one is reported
_TUNE: Final = re.compile(rb"(?:^|(?<=\n))\x00*Step[ \t]+(\S+)[ \t]+\|([^\n\r]*)")
_KEY: Final = re.compile(r"^[\w./\-\[\]]+$")  # (``device='cuda`` of a tensor's repr is no key)
_TUNE_AGAIN: Final = re.compile(r"Step[ \t]+\d+[ \t]+\|")
# Terminal escapes a coloured log carries: CSI (colours, cursor moves), OSC (hyperlinks, titles; ended by BEL or
# ESC \\) and the two-byte ones. Removed before parsing so that a hyperlinked key reads as its text.
_ANSI: Final = re.compile(rb"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_WRAPPED: Final = re.compile(r"^[A-Za-z_][\w.]*\((.*)\)$")
_INT: Final = re.compile(r"^[+-]?\d+$")


def console_value(text: str) -> Any:
    """A console value as an int, a float (``nan``, ``inf`` too) or text; ``np.float64(0.5)`` and
    ``tensor(0.5, device='cuda:0')`` are unwrapped."""
    m = _WRAPPED.match(text)
    if m is not None:  # (``tensor(0.5000, device='cuda:0')``: the value is the first argument)
        text = m.group(1).split(", ", 1)[0]
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


def parse_tune_line(text: str) -> tuple[dict[str, Any], list[str]]:
    """The metrics of a torchtune line's tail after ``Step N |``, and what in it does not read (said in words)."""
    pairs: list[tuple[str, list[str]]] = []
    wrong: list[str] = []
    for word in text.split():
        key, sep, value = word.partition(":")
        if sep and (not key or _KEY.match(key)):
            pairs.append((key, [value] if value else []))
        elif pairs:  # (a value with spaces: ``tensor(0.5, grad_fn=<AddBackward0>)``)
            pairs[-1][1].append(word)
        else:
            wrong.append(f"{word!r:.40} is not key:value")
    row: dict[str, Any] = {}
    for key, words in pairs:
        if not key:
            wrong.append(f"{':' + ' '.join(words)!r:.40} has no key")
        elif not words:
            wrong.append(f"{key!r:.40} has no value")
        else:
            row[key] = console_value(" ".join(words))
    return row, wrong


def has_console_metrics(data: bytes) -> bool:
    """Does ``data`` hold a metrics line (``step:N - key:value`` or ``Step N | key:value``), escapes aside?"""
    if b"step:" not in data and b"Step" not in data:
        return False
    data = _ANSI.sub(b"", data) if b"\x1b" in data else data
    return _LINE.search(data) is not None or _TUNE.search(data) is not None


class ConsoleParser:
    """Chunks of complete log lines -> Parsed rows keyed by ``step`` (lines without metrics are ignored)."""

    def __init__(self, label: str) -> None:
        self.label = label

    def reset(self) -> None:
        pass

    def parse(self, chunk: bytes, lineno: LineNo | None = None) -> Parsed:
        """The metrics lines of ``chunk`` (complete lines, the first of them line ``lineno``), in file order."""
        found: list[tuple[int, int, dict[str, Any]]] = []  # (position, step, row)
        bad: list[BadLine] = []
        if b"step:" not in chunk and b"Step" not in chunk:
            return Parsed(steps=[], rows=[])
        if b"\x1b" in chunk:
            chunk = _ANSI.sub(b"", chunk)
        if b"step:" in chunk:
            for m in _LINE.finditer(chunk):
                row = parse_console_line(m.group(2).decode("utf-8", "replace").rstrip())
                step = step_of(m.group(1).decode("ascii", "replace"))
                if row is not None and step is not None:  # (a step past int64 is not one, nor the end of the log)
                    found.append((m.start(), step, row))
        if b"Step" in chunk:
            first = lineno() if callable(lineno) else (lineno or 1)
            for m in _TUNE.finditer(chunk):
                self._tune(m, m.start(), found, bad, first + chunk.count(b"\n", 0, m.start()))
        if b"step:" in chunk and b"Step" in chunk:  # (both kinds in one log: in file order)
            found.sort(key=lambda t: t[0])
        return Parsed(steps=[s for _, s, _ in found], rows=[{"step": s, **r} for _, s, r in found], bad=bad,
                      step_key="step")

    def _tune(self, m: re.Match[bytes], at: int, found: list[tuple[int, int, dict[str, Any]]], bad: list[BadLine],
              no: int) -> None:
        """One torchtune line (line ``no``, at ``at`` in the chunk): its row to ``found``, what does not read to
        ``bad``."""
        word = m.group(1).decode("utf-8", "replace")
        text = m.group(2).decode("utf-8", "replace")
        again = _TUNE_AGAIN.search(text)
        if again is not None:  # cut by a crash, then the next write: the row after the cut is the whole one
            bad.append(BadLine(self.label, no, "line cut short and continued by the next row: its start skipped"))
            inner = _TUNE.match(text[again.start():].encode())
            if inner is not None:
                self._tune(inner, at, found, bad, no)
            return
        step = step_of(word) if word.isdigit() else None
        if step is None:
            bad.append(BadLine(self.label, no, f"step {word!r:.40} not an integer: line skipped"))
            return
        row, wrong = parse_tune_line(text)
        if not row:
            bad.append(BadLine(self.label, no, "no key:value after 'Step N |': line skipped"))
            return
        if wrong:
            bad.append(BadLine(self.label, no, "; ".join(wrong[:3]) + ": left out, the rest kept"))
        found.append((at, step, row))


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
