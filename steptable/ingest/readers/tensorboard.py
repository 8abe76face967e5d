"""TensorBoard event files (``events.out.tfevents.*``): scalar summaries as rows, read as they are written.

A file is a sequence of TFRecords (length u64, masked crc32c of the length, data, masked crc32c of the data), each an
``Event`` protobuf decoded by :mod:`~steptable.ingest.readers.tbwire` (stdlib: reading needs no tensorboard).
crc32c comes from ``google-crc32c`` when installed (the ``steptable[tensorboard]`` extra: fast), else from a
table-driven pure-Python one (the same checksums, slower: about 10 s per 100 MB, where the records are walked one by
one).

Records are walked one by one until a step's records can be taken as a layout: the steps that follow laid out the
same way (SummaryWriter's one event per scalar, the same tags each step) are read in bulk by
:mod:`~steptable.ingest.readers.tbsteps`, with the same rows and checks; the walk takes over where a step differs or
fails a check (and reports the damage as it always does).

Each scalar summary value is a cell named by its tag (``train/loss`` kept as is): ``simple_value`` (torch's
SummaryWriter, tensorboardX) or a scalar tensor (tensorboard's and TF2's ``tf.summary.scalar``). Events of one step
written one after another make one row; ``wall_time`` of its first event is the row's clock. A step absent on the
wire (protobuf leaves 0 out) is step 0. A text summary (``add_text``: verl logs its validation generations so) is no
cell: where it is (file, offset, step, tag) goes to the chunk's ``meta["texts"]``, and :func:`event_at` reads it
again when it is shown.

Scalars logged without a step (``add_scalar(tag, v)``: torch's SummaryWriter and tensorboardX write
``global_step=None`` as no step, which reads as step 0, like a step 0 given) are numbered in the order written: a
tag's value at step 0 where that tag already has one, the tag never having come with a step, joins the row being
written if that row lacks the tag, else starts the row after it (its step + 1). A loop that logs ``loss`` and
``acc`` without a step so makes one row per iteration; ``val`` every 4th iteration lands in the row of the
iteration it was logged in; ``lr`` without a step beside a ``loss`` with one lands in the row of the loss logged
before it. (TensorBoard itself keeps every such value at step 0: its step axis draws them all at one x, its relative
and wall axes in the order written, which is the order the rows keep.) The first value of each tag stays at step 0
(a run's genuine step 0 and the first value of a run without steps look alike on the wire), and so does a value of a
tag that came with a step once (a loop that restarts its step each epoch is a restart at step 0). The numbering is
a file's own: a second writer's file in the run's directory numbers from 0 again (a restart).

Damage: a record whose data checksum fails is reported with its byte offset and skipped; a length whose checksum
fails is searched past for the next record whose length checksum holds; a record cut by a concurrent write waits for
the rest (reported when a one-shot read ends on it). Every good record is kept.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from steptable.ingest.files.regular import open_regular
from steptable.ingest.parse import BadLine
from steptable.ingest.parsed import Parsed
from steptable.ingest.readers import tbsteps
from steptable.ingest.readers.crc32c import crc32c_py
from steptable.ingest.readers.tbwire import tb_event, tb_texts

_LEN = struct.Struct("<QI")
_CRC = struct.Struct("<I")
__all__ = ["MAX_RECORD", "EventParser", "crc32c_py", "event_at"]

#: a record longer than this is taken for a damaged length (a scalar event is ~50 bytes; an image summary MBs)
MAX_RECORD = 256 << 20


def event_at(path: str | Path, offset: int, length: int) -> bytes:
    """The Event bytes of the record of ``length`` bytes at ``offset`` in event file ``path`` (a text summary
    :attr:`EventParser.texts` noted). Raises OSError, or ValueError where no whole record with good checksums is
    there (the file was replaced since)."""
    with open_regular(path) as f:
        f.seek(offset)
        data = f.read(length)
    if len(data) != length or length < 16:
        raise ValueError(f"byte {offset}: the record is not there")
    n, len_crc = _LEN.unpack_from(data, 0)
    masked = _masker(_crc32c())
    payload = data[12:-4]
    if n != length - 16 or masked(data[:8]) != len_crc or masked(payload) != _CRC.unpack_from(data, length - 4)[0]:
        raise ValueError(f"byte {offset}: not the record read before (checksum mismatch)")
    return payload


def _crc32c() -> Callable[[bytes], int]:
    try:
        import google_crc32c

        if google_crc32c.implementation == "c":
            value: Callable[[bytes], int] = google_crc32c.value
            return value
    except (ImportError, AttributeError):
        pass
    return crc32c_py


def _masker(crc32c: Callable[[bytes], int]) -> Callable[[bytes], int]:
    def masked(data: bytes) -> int:
        x = crc32c(data)
        return (((x >> 15) | (x << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    return masked


class EventParser:
    """Bytes of one event file (from its start, in pieces) -> :class:`Parsed` rows keyed by ``step``.

    ``bulk``: steps laid out like the step before them are read as a run (:mod:`tbsteps`); a call that meets one
    returns the rows before it, or the run, and sets :attr:`more` (call again from where it stopped)."""

    def __init__(self, label: str, bulk: bool = True) -> None:
        self._crc = _crc32c()
        self._masked = _masker(self._crc)
        self.label = label
        self.bulk = bulk
        self._layouts: dict[tuple[Any, ...], tbsteps.Layout] = {}
        self._skip = self._backoff = 0  # steps to walk before the next try to learn a layout, after a failed one
        self.reset()

    def reset(self) -> None:
        self.pos = 0
        #: (file, byte offset, length, step, tag) of each text summary (``add_text``) read since the last parse
        self.texts: list[tuple[str, int, int, int, str]] = []
        self.more = False
        self._resync = False  # searching for the next record whose length checksum holds
        self._layout: tbsteps.Layout | None = None
        self._boundary = True  # the next call's bytes start where a step starts (a file's start, a run's end)
        # scalars logged without a step (the module's docstring): the tags seen at step 0, those of them never seen
        # at another step, and the step and tags of the row written last (it may have been returned by an earlier
        # call; followed while some tag may be logged without a step, which the event making one sets)
        self._at_zero: set[str] = set()
        self._zero_only: set[str] = set()
        self._row: tuple[int, set[str]] | None = None

    def parse(self, data: bytes | memoryview, base: int, final: bool = False) -> tuple[int, Parsed]:
        """Parse whole records of ``data`` (file bytes from offset ``base``, where the last call stopped; bytes or a
        memoryview of them). Returns (bytes consumed, rows). ``final``: nothing more will come: a cut record at the
        end is reported.

        A record's length checksum is checked where its data checksum fails (which of the two was damaged), while
        searching past damage, and for a length that reaches past the bytes read: a good data checksum at the end
        a length gives vouches for that length as well (one checksum per record, not two)."""
        bad: list[BadLine] = []
        steps: list[int] = []
        rows: list[dict[str, Any]] = []
        masked = self._masked
        i, n = 0, len(data)
        self.more = False
        if final and n == 0 and base == 0:
            bad.append(BadLine(self.label, 0, "empty file"))
        if self._layout is not None and not self._resync:
            run = self._layout.read(data, 0, n)
            if run is not None:
                return self._ran(run, base, n)
        spans: list[tuple[int, int]] | None = None  # the records of the last row's step, while it can be learnt
        boundary = self._boundary
        self._boundary = False
        while n - i >= 12:
            length, len_crc = _LEN.unpack_from(data, i)
            end = i + 16 + length
            if self._resync or length > MAX_RECORD or end > n:
                if length > MAX_RECORD or masked(bytes(data[i : i + 8])) != len_crc:
                    self._damaged_length(base + i, bad)
                    i += 1
                    continue
                self._resync = False
                if end > n:
                    break  # cut by a concurrent write: wait for the rest
            payload = bytes(data[i + 12 : end - 4])
            if masked(payload) != _CRC.unpack_from(data, end - 4)[0]:
                if masked(bytes(data[i : i + 8])) != len_crc:
                    self._damaged_length(base + i, bad)
                    i += 1
                    continue
                bad.append(BadLine(self.label, 0, f"byte {base + i}: checksum mismatch; record skipped"))
                i = end
                continue
            ev = self._event(payload, base + i, bad)
            if ev is not None:
                wall, step, values = ev
                if not step or self._zero_only:  # (else a run with steps: nothing to number)
                    step = self._placed(step, values)
                if steps and steps[-1] == step:
                    rows[-1].update(values)
                    if spans is not None and spans[-1][1] == i:
                        spans.append((i, end))
                    else:
                        spans = None
                else:
                    if self.bulk and spans is not None and spans[-1][1] == i and (boundary or len(steps) > 1):
                        if self._learnt(data, spans, i, n):
                            self.more = self._boundary = True  # the next call reads the run
                            break
                    steps.append(step)
                    rows.append({**dict(values), "step": step, "wall_time": wall})
                    spans = [(i, end)]
            i = end
        if final and i < n and not self.more:
            what = "damaged data" if self._resync else "record cut short"
            bad.append(BadLine(self.label, 0, f"byte {base + i}: {what} ({n - i} bytes at the end); not read"))
        self.pos = base + i
        meta: dict[str, Any] = {}
        if self.texts:
            meta["texts"], self.texts = self.texts, []
        return i, Parsed(steps=steps, rows=rows, bad=bad, step_key="step", meta=meta)

    def _placed(self, step: int, values: list[tuple[str, float | int | bool]]) -> int:
        """The row step of an event of ``values`` at ``step`` (a value logged without a step is numbered: the
        module's docstring); notes it as the row written last."""
        tags = {t for t, _ in values}
        if step:
            self._zero_only -= tags
        elif tags <= self._zero_only and self._row is not None:  # (seen at step 0 before, never with a step)
            last, written = self._row
            step = last if written.isdisjoint(tags) else last + 1
        else:
            self._zero_only |= tags - self._at_zero
            self._at_zero |= tags
        if self._row is not None and self._row[0] == step:
            self._row[1].update(tags)
        else:
            self._row = (step, tags)
        return step

    def _ran(self, run: tuple[int, Parsed], base: int, n: int) -> tuple[int, Parsed]:
        end, parsed = run
        if parsed.steps and self._layout is not None:
            self._row = (parsed.steps[-1], set(self._layout.tags))
        self.more = end < n
        self._boundary = True
        self.pos = base + end
        return end, parsed

    def _learnt(self, data: bytes | memoryview, spans: list[tuple[int, int]], i: int, n: int) -> bool:
        """Whether the layout of the step at ``spans`` (records whose checksums held) matches the step at ``i``
        (it becomes this parser's layout: the next call reads the run)."""
        if self._skip:  # (a run whose steps are laid out each its own way: tried again less and less often)
            self._skip -= 1
            return False
        if self._learn(data, spans, i, n):
            self._backoff = 0
            return True
        self._skip = self._backoff = min(max(1, 2 * self._backoff), 1024)
        return False

    def _learn(self, data: bytes | memoryview, spans: list[tuple[int, int]], i: int, n: int) -> bool:
        found = [tbsteps.usual(data, a, b) for a, b in spans]
        if any(f is None for f in found):
            return False
        ks = {f[0] for f in found if f is not None}
        tags = [f[1] for f in found if f is not None]
        # (k 0: no step on the wire, a run's step 0 or a scalar logged without a step, which the walk numbers)
        if ks == {0} or len(ks) != 1 or not tbsteps.OWN_KEYS.isdisjoint(t.decode("utf-8", "replace") for t in tags):
            return False
        key = (*(bytes(data[a : a + 12]) for a, _ in spans), *tags, *ks)
        layout = self._layouts.get(key)
        if layout is None:
            if len(self._layouts) >= 64:  # (a run whose steps keep changing layout: keep the cache bounded)
                self._layouts.clear()
            layout = self._layouts[key] = tbsteps.Layout(data, spans, ks.pop(), tags, self._crc,
                                                         fast=self._crc is not crc32c_py)
        if layout.matches(data, i, n):
            self._layout = layout
            return True
        return False

    def _damaged_length(self, at: int, bad: list[BadLine]) -> None:
        """A length whose checksum fails at file offset ``at``: reported once a damaged stretch (the search goes on
        at the next byte)."""
        if not self._resync:
            bad.append(BadLine(self.label, 0, f"byte {at}: damaged record length; searching on"))
            self._resync = True

    def _event(self, raw: bytes, at: int, bad: list[BadLine]) -> \
            tuple[float, int, list[tuple[str, float | int | bool]]] | None:
        """(wall time, step, values) of an event with scalar values, else None (an unreadable one reported). An
        event of text summaries is noted in :attr:`texts`."""
        try:
            ev = tb_event(raw)
            if ev is not None and not ev[2] and (got := tb_texts(raw)) is not None:
                self.texts.extend((self.label, at, len(raw) + 16, got[0], tag) for tag, _ in got[1])
        except (ValueError, IndexError, struct.error) as e:  # checksums passed but the record is not an Event
            bad.append(BadLine(self.label, 0, f"byte {at}: not a readable event ({type(e).__name__}); skipped"))
            return None
        return ev if ev is not None and ev[2] else None

