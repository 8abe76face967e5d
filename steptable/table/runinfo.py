"""The run's own description beside its metrics: ``steptable.json`` (``steptable.<arm>.json`` for a named arm).

StepLogger writes it (steptable.logger.wholefile) when its first row is written and again at close: the column
registry it printed with (key, width, header, format, meaning, direction, alignment, streamed or dump-only), the arm,
when the run started, when it was closed, and how (``end``: only where a ``with StepLogger`` block ended on an
exception). Readers (``tail``, ``summary``, ``legend``, ``watch``) then lay the run out with the same columns, numbers
and words as its stdout, and know that a run which was closed has ended rather than stalled, and whether it crashed.
Pure: json and the column registry only; this module never opens a file. The file is text from the disk: it is
validated field by field, and one that does not validate is ignored (the run is then laid out as any other JSONL).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from steptable.table import sidejson
from steptable.table.columns import Col, ColumnError, validate
from steptable.table.sidejson import SideFileError

VERSION = 1
NAME = "steptable.json"
#: the key of a row a StepLogger wrote while another live process held its arm's writer lock: its pid (readers show
#: those rows apart, and say "two writers", instead of reading the interleaving as resumes)
WRITER_KEY = "writer_pid"
#: a description larger than this is not read (a column set of a few hundred columns is ~100 KB)
MAX_BYTES = 1 << 20
_FIELDS = ("key", "width", "header", "fmt", "desc", "better", "align", "stream")
#: ``end`` of a run stopped by Ctrl-C or a non-zero exit; any other ``end`` is the type name of the exception it died
#: of. (The version stays 1: a reader that predates the field ignores it; a file without it is a run that ended
#: normally.)
INTERRUPTED = "interrupted"
#: an earlier process's end (:func:`earlier` only) where it never closed its logger nor exited (its description
#: has no ``exited``), and no longer held the writer lock when the run resumed: killed (SIGKILL, the OOM killer, a
#: lost node); a W&B run file without an exit record
UNCLOSED = "unclosed"
_OURS = (INTERRUPTED, UNCLOSED)
_END = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def file_name(arm: object) -> str:
    """``steptable.json``, or ``steptable.<arm>.json`` for a named arm, so two arms logging into one directory keep
    a description each. The arm is made safe as a file name part; where that changed it (``a/b``, ``实验``), a short
    hash of the arm keeps two arms apart that would read alike."""
    if arm is None or arm == "":
        return NAME
    return f"steptable.{name_part(str(arm))}.json"


def name_part(text: str) -> str:
    """``text`` as a file name part: ASCII letters, digits and ``.-_`` kept, anything else ``_``, at most 64
    characters; where that changed it (``a/b``, ``实验``, ``lr 1e-4``), a short hash of ``text`` keeps two texts
    apart that would read alike."""
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in ".-_") else "_" for ch in text)[:64].strip(".")
    if safe != text or not safe:  # (an empty name is a name too: "arm-<hash>", never "table..txt")
        safe = f"{safe or 'arm'}-{hashlib.sha1(text.encode('utf-8', 'replace')).hexdigest()[:8]}"
    return safe


def describe(
    cols: Sequence[Col], arm: str | None, jsonl: str, started: float, closed: float | None, rows: int,
    end: str | None = None, earlier: Sequence[tuple[str, int, float]] = (), exited: float | None = None,
) -> dict[str, Any]:
    """The description of a run: its columns, arm, JSONL's file name, when it started and was closed (None while
    it runs), its rows, ``end`` only where it did not end normally (:func:`end_of`), ``earlier`` only where an
    earlier process of the run did not: (its end, the step the next process resumed at, when it was closed)
    (:func:`earlier`), and ``exited`` only where the process exited without closing its logger (when: it was not
    killed; readers still read the run as not closed, how it ended being unknown)."""
    info: dict[str, Any] = {
        "steptable": VERSION,
        "arm": arm,
        "jsonl": jsonl,
        "started": started,
        "closed": closed,
        "rows": rows,
        "columns": [{f: getattr(c, f) for f in _FIELDS} for c in cols],
    }
    if earlier:
        info["earlier"] = [{"end": e, "resumed_at": at, "closed": t} for e, at, t in earlier[-MAX_EARLIER:]]
    if exited is not None:
        info["exited"] = exited
    return info if end is None else {**info, "end": end}  # (a normal end: no ``end`` field)


#: earlier ends a description keeps (the newest)
MAX_EARLIER = 20


def earlier(info: dict[str, Any] | None) -> list[tuple[str, int, float]]:
    """How the run's earlier processes ended where not normally, each with the step the next one resumed at and
    when it was closed (a reader that told that close live need not tell it again): a crash told before a resume is
    not forgotten when the resumed process describes the run again. Entries that do not validate are left out (the
    file is text from the disk)."""
    got = info.get("earlier") if info else None
    out = []
    for e in got[-MAX_EARLIER:] if type(got) is list else ():
        if type(e) is not dict:
            continue
        end, at, t = e.get("end"), e.get("resumed_at"), closed_at(e)
        if type(end) is str and _END.fullmatch(end) and type(at) is int and t is not None:
            out.append((end, at, t))
    return out


def end_of(exc: BaseException | None) -> str | None:
    """How a ``with StepLogger`` block that raised ``exc`` ended, for the description's ``end``: None for a normal
    end (no exception, ``sys.exit()`` / ``sys.exit(0)``, a generator closed by its consumer); INTERRUPTED for Ctrl-C,
    a non-zero exit (a SIGTERM handler's ``sys.exit(1)``) or a cancelled task; else the exception's type name (the
    nearest class of its MRO named in plain ASCII: ``class 显存不足(RuntimeError)`` is a RuntimeError)."""
    if exc is None or isinstance(exc, GeneratorExit) or (isinstance(exc, SystemExit) and exc.code in (None, 0)):
        return None
    if not isinstance(exc, Exception):
        return INTERRUPTED
    return next(n for c in type(exc).__mro__ if _END.fullmatch(n := c.__name__) and n not in _OURS)


def candidates(jsonl: Path, arm: object) -> list[Path]:
    """Where the description of ``jsonl`` may be: the arm's own, then the directory's."""
    names = [file_name(arm)] if arm else []
    return [jsonl.parent / n for n in dict.fromkeys([*names, NAME])]


def parse(data: bytes, jsonl: Path) -> dict[str, Any] | None:
    """The description in ``data`` (a file's bytes: read it with steptable.ingest.sidefiles.read_regular, which never
    blocks on a FIFO and stops at MAX_BYTES) if it describes ``jsonl`` and validates; else None."""
    try:
        info = sidejson.load(data)
    except SideFileError:
        return None
    if type(info) is not dict or info.get("steptable") != VERSION or info.get("jsonl") != jsonl.name:
        return None
    return info if columns(info) is not None else None


def column_keys(info: dict[str, Any] | None) -> list[str]:
    """The keys of a description's columns but the step (none without a valid description)."""
    cols = columns(info) if info is not None else None
    return [c.key for c in cols or () if c.key != "step"]


def columns(info: dict[str, Any]) -> tuple[Col, ...] | None:
    """The column set of a description, validated (None when any part is not a valid column set)."""
    raw = info.get("columns")
    if type(raw) is not list or not raw:
        return None
    cols: list[Col] = []
    try:
        for c in raw:
            if type(c) is not dict or not set(c) <= set(_FIELDS) or not _typed(c):
                return None
            cols.append(Col(**c))
        return validate(cols)
    except (ColumnError, TypeError, ValueError):
        return None


def _typed(c: dict[str, Any]) -> bool:
    """Each field of the type Col takes (Col checks the values; JSON could hand it a number for a key)."""
    return (
        type(c.get("key")) is str
        and type(c.get("width")) is int
        and type(c.get("header")) is str
        and type(c.get("desc", "")) is str
        and (c.get("fmt") is None or type(c.get("fmt")) is str)
        and type(c.get("stream", True)) is bool
    )


def closed_at(info: dict[str, Any] | None) -> float | None:
    """When the run's logger was closed (it ended, it did not stall); None while it runs or when unknown."""
    t = info.get("closed") if info else None
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None


def ended_by(info: dict[str, Any] | None) -> str | None:
    """How a closed run ended when not normally (see :func:`end_of`); None for a normal end, a run still going, a
    description from before the field, or a value not of that form (the file is text from the disk)."""
    end = info.get("end") if info else None
    return end if type(end) is str and _END.fullmatch(end) and closed_at(info) is not None else None


def end_words(end: str) -> str:
    """An ``end`` (:func:`ended_by`, :func:`earlier`) in words: ``interrupted``, ``ended with RuntimeError``,
    ``stopped without a close``."""
    if end == UNCLOSED:
        return "stopped without a close"
    return end if end == INTERRUPTED else f"ended with {end}"


def warns(end: str) -> bool:
    """Is ``end`` told as a warning (W), not an error (E): an interruption, or a process that stopped without a close
    (nothing says it was the run's own failure)."""
    return end in _OURS
