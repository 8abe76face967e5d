"""W&B run files (``run-<id>.wandb``): the run's history rows, name, config and end, read as they are written.

The file is wandb's transaction log: a 7-byte header (``:W&B``, magic 0xBEE1, version 0), then a LevelDB-style log
of 32 KiB blocks whose chunks (crc32 over type and data, length, type FULL/FIRST/MIDDLE/LAST: the framing is
:mod:`~steptable.ingest.readers.wandblog`'s) carry protobuf ``Record``s, decoded by
:mod:`~steptable.ingest.readers.wandbwire` (stdlib: reading needs no wandb). Where the optional extension
``steptable.ingest.readers._wandbwalk`` was built (``csrc/wandbwalk/``), it walks the chunks and writes the history
records of the usual layout itself; the loop here reads every chunk it leaves, and the rows, run facts and reports
are those the loop alone gives (tests/ingest/readers/test_wandbwalk.py).

- ``history``: one row per record; ``_step`` is the step unless the trainer's own is in every row or the run's
  ``define_metric`` calls declared one (``metric`` records: :mod:`~steptable.ingest.readers.wandbaxes`);
  ``_timestamp`` (a wall clock) and ``_runtime`` are kept;
  nested keys are joined with ``/``; ``NaN``/``Infinity`` values are read as non-finite floats. A media value (a
  ``wandb.Table``, an image: an object with ``_type``) is no metric: its cells are left out, and a record of media
  and W&B's own keys alone (a counter besides) is no row.
- ``run``: the display name (the run's arm) and config; ``exit``: the run ended, and how (a non-zero exit code).

Damage: a chunk whose checksum fails is reported with its byte offset and skipped (the chunk after it is tried, else
the next block); a record cut short by a concurrent write waits for the rest, and is reported when a one-shot read
ends on it. Every good record is kept.
"""

from __future__ import annotations

import importlib
import json
import re
import struct
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from steptable.ingest.parse import BadLine, LineError, decode_line
from steptable.ingest.parsed import Parsed, counter
from steptable.ingest.readers.jsonl import PIECE, JsonlParser
from steptable.ingest.readers.protowire import WireError, varint
from steptable.ingest.readers.trackerlists import lists_as_text
from steptable.ingest.readers.trackernulls import drop_nulls
from steptable.ingest.readers.wandbaxes import Axes
from steptable.ingest.readers.wandbfacts import RunFacts
from steptable.ingest.readers.wandblog import (
    BLOCK,
    CHUNK_HEADER,
    FIRST,
    FULL,
    HEADER,
    LAST,
    MIDDLE,
    TYPE_CRC,
    UNPACK,
    RecordParts,
)
from steptable.ingest.readers.wandbmedia import TableSteps
from steptable.ingest.readers.wandbwire import history_line, history_lines, wandb_record
from steptable.table.stepkeys import TRACKER_STEP_KEYS

if TYPE_CHECKING:
    from steptable.ingest.readers import _wandbwalk

Walker: type[_wandbwalk.Walker] | None
try:  # the chunk walk in C, where it was built (an optional extension: the loop below does the same without it);
    # imported by name: the import graph checked by lint-imports has no node for a compiled module
    Walker = importlib.import_module("steptable.ingest.readers._wandbwalk").Walker
except ImportError:  # (a machine with no C compiler)
    Walker = None

_LINE_POSITION = re.compile(r" \(byte \d+\)")
#: W&B's own keys of a history record (with the counters, all a record of media alone holds)
_OWN = frozenset({b"_step", b"_runtime", b"_timestamp"})
#: tags of the Record kinds no row or run fact comes from (summary, output, config, files, stats, artifact, tbrecord,
#: alert, telemetry, output_raw: fields 3-13 but metric, 12): a whole record of one is passed over unread
_UNREAD = frozenset((n << 3) | 2 for n in range(3, 14) if n != 12)
#: history rows of the first call (the JSONL reader learns the keys; its typed decode takes the later calls, each
#: about :data:`PIECE` bytes of rows: the rest of what was read is parsed by the next call)
FIRST_ROWS = 64
#: history records rewritten together (:func:`history_lines`: fewer calls; more would leave the CPU's cache)
GROUP = 16
#: groups read one by one at most after one that could not be read at once
MAX_REST = 64
#: chunks the loop in Python reads at most between tries of the walk in C that stop at once (see WandbParser._walk)
WALK_REST = 64
#: why a walk in C stopped: at a chunk for the loop in Python, the bytes ended, its budget was spent
_WALK_AT_CHUNK, _WALK_END, _WALK_BUDGET = 0, 1, 2


