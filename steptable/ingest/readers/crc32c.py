"""CRC-32C (Castagnoli) as TFRecords use it: one record at a time, and the records of many equal-layout blocks at
once.

:func:`crc32c_py` is the table-driven stdlib one (the fallback without google-crc32c). :func:`good_blocks` checks
every record of a run of blocks with a few C calls per byte that differs between blocks, none per block (a CRC is
linear over GF(2)); :func:`all_good` checks them with one call of a fast crc32c over the whole run;
:func:`mask_lanes` masks many checksums (TFRecord's ``rotate right 15 + 0xa282ead8``) with a few big-integer
operations. All are stdlib only.
"""

from __future__ import annotations

import functools
import sys
from array import array
from collections.abc import Callable, Sequence

POLY = 0x82F63B78  # (reflected)
MASK_DELTA = 0xA282EAD8


def _table() -> list[int]:
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ POLY if c & 1 else c >> 1
        out.append(c)
    return out


TABLE = _table()


def crc32c_py(data: bytes) -> int:
    """CRC-32C of ``data``, table-driven (the fallback without google-crc32c)."""
    crc = 0xFFFFFFFF
    t = TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def mask(x: int) -> int:
    """TFRecord's masked form of checksum ``x``."""
    return (((x >> 15) | (x << 17)) + MASK_DELTA) & 0xFFFFFFFF


def unmask(x: int) -> int:
    """The checksum whose masked form is ``x``."""
    y = (x - MASK_DELTA) & 0xFFFFFFFF
    return ((y << 15) | (y >> 17)) & 0xFFFFFFFF


@functools.lru_cache(maxsize=16)  # (the same few per size of piece: building one costs as much as using it)
def _lanes(n: int, value: int) -> int:
    """An integer whose ``n`` 64-bit lanes each hold ``value``."""
    return int.from_bytes(value.to_bytes(8, "little") * n, "little")


def mask_lanes(x: int, n: int) -> int:
    """:func:`mask` of each of the ``n`` checksums packed one per 64-bit lane of ``x`` (little-endian lanes, each
    < 2**32), as one integer of the same lanes: a few big-integer operations in place of one per checksum."""
    # rotate right by 15 within each lane's low 32 bits (the high 32 bits are zero, so nothing crosses a lane), then
    # the delta: a lane's sum stays below 2**33, no carry reaches the next lane
    r = ((x >> 15) & _lanes(n, 0x1FFFF)) | ((x << 17) & _lanes(n, 0xFFFE0000))
    return (r + _lanes(n, MASK_DELTA)) & _lanes(n, 0xFFFFFFFF)


def unmask_lanes(x: int, n: int) -> int:
    """The inverse of :func:`mask_lanes`: the checksums whose masked forms are the ``n`` lanes of ``x``."""
    y = (x + _lanes(n, (1 << 32) - MASK_DELTA)) & _lanes(n, 0xFFFFFFFF)  # (adding keeps a borrow in its lane)
    return ((y << 15) & _lanes(n, 0xFFFF8000)) | ((y >> 17) & _lanes(n, 0x7FFF))


def gather_lanes(region: bytes, size: int, blocks: int, offsets: Sequence[int]) -> bytearray:
    """The little-endian u32 at each of ``offsets`` in each block of ``region``, one per 64-bit lane, offset by
    offset (all the blocks' values of the first offset, then of the next)."""
    out = bytearray(8 * blocks * len(offsets))
    for j, at in enumerate(offsets):
        lane = j * blocks * 8
        for t in range(4):
            out[lane + t : lane + blocks * 8 : 8] = region[at + t :: size]
    return out


def all_good(region: bytes, blocks: int, size: int, crc_at: Sequence[int], ideal: int,
             checksum: Callable[[bytes], int], work: bytearray | None = None) -> bool:
    """Whether every record of ``blocks`` blocks has its masked checksum (at ``crc_at`` in a block) right, with one
    checksum call over the whole region in place of one per record. ``ideal``: the checksum of ``blocks`` copies of
    a block of good records laid out the same way, their checksums unmasked. False: some record is damaged (find
    it with :func:`good_blocks`). ``work``: a buffer to use, of the region's length (one is made without it).

    With each checksum unmasked in place, a good record and its checksum (CRC ``d || crc(d)``) have the constant
    CRC residue whatever ``d`` is; a CRC is linear, so the region has the CRC of the ideal blocks exactly when the
    records' differences from the ideal ones are all multiples of the polynomial: one damaged record always shows,
    several could cancel with a chance of 2**-32 (the chance a CRC itself passes a random change)."""
    n = blocks * len(crc_at)
    lanes = unmask_lanes(int.from_bytes(gather_lanes(region, size, blocks, crc_at), "little"), n)
    plain = lanes.to_bytes(8 * n, "little")
    if work is None or len(work) != len(region):
        work = bytearray(region)
    else:
        work[:] = region
    for j, at in enumerate(crc_at):
        lane = j * blocks * 8
        for t in range(4):
            work[at + t :: size] = plain[lane + t : lane + blocks * 8 : 8]
    return checksum(bytes(work)) == ideal


