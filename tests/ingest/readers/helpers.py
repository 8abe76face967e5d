"""Helpers of the reader tests: the records of a W&B run file, for wandb's own classes to decode."""

from __future__ import annotations

import struct
from pathlib import Path


def wandb_records(path: Path) -> list[bytes]:
    """Every record of a .wandb file, reassembled from its chunks (the framing itself is tested with the reader)."""
    from steptable.ingest.readers.wandb import BLOCK, CHUNK_HEADER, FIRST, FULL, HEADER, LAST

    data = path.read_bytes()
    i, out, frags = len(HEADER), [], b""
    while i + CHUNK_HEADER <= len(data):
        left = BLOCK - i % BLOCK
        if left < CHUNK_HEADER:
            i += left
            continue
        _, length, kind = struct.unpack_from("<IHB", data, i)
        chunk = data[i + CHUNK_HEADER : i + CHUNK_HEADER + length]
        i += CHUNK_HEADER + length
        if kind == FULL:
            out.append(chunk)
        elif kind == FIRST:
            frags = chunk
        else:
            frags += chunk
            if kind == LAST:
                out.append(frags)
    return out
