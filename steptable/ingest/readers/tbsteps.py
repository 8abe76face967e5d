"""TensorBoard steps read in bulk: the records of one step taken as a layout, and every following step of that
layout read with a few C-level passes over all of them in place of a Python walk per record.

SummaryWriter writes one event per scalar: a step of 42 scalars is 42 TFRecords, and the steps of a run repeat one
layout (the same tags in the same order, so the same lengths: a block of fixed size per step). A :class:`Layout` is
learnt from one step's records when each is the usual single-value scalar event (``wall_time``, ``step``, one
``simple_value``, a tag under 128 bytes). A run of following blocks is read a piece at a time (about 1 MB, so a
piece stays in the CPU's cache from one pass to the next), each byte position of a block handled for every block at
once by a slice with a step: a block must hold the layout's bytes everywhere but in the wall time, step, value and
data checksum of each record (compared with those zeroed), one step in all its records, and every record's data
checksum right (:mod:`~steptable.ingest.readers.crc32c`); the values of each tag come out as one ``array``. A run
stops before the first block that fails (the record walk reads it and reports what is damaged).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable
from typing import Any

from steptable.ingest.parsed import Parsed
from steptable.ingest.readers import crc32c as crc

#: keys of a row besides the tags (a step whose tags use them is left to the record walk, which overrides them)
OWN_KEYS = frozenset({"step", "wall_time"})
INT_KEYS = frozenset({"step"})
#: bytes of a run checked and read at a time
CHUNK = 1 << 20


def usual(buf: Any, a: int, b: int) -> tuple[int, bytes] | None:
    """(step varint length, tag) of the record at ``buf[a:b]`` (header, data, checksum) when its data is the usual
    single-value scalar event; None for any other layout."""
    d, n = a + 12, b - a - 16
    if n < 16 or buf[d] != 0x09:
        return None
    p, k = 9, 0
    if buf[d + 9] == 0x10:
        q = d + 10
        while q < b - 4 and buf[q] >= 0x80:
            q += 1
        k = q + 1 - (d + 10)
        p = 10 + k
    if p + 6 > n or buf[d + p] != 0x2A or buf[d + p + 2] != 0x0A or buf[d + p + 4] != 0x0A:
        return None
    s1, s2, tl = buf[d + p + 1], buf[d + p + 3], buf[d + p + 5]
    if s1 >= 0x80 or s2 >= 0x80 or tl >= 0x80 or p + 2 + s1 != n or p + 4 + s2 != n or p + 11 + tl != n:
        return None
    if buf[d + p + 6 + tl] != 0x15:
        return None
    return k, bytes(buf[d + p + 6 : d + p + 6 + tl])


class Layout:
    """The records of one step (spans of ``buf``, each :func:`usual` with step varint length ``k``; their checksums
    held) as a pattern that reads any run of following steps laid out the same way. ``checksum``: crc32c of one
    message; ``fast``: it is google-crc32c's (a run's records are checked with one call over all of them)."""

    def __init__(self, buf: Any, spans: list[tuple[int, int]], k: int, tags: list[bytes],
                 checksum: Callable[[bytes], int], fast: bool) -> None:
        self.k = k
        self.tags = [t.decode("utf-8", "replace") for t in tags]
        self.size = sum(b - a for a, b in spans)
        # the bytes of a record's data that may differ from step to step: wall time, step, value
        self.varying = [*range(1, 9), *range(10, 10 + k), *range(-4, 0)]
        zeroed: list[bytes] = []  # each record's data with the varying bytes zeroed
        self.data: list[tuple[int, int]] = []  # (offset in the block, length) of each record's checksummed bytes
        self.value_at: list[int] = []
        self.crc_at: list[int] = []
        at = 0
        for a, b in spans:
            n = b - a
            zeroed.append(self._zero(bytes(buf[a + 12 : b - 4])))
            self.data.append((at + 12, n - 16))
            self.value_at.append(at + n - 8)
            self.crc_at.append(at + n - 4)
            at += n
        self.bases = [checksum(z) for z in zeroed]
        block = bytearray(b"".join(bytes(buf[a:b]) for a, b in spans))
        self._ideal = bytearray(block)  # checksums unmasked (crc.all_good)
        for at in self.crc_at:
            self._ideal[at : at + 4] = crc.unmask(int.from_bytes(block[at : at + 4], "little")).to_bytes(4, "little")
        # every byte that may differ between steps, by its offset in a block; the block with them zeroed
        self._loose = [off + (v + n if v < 0 else v) for off, n in self.data for v in self.varying]
        self._loose += [at + t for at in self.crc_at for t in range(4)]
        for at in self._loose:
            block[at] = 0
        self._blank = bytes(block)
        self._checksum = checksum
        self._ideal_crc: dict[int, int] = {}
        self._blanks: dict[int, bytes] = {}
        self._work = bytearray()
        self._fast = fast

    def _zero(self, data: bytes) -> bytes:
        out = bytearray(data)
        for v in self.varying:
            out[v] = 0
        return bytes(out)

    def matches(self, data: Any, i: int, n: int) -> bool:
        """Whether a whole step of this layout is at ``data[i:n]`` (its checksums unchecked)."""
        if n - i < self.size:
            return False
        region = bytes(data[i : i + self.size])
        return self._agree(region, 1) == 1 and self._same(region, 1) == 1

    def read(self, data: Any, i: int, n: int) -> tuple[int, Parsed] | None:
        """(end, rows) of the run of whole steps of this layout at ``data[i:n]`` whose checksums hold; None when
        the first step does not match or fails its checksums."""
        size = self.size
        blocks = (n - i) // size  # (the first piece that holds a block of another layout ends the run)
        chunk = max(1, CHUNK // size)  # (a piece's columns stay in the CPU's cache from one pass to the next)
        cols: list[list[Any]] = [[] for _ in range(len(self.tags) + 2)]
        done = 0
        while done < blocks:
            count = min(chunk, blocks - done)
            region = bytes(data[i + done * size : i + (done + count) * size])
            good = self._good(region, count)
            for col, got in zip(cols, self._columns(region, good), strict=True):
                col += got
            done += good
            if good < count:
                break
        if not done:
            return None
        *values, steps, walls = cols
        out: dict[str, Any] = dict(zip(self.tags, values, strict=True))  # (a tag twice in a step: the later one)
        out["step"] = steps
        out["wall_time"] = walls
        return i + done * size, Parsed(steps=steps, cols=out, int_keys=INT_KEYS, step_key="step")

    def _good(self, region: bytes, blocks: int) -> int:
        """How many leading blocks of ``region`` are steps of this layout whose checksums hold."""
        blocks = self._agree(region, blocks)
        if blocks:
            blocks = self._same(region, blocks)
        if blocks:
            region = region[: blocks * self.size]
            if not (self._fast and crc.all_good(region, blocks, self.size, self.crc_at, self._ideal_of(blocks),
                                                self._checksum, self._work)):
                blocks = crc.good_blocks(region, blocks, self.size, self.data, self.varying, self.crc_at, self.bases)
        return blocks

    def _ideal_of(self, blocks: int) -> int:
        """The checksum of ``blocks`` ideal blocks (crc.all_good)."""
        got = self._ideal_crc.get(blocks)
        if got is None:
            if len(self._ideal_crc) > 8:
                self._ideal_crc.clear()
            got = self._ideal_crc[blocks] = self._checksum(bytes(self._ideal) * blocks)
        return got

    def _columns(self, region: bytes, blocks: int) -> list[list[Any]]:
        """The values of each tag, the steps and the wall times of the first ``blocks`` blocks of ``region``."""
        size, k = self.size, self.k
        steps: list[int] = [0] * blocks if not k else list(region[22 : blocks * size : size])
        if k > 1:
            for t in range(1, k):
                steps = [s + ((b & 0x7F) << 7 * t) for s, b in zip(steps, region[22 + t :: size], strict=False)]
            steps = [s - 0x80 for s in steps]
            if k >= 10:
                steps = [s - (1 << 64) if s >= 1 << 63 else s for s in steps]
        return [*(_floats(region, at, size, blocks, "f") for at in self.value_at), steps,
                _floats(region, 13, size, blocks, "d")]

    def _same(self, region: bytes, blocks: int) -> int:
        """How many leading blocks hold this layout's bytes but for those that may differ between steps."""
        size = self.size
        zero = bytes(blocks)
        work = self._work
        if len(work) != blocks * size:  # (the same buffer for every piece of one size: no memory to fault in)
            work = self._work = bytearray(blocks * size)
        work[:] = region[: blocks * size]
        for at in self._loose:
            work[at::size] = zero
        blanks = self._blanks.get(blocks)
        if blanks is None:
            if len(self._blanks) > 8:
                self._blanks.clear()
            blanks = self._blanks[blocks] = self._blank * blocks
        if work == blanks:
            return blocks
        blank = self._blank
        return next(b for b in range(blocks) if work[b * size : (b + 1) * size] != blank)

    def _agree(self, region: bytes, blocks: int) -> int:
        """How many leading blocks have one step in all their records, a varint of this layout's length."""
        size, k = self.size, self.k
        good = blocks
        for t in range(k):
            first = region[22 + t :: size]
            cont = t < k - 1  # (every byte of a varint but its last has the high bit set)
            if (min(first) < 0x80) if cont else (max(first) >= 0x80):
                good = min(good, next(b for b, x in enumerate(first) if (x >= 0x80) != cont))
            for off, _ in self.data[1:]:
                other = region[off + 10 + t :: size]
                if other != first:
                    good = min(good, next(b for b, (x, y) in enumerate(zip(first, other, strict=True)) if x != y))
        return good


def _floats(region: bytes, at: int, size: int, blocks: int, code: str) -> list[Any]:
    """The float (``code`` f or d, little-endian) at offset ``at`` of each block, gathered a byte plane at a time."""
    width = 4 if code == "f" else 8
    out = bytearray(width * blocks)
    for t in range(width):
        out[t::width] = region[at + t : blocks * size : size]
    vals = array(code, out)
    if sys.byteorder != "little":
        vals.byteswap()
    return vals.tolist()