_PLANES: list[tuple[bytes, bytes, bytes, bytes]] = []  # by distance d: byte t of raw-CRC(b, then d - 1 zero bytes)


def _planes(d: int) -> tuple[bytes, bytes, bytes, bytes]:
    """Translation tables: byte value b -> byte t (t = 0..3) of the raw CRC (no initial or final xor) of a message
    whose only nonzero byte is b, ``d`` bytes from its end."""
    if not _PLANES:
        _PLANES.append((b"", b"", b"", b""))
        _PLANES.append(_split(TABLE))
        _PLANES_RAW.append([])
        _PLANES_RAW.append(TABLE)
    while len(_PLANES) <= d:
        prev = _PLANES_RAW[-1]
        raw = [TABLE[x & 0xFF] ^ (x >> 8) for x in prev]
        _PLANES_RAW.append(raw)
        _PLANES.append(_split(raw))
    return _PLANES[d]


_PLANES_RAW: list[list[int]] = []


def _split(raw: list[int]) -> tuple[bytes, bytes, bytes, bytes]:
    packed = b"".join(x.to_bytes(4, "little") for x in raw)
    return packed[0::4], packed[1::4], packed[2::4], packed[3::4]


def good_blocks(region: bytes, blocks: int, size: int, records: Sequence[tuple[int, int]], varying: Sequence[int],
                crc_at: Sequence[int], bases: Sequence[int]) -> int:
    """How many leading blocks of ``region`` (``blocks`` blocks of ``size`` bytes) have every record's checksum
    right. ``records``: (offset in the block, length) of each record's checksummed bytes; ``varying``: offsets in a
    record (negative: from its end), the same for every record, of the only bytes that may differ between blocks
    (the others are taken to be the layout's); ``crc_at``: where each record's masked checksum is in the block;
    ``bases``: each record's CRC with its varying bytes zeroed. A block whose other bytes differ from the layout's
    fails its checksums (as a damaged one does).

    A CRC is linear over GF(2): a record's CRC is its base xor one table entry per varying byte (the raw CRC of
    that byte at its distance from the record's end). Each varying byte is read for every block at once (a slice
    with a step), the same byte of every record of one length joined, mapped through the table one byte plane at a
    time by ``bytes.translate`` and xor-ed as big integers: a few C calls per varying byte, none per block."""
    n_rec = len(records)
    got = bytearray(8 * blocks * n_rec)
    by_length: dict[int, list[int]] = {}  # records of one length share their tables: translated together
    for j, (_, length) in enumerate(records):
        by_length.setdefault(length, []).append(j)
    for length, group in by_length.items():
        planes = [0, 0, 0, 0]
        const = 0  # the entries of bytes the same in every block and record (the wall time's high bytes)
        for v in varying:
            c = v + length if v < 0 else v
            col = b"".join([region[records[j][0] + c :: size] for j in group])  # record by record, block by block
            table = _planes(length - c)
            if col.count(col[0]) == len(col):
                const ^= _PLANES_RAW[length - c][col[0]]
                continue
            for t in range(4):
                planes[t] ^= int.from_bytes(col.translate(table[t]), "little")
        for t in range(4):
            base = b"".join([bytes([(bases[j] ^ const) >> 8 * t & 0xFF]) * blocks for j in group])
            plane = (planes[t] ^ int.from_bytes(base, "little")).to_bytes(len(group) * blocks, "little")
            for g, j in enumerate(group):
                lane = j * blocks * 8
                got[lane + t : lane + blocks * 8 : 8] = plane[g * blocks : (g + 1) * blocks]
    want = gather_lanes(region, size, blocks, crc_at)
    n = blocks * n_rec
    if mask_lanes(int.from_bytes(got, "little"), n) == int.from_bytes(want, "little"):
        return blocks
    computed, stored = array("Q", bytes(got)), array("Q", bytes(want))
    if sys.byteorder != "little":
        computed.byteswap()
        stored.byteswap()
    return min(t % blocks for t in range(n) if mask(computed[t]) != stored[t])
