"""Helpers of the reader tests: the records of a W&B run file, for wandb's own classes to decode; a tracker's run of
a transformers Trainer checked against the trainer's own history."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.writers import rows_of


def on_trainer_steps(store: Any, root: Path) -> dict[int, dict[str, Any]]:
    """Check that a tracker's run of :func:`tests.ingest.writers.hf_tracked` is on the trainer's steps, each loss and
    evaluation loss of its ``history.json`` in the row of its step; returns the rows by step."""
    history = json.loads((root / "history.json").read_text())
    assert list(store.steps) == sorted({e["step"] for e in history})
    rows = {r["train/global_step"]: r for r in rows_of(store)}
    for e in history:
        if "loss" in e:
            assert rows[e["step"]]["train/loss"] == pytest.approx(e["loss"])
        if "eval_loss" in e:
            assert rows[e["step"]]["eval/loss"] == pytest.approx(e["eval_loss"])
    assert not store.bad
    return rows


def wandb_records(path: Path) -> list[bytes]:
    """Every record of a .wandb file, reassembled from its chunks (the framing itself is tested with the reader)."""
    from steptable.ingest.readers.wandblog import BLOCK, CHUNK_HEADER, FIRST, FULL, HEADER, LAST

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


#: the two ways a .wandb file is read: a test of the reader runs with each (``params`` of its autouse fixture)
WANDB_READS = ["walk in C", "loop in Python"]


def wandb_read_by(way: str, monkeypatch: pytest.MonkeyPatch, *, walk_every_record: bool = False) -> None:
    """The W&B reader set to read ``way`` (one of :data:`WANDB_READS`); skips where the walk in C is not built.
    ``walk_every_record``: the walk is tried at every record, none left to the loop in Python by chance."""
    from steptable.ingest.readers import wandb as reader

    if way == "loop in Python":
        monkeypatch.setattr(reader, "Walker", None)
    elif reader.Walker is None:
        pytest.skip("the walk in C is not built here")
    elif walk_every_record:
        monkeypatch.setattr(reader, "WALK_REST", 0)
