"""The framing of a W&B run file (``run-<id>.wandb``): its header, and the log of blocks and chunks that carries
its records. Pure; what the records hold is :mod:`~steptable.ingest.readers.wandbwire`'s.

A file starts with :data:`HEADER` (``:W&B``, the magic 0xBEE1 little-endian, version 0). Then comes a LevelDB-style
log of :data:`BLOCK`-byte blocks. Each chunk is a :data:`CHUNK_HEADER`-byte header (:data:`UNPACK`: a little-endian
crc32 over the chunk's type byte and data, ``zlib.crc32(data, TYPE_CRC[type])``; the data's length; the type) and
then its data. No chunk crosses a block: a block's tail shorter than a chunk header is zero padding. A record is one
:data:`FULL` chunk, or a :data:`FIRST` chunk, any :data:`MIDDLE` ones and a :data:`LAST` one, in that order, which
:class:`RecordParts` joins.
"""

from __future__ import annotations

import struct
import zlib

from steptable.ingest.parse import BadLine

HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK = 32 * 1024
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
#: the crc32 of each type byte: a chunk's checksum goes on from its type's over its data
TYPE_CRC = [zlib.crc32(bytes([t])) for t in range(256)]
#: (crc, length, type) of the chunk header at an offset
UNPACK = struct.Struct("<IHB").unpack_from


class RecordParts:
    """The chunks of one record split over several, kept until its LAST part joins them. ``waiting`` holds the parts
    so far (empty: no record is open); :meth:`drop` forgets them (a damaged chunk, a FULL one: that record is lost)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.waiting: list[bytes] = []
        self._at = 0  # the offset of the open record's FIRST chunk

    def drop(self) -> None:
        self.waiting = []

    def add(self, kind: int, chunk: bytes, at: int, bad: list[BadLine]) -> tuple[bytes, int] | None:
        """A checked chunk at offset ``at`` that is part of a record (FIRST, MIDDLE, LAST) -> (the whole record, its
        offset) once the LAST part joins the parts before it; None for a FIRST or MIDDLE part (kept for the rest) or
        a part whose start was lost (reported in ``bad``)."""
        if kind == FIRST:
            self.waiting, self._at = [chunk], at
        elif self.waiting:
            self.waiting.append(chunk)
            if kind == LAST:
                whole = b"".join(self.waiting)
                self.waiting = []
                return whole, self._at
        else:
            bad.append(BadLine(self.label, 0, f"byte {at}: the rest of a record whose start was lost; skipped"))
        return None
