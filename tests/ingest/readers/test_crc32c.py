"""CRC-32C as TFRecords use it (steptable.ingest.readers.crc32c), bit for bit against google-crc32c: the stdlib
table, the mask and its inverse one at a time and in lanes, and the checks of many blocks at once (on the records
of an event file written by torch's SummaryWriter, then damaged)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from steptable.ingest.readers import crc32c as crc
from steptable.ingest.readers import tbsteps
from steptable.ingest.readers.tensorboard import EventParser
from tests.ingest.writers import event_file, torch_run

google_crc32c = pytest.importorskip("google_crc32c")


def test_stdlib_crc32c_and_masks_match_google_crc32c() -> None:
    rng = random.Random(0)
    msgs = [b"", b"a", b"123456789", *(rng.randbytes(rng.randint(1, 300)) for _ in range(200))]
    assert [crc.crc32c_py(m) for m in msgs] == [google_crc32c.value(m) for m in msgs]
    vals = [google_crc32c.value(m) for m in msgs] + [0, 0xFFFFFFFF, crc.MASK_DELTA]
    assert [crc.unmask(crc.mask(v)) for v in vals] == vals
    lanes = crc.mask_lanes(int.from_bytes(b"".join(v.to_bytes(8, "little") for v in vals), "little"), len(vals))
    assert lanes.to_bytes(8 * len(vals), "little") == b"".join(crc.mask(v).to_bytes(8, "little") for v in vals)
    assert crc.unmask_lanes(lanes, len(vals)).to_bytes(8 * len(vals), "little") == b"".join(
        v.to_bytes(8, "little") for v in vals)


def _run_region(tmp_path: Path, steps: int = 60) -> tuple[tbsteps.Layout, bytes]:
    """A layout learnt from a real file and the bytes of the run of whole steps it reads."""
    torch_run(tmp_path / "run", range(steps))
    data = event_file(tmp_path / "run").read_bytes()
    parser = EventParser("t")
    off = 0
    while parser._layout is None:
        used, _ = parser.parse(memoryview(data)[off:], off)
        off += used
    layout = parser._layout
    blocks = (len(data) - off) // layout.size
    assert layout.matches(data, off, len(data)) and blocks > 20
    return layout, data[off : off + blocks * layout.size]


def _check(layout: tbsteps.Layout, region: bytes) -> tuple[int, bool]:
    blocks = len(region) // layout.size
    many = crc.good_blocks(region, blocks, layout.size, layout.data, layout.varying, layout.crc_at, layout.bases)
    one = crc.all_good(region, blocks, layout.size, layout.crc_at, layout._ideal_of(blocks), google_crc32c.value)
    return many, one


def test_blocks_of_a_real_file_checked_at_once(tmp_path: Path) -> None:
    layout, region = _run_region(tmp_path)
    blocks = len(region) // layout.size
    per_record = [google_crc32c.value(region[b * layout.size + off : b * layout.size + off + n])
                  for b in range(blocks) for off, n in layout.data]
    stored = [int.from_bytes(region[b * layout.size + at : b * layout.size + at + 4], "little")
              for b in range(blocks) for at in layout.crc_at]
    assert [crc.mask(c) for c in per_record] == stored  # (the file is good: the checks below must say so)
    assert _check(layout, region) == (blocks, True)
    for at, block in ((layout.value_at[1] + 2, 7), (layout.crc_at[0], 0), (14, blocks - 1)):  # value, checksum, wall
        bad = bytearray(region)
        bad[block * layout.size + at] ^= 0x04
        assert _check(layout, bytes(bad)) == (block, False)
    two = bytearray(region)  # two damaged records: the first is found
    two[9 * layout.size + layout.value_at[0]] ^= 0x01
    two[4 * layout.size + layout.value_at[1] + 3] ^= 0x20
    assert _check(layout, bytes(two)) == (4, False)
