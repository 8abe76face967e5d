"""RunIndex: runs known by their file's tail and size; config side files; new runs and changed files on refresh."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.files.runindex import RunIndex, flat, read_config
from tests.ingest import writers
from tests.ingest.writers import WANDB_STEPS, copy_dir, torch_run, wandb_file


def _rows(path: Path, start: int, stop: int) -> None:
    with open(path, "a") as f:
        for s in range(start, stop):
            f.write(json.dumps({"step": s, "loss": 1.0 / (s + 1), "note": "x" * 200}) + "\n")


def _index(root: Path, tail: int = 4096) -> RunIndex[tuple[int, int, int]]:
    return RunIndex([root], lambda st, c: (len(st), st.step_at(len(st) - 1), int(st.meta["preview_offset"])),
                    tail_bytes=tail, recheck=0.0)


def test_reads_only_the_tail(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    _rows(tmp_path / "a" / "metrics.jsonl", 0, 1000)
    idx = _index(tmp_path)
    assert idx.discover() == {"a/metrics.jsonl"}
    assert idx.runs["a/metrics.jsonl"].digest is None and idx.pending() == 1  # listed before any tail is read
    assert idx.refresh() == {"a/metrics.jsonl"}
    rows, last, offset = idx.runs["a/metrics.jsonl"].digest  # type: ignore[misc]
    assert last == 999 and 0 < rows < 30 and offset > 0


def test_refresh_finds_new_runs_and_growth(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    _rows(tmp_path / "a" / "metrics.jsonl", 0, 10)
    idx = _index(tmp_path)
    idx.refresh()
    assert idx.refresh() == set()  # nothing changed: no tail read again
    _rows(tmp_path / "a" / "metrics.jsonl", 10, 12)
    (tmp_path / "b").mkdir()
    _rows(tmp_path / "b" / "metrics.jsonl", 0, 3)
    assert idx.refresh() == {"a/metrics.jsonl", "b/metrics.jsonl"}
    assert idx.runs["a/metrics.jsonl"].digest[1] == 11  # type: ignore[index]


def test_console_log_without_metrics_is_not_a_run(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    _rows(tmp_path / "a" / "metrics.jsonl", 0, 3)
    (tmp_path / "a" / "table.txt").write_text("step  loss\n   0  1.0\n")  # a StepLogger's rendered table
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "train.log").write_text("loading\nstep:3 - loss:0.5 - reward:1.0\n")
    idx = _index(tmp_path)
    idx.refresh()
    assert set(idx.runs) == {"a/metrics.jsonl", "b/train.log"}


def test_budget_reads_part_then_the_rest(tmp_path: Path) -> None:
    for name in "abc":
        (tmp_path / name).mkdir()
        _rows(tmp_path / name / "metrics.jsonl", 0, 5)
    ticks = iter(range(100))
    idx = RunIndex([tmp_path], lambda st, c: len(st), recheck=1e9, clock=lambda: float(next(ticks)))
    first = idx.refresh(budget=2.5)  # the clock moves 1 a call (the pass, discovery, each tail): one tail read
    assert len(first) == 3 and idx.pending() == 2  # (all three listed)
    while idx.pending():
        idx.refresh(budget=2.5)
    assert all(e.digest == 5 for e in idx.runs.values())


def test_config_files(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    _rows(tmp_path / "a" / "metrics.jsonl", 0, 3)
    (tmp_path / "a" / "config.json").write_text(json.dumps({"lr": 1e-5, "optim": {"beta1": 0.9, "eps": {}}}))
    (tmp_path / "a" / "config.yaml").write_text(  # W&B: {key: {desc, value}}
        "_wandb:\n  value: {cli_version: 0.17}\nbatch_size:\n  desc: null\n  value: 64\n")
    (tmp_path / "a" / "broken").mkdir()
    idx = _index(tmp_path)
    idx.refresh()
    cfg = idx.runs["a/metrics.jsonl"].config
    assert cfg["lr"] == 1e-5 and cfg["optim.beta1"] == 0.9 and cfg["batch_size"] == 64
    assert not any(k.startswith("_wandb") for k in cfg)


def test_bad_config_is_no_config(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    _rows(tmp_path / "a" / "metrics.jsonl", 0, 3)
    (tmp_path / "a" / "config.json").write_text("{not json")
    (tmp_path / "a" / "hparams.yaml").write_text("lr: [unclosed\n")
    idx = _index(tmp_path)
    idx.refresh()
    assert idx.runs["a/metrics.jsonl"].config == {}


def test_flat() -> None:
    assert flat({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": {}}) == {"a.b": 1, "a.c.d": [1, 2], "e": {}}
    assert flat([1, 2]) == {}


def test_read_config_hparams(tmp_path: Path) -> None:
    (tmp_path / "hparams.yaml").write_text("lr: 0.001\nlayers: 4\n")  # Lightning
    _rows(tmp_path / "metrics.jsonl", 0, 1)
    from steptable.ingest.files.discover import discover

    cand = discover([tmp_path])[0]
    assert read_config(cand) == {"lr": 0.001, "layers": 4}


def test_a_config_that_is_a_fifo_or_over_the_limit_is_not_read(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A config that is a FIFO where a regular file was found (its read would wait for a writer forever) or is over
    the limit is passed over; the other configs are still read."""
    import threading

    from steptable.ingest.files import runindex
    from steptable.ingest.files.discover import discover

    (tmp_path / "hparams.yaml").write_text("lr: 0.001\n")
    (tmp_path / "config.json").write_text('{"seed": 3}')
    _rows(tmp_path / "metrics.jsonl", 0, 1)
    cand = discover([tmp_path])[0]
    fifo = tmp_path / "args.json"
    os.mkfifo(fifo)
    cand.side_files.setdefault("config", []).append(fifo)
    got: list[dict[str, Any]] = []
    reader = threading.Thread(target=lambda: got.append(read_config(cand)), daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # (let the blocked read end, so the test process does not keep the thread)
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        reader.join(10)
        pytest.fail("read_config waited on a FIFO")
    assert got == [{"lr": 0.001, "seed": 3}]
    monkeypatch.setattr(runindex, "MAX_CONFIG_BYTES", 12)
    (tmp_path / "config.json").write_text('{"seed": 3, "x": 10}')
    fifo.unlink()
    assert read_config(cand) == {"lr": 0.001}


def test_record_runs_and_an_hf_runs_furthest_checkpoint_are_read_whole(tmp_path: Path, wandb_run: Path) -> None:
    """A W&B run file, a TensorBoard run and an HF run have no tail of lines: each is read as a one-shot command
    reads it (the HF run's furthest checkpoint, not the first one discovery names)."""
    pytest.importorskip("transformers")
    pytest.importorskip("tensorboard")
    from transformers import TrainerState

    shutil.copyfile(wandb_file(wandb_run), copy_dir(wandb_run, tmp_path / "w"))
    torch_run(tmp_path / "tb" / "armA", range(5))
    for n in (2, 4):
        ckpt = tmp_path / "hf" / f"checkpoint-{n}"
        ckpt.mkdir(parents=True)
        TrainerState(global_step=n, log_history=[{"loss": 1.0 / s, "step": s} for s in range(1, n + 1)]).save_to_json(
            str(ckpt / "trainer_state.json"))
    idx = _index(tmp_path)
    idx.refresh()
    got = {e.cand.kind: e.digest for e in idx.runs.values()}
    assert got["wandb"] == (WANDB_STEPS, WANDB_STEPS - 1, 0)  # (the table's own step: no row)
    assert got["tensorboard"] == (5, 4, 0)
    assert got["trainer_state"] == (4, 4, 0)


def test_a_trackio_projects_runs_are_each_a_run(tmp_path: Path, trackio_dir: Path) -> None:
    """A trackio database holds a project's runs: each is an entry as a follower names it (``<db>#<run name>``),
    read from one read of the database, with its config; a later discovery does not list the database again."""
    shutil.copytree(trackio_dir, tmp_path / "tk")
    idx = RunIndex([tmp_path], lambda st, c: (st.arm, len(st), st.step_at(len(st) - 1)), recheck=0.0)
    idx.refresh()
    assert {k: e.digest for k, e in idx.runs.items()} == {"tk/proj.db#run-a": ("run-a", 5, 4),
                                                           "tk/proj.db#run-b": ("run-b", 3, 2)}
    assert idx.runs["tk/proj.db#run-a"].config["lr"] == 0.1
    assert idx.refresh() == set() and sorted(idx.runs) == ["tk/proj.db#run-a", "tk/proj.db#run-b"]
    writers.run_writer("""
        import trackio
        trackio.init(project="proj", name="run-c")
        trackio.log({"train/loss": 0.5})
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path / "tk")})
    idx.refresh()
    assert idx.runs["tk/proj.db#run-c"].digest == ("run-c", 1, 0) and len(idx.runs) == 3


def test_a_trackio_project_without_runs_yet_is_read_again_when_it_gets_one(tmp_path: Path) -> None:
    pytest.importorskip("trackio")
    writers.run_writer("""
        from trackio.sqlite_storage import SQLiteStorage
        SQLiteStorage.init_db("proj")
    """, {"TRACKIO_DIR": str(tmp_path)})
    idx = RunIndex([tmp_path], lambda st, c: (st.arm, len(st)), recheck=0.0)
    idx.refresh()
    assert [(k, e.digest) for k, e in idx.runs.items()] == [("proj.db", ("proj", 0))]  # (the database: no rows yet)
    writers.run_writer("""
        import trackio
        trackio.init(project="proj", name="r1")
        trackio.log({"train/loss": 0.5})
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path)})
    idx.refresh()
    assert [e.digest for e in idx.runs.values()] == [("r1", 1)], idx.runs
