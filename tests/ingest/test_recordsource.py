"""The record sources (steptable.ingest.recordsource) following a run live: each poll reads what was written since
the last, a record cut by a concurrent write waits for its second half, a file that grew is never read again from
its start. On a TensorBoard event file written by torch and a W&B run file written by wandb itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.ingest.files.follow import Follower
from tests.ingest import writers
from tests.ingest.writers import WANDB_STEPS, copy_dir, event_file, only, torch_run, wandb_file

wandb_run = writers.wandb_run  # (a session fixture of real runs)


def test_growing_file_read_incrementally_cut_record_waits(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    src = tmp_path / "src"
    torch_run(src, range(6))
    data = event_file(src).read_bytes()
    dst = tmp_path / "live" / "exp" / event_file(src).name
    dst.parent.mkdir(parents=True)
    f = Follower([tmp_path / "live"])
    seen = []
    for cut in range(0, len(data) + 1, 7):  # every few bytes: most cuts fall inside a record
        with open(dst, "wb") as fh:
            fh.write(data[:cut])
        f.scan()
        if f.stores:
            store = only(f)
            seen.append(len(store))
            assert not store.bad and not f.errors
    with open(dst, "wb") as fh:
        fh.write(data)
    f.scan()
    store = only(f)
    assert list(store.steps) == list(range(6)) and seen == sorted(seen)
    assert store.generation == 0  # grown, never read again from the start


def test_live_growth_cut_record_waits(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    pytest.importorskip("wandb")
    wandb_run: Path = request.getfixturevalue("wandb_run")  # (after the skip: the fixture runs wandb)
    data = wandb_file(wandb_run).read_bytes()
    dst = copy_dir(wandb_run, tmp_path)
    cut = data.find(b"0.3333333333333333")  # inside the history record of step 2 (its summary comes after it)
    dst.write_bytes(data[:cut])
    f = Follower([tmp_path])
    f.scan()
    store = only(f)
    assert list(store.steps) == [0, 1] and not store.bad and not f.errors  # the cut record waits
    with open(dst, "ab") as fh:
        fh.write(data[cut:])
    f.scan()
    assert list(store.steps) == list(range(WANDB_STEPS + 1)) and not f.errors
    assert store.arm == "grpo-a"