class WandbParser:
    """Bytes of a ``.wandb`` file (from its start, in pieces) -> :class:`Parsed` rows and run facts in ``meta``:
    ``name`` (the display name), ``project``, ``config``, ``runinfo`` (``closed``, ``end``: as a StepLogger's
    description says a run ended) and ``tables`` (each ``wandb.Table`` file, relative to the run's ``files/``, -> its
    step: :mod:`~steptable.ingest.readers.wandbmedia`). ``before``: the parser of the run's file before this one (a
    resumed process's file is keyed as the run's rows so far are, once they are, whatever its own ``define_metric``
    calls declared: a run has one step)."""

    def __init__(self, label: str, before: WandbParser | None = None) -> None:
        self.label = label
        self.before = before
        self.reset()

    def reset(self) -> None:
        self.pos = 0  # file offset of the next byte to parse
        self._parts = RecordParts(self.label)  # (the framing: steptable.ingest.readers.wandblog)
        self._facts = RunFacts()
        # the step of every row: the step metric define_metric declared (self._axes, read by _parsed), else the
        # trainer's own where it logs it in every row (HF's ``train/global_step``), else W&B's count of ``log`` calls
        # (a user key named ``step`` is a metric here)
        self.jsonl = JsonlParser(self.label, step_keys=(*TRACKER_STEP_KEYS, "_step"))
        self._axes = Axes()  # what define_metric declared: the rows' step from the first row on (wandbaxes)
        self._skip_until = 0
        self.more = False  # the last call stopped early: call again on the bytes left
        self._keys: dict[bytes, bytes] = {}  # key -> its JSON text and colon
        self._media_keys: set[bytes] = set()  # keys that name a media value's type (``samples/_type``)
        self._tables = TableSteps()
        self._first = True  # the first call: FIRST_ROWS rows, then PIECE bytes of rows a call
        # groups read one by one without trying them all at once, after one that was not (doubling up to MAX_REST:
        # a run that logs text every step pays for the try once in a while, one with a table now and then little)
        self._rest = 0
        self._backoff = 1
        self._last_line = b""  # the last history row (its _timestamp: when the run last logged)
        self._walker = Walker() if Walker is not None else None
        self._order: tuple[str, ...] | None = None  # the key order the walk was last given
        self._walk_rest = 0  # chunks the loop in Python reads before the walk in C is tried again
        self._walk_backoff = 0

    def parse(self, data: bytes | memoryview, base: int, final: bool = False) -> tuple[int, Parsed]:
        """Parse whole chunks of ``data`` (file bytes from offset ``base`` = the offset where the last call stopped;
        bytes or a memoryview of them).
        Returns (bytes consumed, what they held). ``final``: nothing more will come (a one-shot read): a cut record
        at the end is reported, not waited for."""
        assert base == self.pos
        bad: list[BadLine] = []
        meta: dict[str, Any] = {}
        lines: list[bytes] = []  # JSON lines, or several joined by newlines
        group: list[tuple[bytes, int, int]] = []  # history records not yet rewritten: (chunk, its field, offset)
        self._rows = self._size = 0
        self.more = False
        i, n = 0, len(data)
        if self._skip_until > base:
            i = min(self._skip_until - base, n)
        elif self.pos == 0:
            if n < len(HEADER):
                if final:
                    bad.append(BadLine(self.label, 0, "empty file" if n == 0 else f"cut short at byte {n} (header)"))
                return 0, Parsed(steps=[], bad=bad)
            if data[: len(HEADER)] != HEADER:
                bad.append(BadLine(self.label, 0, "byte 0: not a W&B run file (no :W&B header); not read"))
                self.pos = n
                return n, Parsed(steps=[], bad=bad)
            i = len(HEADER)
        unpack, crc32, type_crc, unread = UNPACK, zlib.crc32, TYPE_CRC, _UNREAD  # (locals: read per chunk)
        walk = self._walker.walk if self._walker is not None else None
        while True:
            if walk is not None and not self._parts.waiting:  # whole chunks in C, up to one it leaves to the loop below
                if self._walk_rest:
                    self._walk_rest -= 1
                else:
                    i, why = self._walk(walk, data, i, base, group, lines, meta, bad)
                    if why == _WALK_BUDGET:
                        self._first = False
                        self.more = True
                        break
                    if why == _WALK_END:
                        break
            at = base + i
            left = BLOCK - at % BLOCK
            if left < CHUNK_HEADER:  # a block's tail too short for a chunk header: zero padding
                if n - i < left:
                    break
                i += left
                continue
            if n - i < CHUNK_HEADER:
                break
            crc, length, kind = unpack(data, i)
            end = i + CHUNK_HEADER + length
            if length > left - CHUNK_HEADER or kind not in (FULL, FIRST, MIDDLE, LAST):
                if crc == 0 and length == 0 and kind == 0:  # zero padding of a preallocated block
                    i += left
                    continue
                bad.append(BadLine(self.label, 0, f"byte {at}: damaged chunk header; rest of the block skipped"))
                self._parts.drop()
                if n - i < left:  # the next block is not all here yet: skip to it over later calls
                    self._skip_until = at + left
                    i = n
                    break
                i += left
                continue
            if end > n:
                break  # cut by a concurrent write: wait for the rest
            chunk = bytes(data[i + CHUNK_HEADER : end])
            if crc32(chunk, type_crc[kind]) != crc:
                bad.append(BadLine(self.label, 0, f"byte {at}: checksum mismatch; record skipped"))
                self._parts.drop()
                i = end
                continue
            i = end
            if kind == FULL:
                if self._parts.waiting:
                    self._parts.drop()
                record = chunk
            else:
                got = self._parts.add(kind, chunk, at, bad)
                if got is None:  # (a record's first or middle part, or a part whose start was lost)
                    continue
                record, at = got
            tag = j = 0
            try:
                if record[0] == 0x08:  # Record.num first: the kind's tag follows it
                    j = 1
                    while record[j] > 0x7F and j < 11:
                        j += 1
                    tag = record[j + 1]
            except IndexError:  # (a record cut inside its first fields: read, and reported, below)
                tag = 0
            if tag in unread:
                continue
            if tag == 0x12:  # rewritten with the next few (alone where they are not of the usual layout)
                group.append((record, j + 2, at))
                if len(group) < GROUP:
                    continue
                self._group(group, lines, meta, bad)
            else:
                self._group(group, lines, meta, bad)
                self._record_bytes(record, at, lines, meta, bad)
            if (self._rows >= FIRST_ROWS if self._first else self._size >= PIECE) and not self._parts.waiting and i < n:
                self._first = False
                self.more = True  # (the JSONL reader's typed fast path takes the next batches once it knows the keys)
                break
        self._group(group, lines, meta, bad)
        if final and i < n and not self.more:
            bad.append(BadLine(self.label, 0, f"byte {base + i}: record cut short ({n - i} bytes at the end); "
                                              "not read"))
        self.pos = base + i
        return i, self._parsed(lines, meta, bad)

    def _walk(self, walk: Callable[[bytes | memoryview, int, int, int, int], tuple[int, bytes, int, int]],
              data: bytes | memoryview, i: int, base: int, group: list[tuple[bytes, int, int]], lines: list[bytes],
              meta: dict[str, Any], bad: list[BadLine]) -> tuple[int, int]:
        """The walk in C from ``data[i]``, its rows after those waiting in ``group`` (the file's order): (where it
        stopped, why). After walks that stop at once, one after the other, at records they leave to the loop in
        Python, the loop reads a few chunks before the next try (0, 1, 2, 4... up to :data:`WALK_REST`: a run whose
        every record is of another layout pays for the try once in a while)."""
        n = len(data)
        i, walked, rows, why = walk(data, i, base, FIRST_ROWS - self._rows if self._first else n,
                                    n if self._first else PIECE - self._size)
        if rows:
            self._group(group, lines, meta, bad)
            lines.append(walked)
            self._last_line = walked[walked.rfind(b"\n") + 1 :]
            self._rows += rows
            self._size += len(walked)
            self._walk_backoff = 0
        elif why == _WALK_AT_CHUNK:
            self._walk_rest = self._walk_backoff
            self._walk_backoff = min(max(1, 2 * self._walk_backoff), WALK_REST)
        return i, why

    def _group(self, group: list[tuple[bytes, int, int]], lines: list[bytes], meta: dict[str, Any],
               bad: list[BadLine]) -> None:
        """History records waiting in ``group`` (emptied) as JSON lines, all at once where each is of the usual
        layout (:func:`history_lines`), else one by one."""
        if not group:
            return
        got = None
        if self._rest:
            self._rest -= 1
        else:
            records = []
            for chunk, i, _ in group:
                try:
                    n, a = varint(chunk, i)
                except (IndexError, WireError):
                    break
                if a + n > len(chunk):
                    break
                records.append(chunk[a : a + n])
            got = history_lines(records) if len(records) == len(group) else None
            if got is not None and b'/_type":' in got:
                got = None
            if got is None:
                self._rest, self._backoff = self._backoff, min(self._backoff * 2, MAX_REST)
            else:
                self._backoff = 1
        if got is not None:
            lines.append(got)
            self._last_line = got[got.rfind(b"\n") + 1 :]
            self._rows += len(group)
            self._size += len(got)
        else:
            for chunk, i, at in group:
                if not self._history(chunk, i, lines):
                    self._record_bytes(chunk, at, lines, meta, bad)
        group.clear()

    def _history(self, raw: bytes, i: int, lines: list[bytes]) -> bool:
        """A history record (its field starting at ``raw[i]``, the length) of the usual layout taken as a JSON
        line; False when it is not one (the general record path reads it, and reports it if it is damaged)."""
        try:
            n, a = varint(raw, i)
        except (IndexError, WireError):  # (cut after the tag)
            return False
        if a + n > len(raw):
            return False
        line = history_line(raw, a, a + n)
        if line is None or b'/_type":' in line:
            return False
        self._line(line, lines)
        self._last_line = line
        return True

    def _line(self, line: bytes, lines: list[bytes]) -> None:
        lines.append(line)
        self._rows += 1
        self._size += len(line)

    def _parsed(self, lines: list[bytes], meta: dict[str, Any], bad: list[BadLine]) -> Parsed:
        if (tables := self._tables.take()) is not None:
            meta["tables"] = tables
        if not lines:
            return Parsed(steps=[], bad=bad, meta=meta)
        if self.jsonl.ordinal == 0:
            if self.before is not None and self.before.jsonl.ordinal:  # (the run's step was chosen by its rows so far)
                self.jsonl.step_keys, self.jsonl.carry_step = self.before.jsonl.step_keys, self.before.jsonl.carry_step
            elif (axis := self._axes.row_step(_first_row(lines[0]))) is not None:
                self.jsonl.step_keys, self.jsonl.carry_step = (axis,), True
        lines.append(b"")  # (a newline after the last line, in the one join)
        # (a None logged: no value, not a NaN; a list: its text, not a count)
        parsed = lists_as_text(self.jsonl.parse(drop_nulls(b"\n".join(lines)), 1))
        if self._walker is not None and (keys := self.jsonl.key_order()) is not None and keys is not self._order:
            self._order = keys  # the walk writes the next lines' keys in the decoder's order
            self._walker.order([k.encode() for k in keys])
        # (a position the JSON decoder gives is one in the line made of the record, not in the file: left out)
        parsed.bad = bad + [BadLine(self.label, 0, _LINE_POSITION.sub("", b.reason)) for b in parsed.bad]
        parsed.meta = meta
        return parsed

    def _record_bytes(self, raw: bytes, at: int, lines: list[bytes], meta: dict[str, Any],
                      bad: list[BadLine]) -> None:
        try:
            which, got = wandb_record(raw, lines=True)
            if which == "line" and b'/_type":' in got:  # a media value: its cells are left out item by item
                which, got = wandb_record(raw)
        except (ValueError, IndexError, struct.error) as e:  # checksums passed but the record is not one
            bad.append(BadLine(self.label, 0, f"byte {at}: not a readable record ({type(e).__name__}); skipped"))
            return
        if which == "line":
            self._line(got, lines)
            self._last_line = got
        elif which == "history":
            line = self._history_line(got)
            if line is not None:
                self._line(line, lines)
        elif which == "run":
            self._facts.run(got, meta)
        elif which == "metric":
            if self.jsonl.ordinal == 0 and not lines:  # (one made after the first row keys nothing: wandbaxes)
                self._axes.note(*got)
        elif which == "exit":
            self._facts.exit(got, self._last_line, meta)

    def _history_line(self, items: list[tuple[bytes, bytes]]) -> bytes | None:
        """One history record as a JSON object line (values are already JSON text: the JSONL reader does the rest,
        its fast path included)."""
        heads = self._keys
        out = []
        media: list[bytes] = []
        stamp = None
        for key, value in items:
            head = heads.get(key)
            if head is None:
                head = heads[key] = json.dumps(key.decode("utf-8", "replace")).encode() + b":"
                if key.endswith(b"/_type"):
                    self._media_keys.add(key)
            if key in self._media_keys:
                media.append(head[:-7])  # (its JSON text without the closing `/_type":`)
            out.append(head + value)
            if key == b"_timestamp":
                stamp = value
        if stamp is not None:
            self._last_line = b'{"_timestamp":' + stamp + b"}"
        if media:  # a wandb.Table, an image...: its cells are no metrics
            self._tables.note(items)
            prefixes = tuple(media)
            out = [o for o in out if not o.startswith(prefixes)]
            kept = (k for k, _ in items if not heads[k].startswith(prefixes))
            if all(k in _OWN or counter(k.decode("utf-8", "replace")) for k in kept):
                return None  # (logged alone, at a step of its own: no row of metrics)
        return b"{" + b",".join(out) + b"}" if out else None


def _first_row(lines: bytes) -> dict[str, Any]:
    """The first of ``lines`` (a row's JSON object lines) as JSON reads it; empty where it is no object."""
    try:
        row = decode_line(lines.partition(b"\n")[0])
    except LineError:
        return {}
    return row if row is not None else {}
