"""TensorBoard scalars logged without a step (``add_scalar(tag, v)``, ``global_step=None``) numbered in the order
written (steptable.ingest.readers.tensorboard): files written by torch's SummaryWriter and tensorboardX, checked
against what TensorBoard's own EventAccumulator reads from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.files.follow import Follower
from tests.ingest.writers import only, read_once, rows_of

pytest.importorskip("tensorboard")


def _writer(kind: str, logdir: Path) -> Any:
    if kind == "tensorboardX":
        import tensorboardX

        return tensorboardX.SummaryWriter(str(logdir))
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(str(logdir))


def _accumulated(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """(step, value) of each scalar tag as TensorBoard's EventAccumulator reads the directory."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir))
    acc.Reload()
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}


def _column(rows: list[dict[str, Any]], tag: str) -> list[tuple[int, float]]:
    return [(r["step"], r[tag]) for r in rows if isinstance(r.get(tag), float)]


@pytest.mark.parametrize("kind", ["torch", "tensorboardX"])
def test_a_loop_without_steps_is_one_row_per_iteration(tmp_path: Path, kind: str) -> None:
    """Every value at step 0 to TensorBoard; steptable numbers the rows in the order written, every value kept."""
    w = _writer(kind, tmp_path / "run")
    for i in range(20):
        w.add_scalar("loss", 1.0 / (i + 1))
        w.add_scalar("acc", i / 20)
    w.close()
    assert {s for pts in _accumulated(tmp_path / "run").values() for s, _ in pts} == {0}  # (as TensorBoard reads it)
    store = only(read_once(tmp_path))
    rows = rows_of(store)
    assert list(store.steps) == list(range(20))
    assert [r["loss"] for r in rows] == pytest.approx([1.0 / (i + 1) for i in range(20)], rel=1e-6)
    assert [r["acc"] for r in rows] == pytest.approx([i / 20 for i in range(20)], rel=1e-6)
    walls = list(store.wall_times)
    assert walls == sorted(walls) and not store.resumes and not store.bad


def test_a_value_logged_every_few_iterations_lands_in_its_iteration(tmp_path: Path) -> None:
    w = _writer("torch", tmp_path / "run")
    for i in range(12):
        w.add_scalar("loss", float(i))
        if i % 4 == 0:
            w.add_scalar("val", 100.0 + i)
    w.close()
    rows = rows_of(only(read_once(tmp_path)))
    assert _column(rows, "loss") == [(i, float(i)) for i in range(12)]
    assert _column(rows, "val") == [(0, 100.0), (4, 104.0), (8, 108.0)]
    values = {t: [v for _, v in pts] for t, pts in _accumulated(tmp_path / "run").items()}
    assert values == {"loss": [v for _, v in _column(rows, "loss")], "val": [v for _, v in _column(rows, "val")]}


def test_a_tag_without_a_step_beside_tags_with_one_joins_their_rows(tmp_path: Path) -> None:
    """``lr`` logged without a step after a ``loss`` with one: each value in that loss's row, no repeat at step 0
    taken for a restart (which would drop the loss's rows)."""
    w = _writer("torch", tmp_path / "run")
    for i in range(6):
        w.add_scalar("loss", 1.0 + i, i)
        w.add_scalar("lr", 0.5 * i)
    w.close()
    store = only(read_once(tmp_path))
    rows = rows_of(store)
    assert _column(rows, "loss") == [(i, 1.0 + i) for i in range(6)]
    assert _column(rows, "lr") == [(i, 0.5 * i) for i in range(6)]
    assert not store.resumes


def test_a_step_that_restarts_each_epoch_is_still_a_restart(tmp_path: Path) -> None:
    """A tag that came with a step is not numbered: its step back at 0 is a restart, as TensorBoard's step axis
    shows it (the epochs drawn over each other)."""
    w = _writer("torch", tmp_path / "run")
    for epoch in range(2):
        for i in range(4):
            w.add_scalar("loss", 10.0 * epoch + i, i)
    w.close()
    store = only(read_once(tmp_path))
    assert list(store.steps) == [0, 1, 2, 3] and store.resumes == [0]
    assert [r["loss"] for r in rows_of(store)] == [10.0, 11.0, 12.0, 13.0]


def test_a_run_without_steps_read_as_it_grows_reads_as_a_whole(tmp_path: Path) -> None:
    """A follower reads the file between the writer's flushes: the numbering goes on from the row read before
    (a value that joins it, a value that starts the next)."""
    w = _writer("torch", tmp_path / "run")
    follower = Follower([tmp_path])
    for i in range(10):
        w.add_scalar("loss", float(i))
        w.flush()
        follower.scan()
        if i % 3 == 0:
            w.add_scalar("val", 100.0 + i)
            w.flush()
            follower.scan()
    w.close()
    follower.scan()
    rows = rows_of(only(follower))
    assert _column(rows, "loss") == [(i, float(i)) for i in range(10)]
    assert _column(rows, "val") == [(i, 100.0 + i) for i in (0, 3, 6, 9)]


def test_a_long_run_without_steps_is_not_read_in_bulk_as_step_zero(tmp_path: Path) -> None:
    """Steps laid out alike are read in bulk with the step from the wire; a run without steps has none there."""
    w = _writer("torch", tmp_path / "run")
    tags = ["train/loss", "train/reward", "x"]
    for i in range(300):
        for k, t in enumerate(tags):
            w.add_scalar(t, float(i * 10 + k))
    w.close()
    store = only(read_once(tmp_path))
    assert list(store.steps) == list(range(300)) and not store.resumes
    assert [r["x"] for r in rows_of(store)] == [float(i * 10 + 2) for i in range(300)]


@pytest.mark.parametrize("kind", ["torch", "tensorboardX"])
def test_add_scalars_without_steps_numbers_each_curve_alike(tmp_path: Path, kind: str) -> None:
    """add_scalars writes each curve to a file of its own (steptable.ingest.readers.tbcurves): each file numbered in
    its order, the curves' values of one call in one row."""
    w = _writer(kind, tmp_path / "run")
    for i in range(4):
        w.add_scalars("loss", {"train": 1.0 + i, "val": 10.0 + i})
    w.close()
    store = only(read_once(tmp_path))
    rows = rows_of(store)
    assert list(store.steps) == [0, 1, 2, 3] and not store.resumes
    curves = sorted({k for r in rows for k in r} - {"step", "wall_time"})
    assert len(curves) == 2, curves
    assert sorted([r[c] for r in rows] for c in curves) == [[1.0, 2.0, 3.0, 4.0], [10.0, 11.0, 12.0, 13.0]]
