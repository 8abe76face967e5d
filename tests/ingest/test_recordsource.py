"""The record sources (steptable.ingest.recordsource) following a run live: each poll reads what was written since
the last, a record cut by a concurrent write waits for its second half, a file that grew is never read again from
its start. On a TensorBoard event file written by torch, a W&B run file written by wandb itself and a trackio
project written by trackio."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.files import bytetail
from steptable.ingest.files.follow import Follower
from tests.ingest import writers
from tests.ingest.writers import WANDB_STEPS, copy_dir, event_file, only, read_once, torch_run, wandb_file


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
    assert list(store.steps) == list(range(WANDB_STEPS)) and not f.errors
    assert store.arm == "grpo-a"


def _grown_run(tmp_path: Path) -> tuple[Follower, Path]:
    """A follower that read half of a TensorBoard run's event file (torch's SummaryWriter, steps 0-5), the rest
    written since (the next poll reads); and the file's path."""
    torch_run(tmp_path / "first", range(6))
    data = event_file(tmp_path / "first").read_bytes()
    dst = tmp_path / "live" / "exp" / event_file(tmp_path / "first").name
    dst.parent.mkdir(parents=True)
    dst.write_bytes(data[: len(data) // 2])
    f = Follower([tmp_path / "live"])
    f.scan()
    assert len(only(f)) and not f.errors
    with open(dst, "ab") as fh:
        fh.write(data[len(data) // 2 :])
    return f, dst


def test_an_event_file_replaced_between_the_stat_and_the_open_is_read_as_a_new_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another run's event file renamed over the one followed after the poll's stat and before its open: the poll
    reads the new file from its start (a reset), never its bytes from the old file's offset (a spurious "damaged
    record" notice, a record searched for in the middle of another run's file)."""
    pytest.importorskip("tensorboard")
    f, dst = _grown_run(tmp_path)
    store = only(f)
    torch_run(tmp_path / "other", range(100, 140))
    real_stat = os.stat

    def stat_then_replace(p: Any, *a: Any, **kw: Any) -> os.stat_result:
        st = real_stat(p, *a, **kw)
        if Path(p) == dst and not (tmp_path / "new").exists():
            shutil.copy(event_file(tmp_path / "other"), tmp_path / "new")
            os.replace(tmp_path / "new", dst)
            (tmp_path / "new").touch()
        return st

    monkeypatch.setattr(bytetail.os, "stat", stat_then_replace)
    f.scan()
    monkeypatch.setattr(bytetail.os, "stat", real_stat)
    f.scan()
    assert list(store.steps) == list(range(100, 140)) and store.generation == 1
    assert f.errors == [] and not store.bad


def test_an_event_file_deleted_between_the_stat_and_the_open_is_missing_not_unreadable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run directory deleted after the poll's stat and before its open: the run is missing (as when the stat
    finds no file), not reported unreadable; its rows stay shown."""
    pytest.importorskip("tensorboard")
    f, dst = _grown_run(tmp_path)
    store = only(f)
    shown = list(store.steps)
    real_stat = os.stat
    deleted: list[Path] = []

    def stat_then_delete(p: Any, *a: Any, **kw: Any) -> os.stat_result:
        st = real_stat(p, *a, **kw)
        if Path(p) == dst and not deleted:
            deleted.append(dst)
            shutil.rmtree(dst.parent)
        return st

    monkeypatch.setattr(bytetail.os, "stat", stat_then_delete)
    f.scan()
    monkeypatch.setattr(bytetail.os, "stat", real_stat)
    assert f.errors == [] and not store.bad and list(store.steps) == shown
    (src,) = f._sources.values()
    assert src.missing


def _trackio_project(root: Path, runs: dict[str, int]) -> None:
    """A trackio project ``p`` under ``root`` written by trackio: each run of ``runs`` (name -> rows) in turn, its
    loss 1/(step+1) at steps 0, 1..."""
    writers.run_writer(f"""
        import trackio
        for name, n in {runs!r}.items():
            trackio.init(project="p", name=name)
            for s in range(n):
                trackio.log({{"loss": 1.0 / (s + 1)}}, step=s)
            trackio.finish()
    """, {"TRACKIO_DIR": str(root)})


def test_a_trackio_project_of_more_rows_than_a_read_takes_is_read_whole_in_one_poll(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader takes BATCH rows at most a read: the poll reads on until none are left (a one-shot read kept
    the project's first BATCH rows: the runs after them were missing, and ``tail --run`` said no such run)."""
    pytest.importorskip("trackio")
    from steptable.ingest.readers import trackio

    _trackio_project(tmp_path, {"big": 30, "second": 5})
    monkeypatch.setattr(trackio, "BATCH", 7)
    runs = {st.arm: st for st in read_once(tmp_path).stores.values()}
    assert list(runs["big"].steps) == list(range(30)) and list(runs["second"].steps) == list(range(5))
    assert [r["loss"] for r in runs["second"].stored_rows()] == [1.0 / (s + 1) for s in range(5)]
