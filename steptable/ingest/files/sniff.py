"""Tell a file's kind from its first bytes or lines, for discovery: a console log or JSONL (``log_kind``), a JSON
object at the start (``starts_like_jsonl``), metric rows in an unnamed ``*.jsonl`` (``sniff_jsonl``), a trackio
database (``is_trackio_db``). Verdicts on unchanged files are cached, so a discovery pass does not read them again.
A FIFO or device is never opened for reading. Pure but for reading the files' heads."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from steptable.ingest.files.regular import open_regular
from steptable.ingest.files.walk import OnError
from steptable.ingest.parse import LineError, decode_line, flatten, step_of
from steptable.table.stepkeys import step_key_among

#: is_trackio_db's verdicts: path -> ((inode, mtime), verdict); a database is opened once while it is unchanged
_TRACKIO: dict[Path, tuple[tuple[int, int], bool]] = {}


def is_trackio_db(path: Path) -> bool:
    """Does ``path`` hold trackio's ``metrics`` table? (An unreadable file: no.)"""
    from steptable.ingest.readers.trackiodb import is_trackio

    try:
        st = os.stat(path)
    except OSError:
        return False
    sig = (st.st_ino, st.st_mtime_ns)
    hit = _TRACKIO.get(path)
    if hit is not None and (hit[1] or hit[0] == sig):  # (once trackio's, always: the writer only adds to it)
        return hit[1]
    verdict = is_trackio(path)
    if len(_TRACKIO) >= _KINDS_MAX:
        _TRACKIO.clear()
    _TRACKIO[path] = (sig, verdict)
    return verdict


#: log_kind's verdicts by path: (inode, size, mtime) -> kind; a file that has not changed is not read again
_KINDS: dict[Path, tuple[tuple[int, int, int], str | None]] = {}
_KINDS_MAX = 200_000


def log_kind(path: Path, limit: int = 1 << 20) -> str | None:
    """What a ``.log``/``.txt``/``.out`` file holds, from its first line (one readline per discovery pass while
    the file changes): "jsonl" when it is a JSON object with a step ($VERL_FILE_LOGGER_PATH=...metrics.log; a
    console log may open with a printed config dict, and verl's config has a "data" key but no step), "console"
    otherwise, None while that line is incomplete. A FIFO is never opened (its reader reports it)."""
    try:
        st = os.stat(path)
    except OSError:
        return "console"  # let the reader report it
    if not stat.S_ISREG(st.st_mode):
        return "console"
    sig = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _KINDS.get(path)
    if hit is not None and hit[0] == sig:
        return hit[1]
    kind = _first_line_kind(path, limit)
    if len(_KINDS) >= _KINDS_MAX:
        _KINDS.clear()
    _KINDS[path] = (sig, kind)
    return kind


def _first_line_kind(path: Path, limit: int) -> str | None:
    try:
        with open_regular(path) as f:
            line = f.readline(limit)
    except OSError:
        return "console"  # let the reader report it
    if not line.endswith(b"\n"):
        return None if len(line) < limit else "console"
    first = line.removeprefix(b"\xef\xbb\xbf").strip()
    if first[:1] != b"{":
        return "console"
    try:
        row = json.loads(first)
    except (ValueError, RecursionError):
        return "console"
    return "jsonl" if isinstance(row, dict) and step_key_among(row, lambda k: step_of(row[k]) is not None) is not None \
        else "console"


def starts_like_jsonl(path: Path) -> bool:
    """Does a regular file begin (after a BOM and blanks) with a JSON object? Never blocks on a FIFO."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] == b"{"


#: malformed lines at the start of an unnamed ``*.jsonl`` after which it is judged not to hold metrics
SNIFF_BAD_LINES = 8


def sniff_jsonl(path: Path, limit: int = 1 << 16, max_limit: int = 8 << 20,
                on_error: OnError | None = None) -> bool | None:
    """Does a ``*.jsonl`` hold metric rows? From its first well-formed line: an object with a step key or mostly
    numbers (up to ``SNIFF_BAD_LINES`` malformed lines before it are passed over; the reader reports them).

    The first ``limit`` bytes are read; a first line longer than that (verl's step-0 row with thousands of
    validation keys) is read on, up to ``max_limit``. None: no complete first line yet, or the file cannot be read
    (``on_error`` is told); ask again later."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open, a device never end the read
            raise OSError(0, "not a regular file", str(path))
        with open(path, "rb") as f:
            head = f.read(limit)
            while b"\n" not in head and len(head) >= limit and limit < max_limit:
                more = f.read(limit)
                if not more:
                    break
                head += more
                limit *= 2
    except OSError as e:
        if on_error is not None and not isinstance(e, FileNotFoundError):
            on_error(path, e)
        return None
    lines = head.split(b"\n")
    bad = 0
    for line in lines[:-1]:  # complete lines only
        try:
            obj = decode_line(line)
        except LineError:  # a malformed first row (a crash mid-write, then a restart) does not decide alone
            bad += 1
            if bad >= SNIFF_BAD_LINES:
                return False
            continue
        if obj is None:
            continue
        row = flatten(obj)
        if step_key_among(row) is not None:
            return True
        numeric = sum(type(v) in (int, float) for v in row.values())
        return numeric >= 2 and numeric * 2 >= len(row)
    return False if len(head) >= limit else None
