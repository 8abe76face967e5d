"""TensorBoard event files (``events.out.tfevents.*``): scalar summaries as rows, read as they are written.

A file is a sequence of TFRecords (length u64, masked crc32c of the length, data, masked crc32c of the data), each an
``Event`` protobuf decoded by :mod:`~steptable.ingest.readers.protowire` (stdlib: reading needs no tensorboard).
crc32c comes from ``google-crc32c`` when installed (the ``steptable[tensorboard]`` extra: fast), else from a
table-driven pure-Python one (the same checksums, slower: about 10 s per 100 MB).

Each scalar summary value is a cell named by its tag (``train/loss`` kept as is): ``simple_value`` (torch's
SummaryWriter, tensorboardX) or a scalar tensor (tensorboard's and TF2's ``tf.summary.scalar``). Events of one step
written one after another make one row; ``wall_time`` of its first event is the row's clock. A step absent on the
wire (protobuf leaves 0 out) is step 0.

Damage: a record whose data checksum fails is reported with its byte offset and skipped; a length whose checksum
fails is searched past for the next record whose length checksum holds; a record cut by a concurrent write waits for
the rest (reported when a one-shot read ends on it). Every good record is kept.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from steptable.ingest.parse import BadLine
from steptable.ingest.parsed import Parsed
from steptable.ingest.readers.protowire import tb_event

_LEN = struct.Struct("<QI")
_CRC = struct.Struct("<I")
#: a record longer than this is taken for a damaged length (a scalar event is ~50 bytes; an image summary MBs)
MAX_RECORD = 256 << 20


def _table() -> list[int]:
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return out


_CRC32C_TABLE = _table()


def crc32c_py(data: bytes) -> int:
    """CRC-32C (Castagnoli) of ``data``, table-driven (the fallback without google-crc32c)."""
    crc = 0xFFFFFFFF
    t = _CRC32C_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


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
    """Bytes of one event file (from its start, in pieces) -> :class:`Parsed` rows keyed by ``step``."""

    def __init__(self, label: str) -> None:
        self._masked = _masker(_crc32c())
        self.label = label
        self.reset()

    def reset(self) -> None:
        self.pos = 0
        self._resync = False  # searching for the next record whose length checksum holds

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
        if final and n == 0 and base == 0:
            bad.append(BadLine(self.label, 0, "empty file"))
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
            self._event_row(payload, base + i, steps, rows, bad)
            i = end
        if final and i < n:
            what = "damaged data" if self._resync else "record cut short"
            bad.append(BadLine(self.label, 0, f"byte {base + i}: {what} ({n - i} bytes at the end); not read"))
        self.pos = base + i
        return i, Parsed(steps=steps, rows=rows, bad=bad, step_key="step")

    def _damaged_length(self, at: int, bad: list[BadLine]) -> None:
        """A length whose checksum fails at file offset ``at``: reported once a damaged stretch (the search goes on
        at the next byte)."""
        if not self._resync:
            bad.append(BadLine(self.label, 0, f"byte {at}: damaged record length; searching on"))
            self._resync = True

    def _event_row(self, raw: bytes, at: int, steps: list[int], rows: list[dict[str, Any]],
                   bad: list[BadLine]) -> None:
        try:
            ev = tb_event(raw)
        except (ValueError, IndexError, struct.error) as e:  # checksums passed but the record is not an Event
            bad.append(BadLine(self.label, 0, f"byte {at}: not a readable event ({type(e).__name__}); skipped"))
            return
        if ev is None:
            return
        wall, step, values = ev
        if not values:
            return
        cells: dict[str, Any] = dict(values)
        if steps and steps[-1] == step:
            rows[-1].update(cells)
            return
        cells["step"] = step
        cells["wall_time"] = wall
        steps.append(step)
        rows.append(cells)
