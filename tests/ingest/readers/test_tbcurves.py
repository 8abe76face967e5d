"""``SummaryWriter.add_scalars`` curves read as columns of their run: every file is written in the test by torch's
SummaryWriter or tensorboardX's (each lays its curves out in directories of its own below the run's), read whole,
resumed, named on the command line, and followed while they appear."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.files.follow import Follower
from steptable.ingest.readers.tbcurves import Curve, curve_at, event_order, first_tag
from tests.helpers import run_cli
from tests.ingest.writers import read_once, rows_of

pytest.importorskip("tensorboard")
torch_tb = pytest.importorskip("torch.utils.tensorboard")

TUTORIAL_TAG = "Training vs. Validation Loss"  # (the PyTorch TensorBoard tutorial's add_scalars)


@pytest.fixture(params=["torch", "tensorboardX"])
def writer(request: pytest.FixtureRequest) -> Any:
    """A SummaryWriter class: torch's (curves in ``<run>/<tag>_<curve>``), tensorboardX's (``<run>/<tag>/<curve>``)."""
    if request.param == "torch":
        return torch_tb.SummaryWriter
    return pytest.importorskip("tensorboardX").SummaryWriter


def _tutorial(writer: Any) -> str:
    """TUTORIAL_TAG as ``writer`` writes it (tensorboardX cleans a tag: its spaces become "_")."""
    return TUTORIAL_TAG if writer is torch_tb.SummaryWriter else TUTORIAL_TAG.replace(" ", "_")


def _flush(w: Any, logdir: Path, scalars: int) -> None:
    """``w.flush()``, then wait (30 s at most) until ``logdir``'s event file holds ``scalars`` scalars, as TensorBoard's
    own loader reads it: tensorboardX's flush writes out only what its writer thread has taken off its queue."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    w.flush()
    deadline = time.monotonic() + 30
    while True:
        (path,) = logdir.glob("events.out.tfevents.*")
        held = sum(len(e.summary.value) for e in EventFileLoader(str(path)).Load())
        if held >= scalars or time.monotonic() > deadline:
            assert held == scalars
            return
        time.sleep(0.01)
        w.flush()


def _write(logdir: Path, steps: range, shift: float = 0.0, writer: Any = None) -> None:
    w = (writer or torch_tb.SummaryWriter)(str(logdir))
    for s in steps:
        w.add_scalar("train/reward", 0.1 * s + shift, s)
        w.add_scalars("loss", {"train": 1 / (s + 1), "val": 2 / (s + 1)}, s)
        w.add_scalars(TUTORIAL_TAG, {"Training": s + shift, "Validation": -s}, s)
    w.close()


def test_each_curve_is_a_column_of_the_run_that_wrote_it(tmp_path: Path, writer: Any) -> None:
    _write(tmp_path / "vanilla", range(6), writer=writer)
    _write(tmp_path / "routeA", range(6), shift=0.5, writer=writer)
    f = read_once(tmp_path)
    stores = {s.arm: s for s in f.stores.values()}
    assert sorted(stores) == ["routeA", "vanilla"]  # not six more runs, one a curve directory
    for arm, shift in (("vanilla", 0.0), ("routeA", 0.5)):
        store = stores[arm]
        rows = rows_of(store)
        assert list(store.steps) == list(range(6))
        assert [r["loss/train"] for r in rows] == pytest.approx([1 / (s + 1) for s in range(6)])
        assert [r["loss/val"] for r in rows] == pytest.approx([2 / (s + 1) for s in range(6)])
        assert [r[f"{_tutorial(writer)}/Training"] for r in rows] == pytest.approx([s + shift for s in range(6)])
        assert [r[f"{_tutorial(writer)}/Validation"] for r in rows] == pytest.approx([-s for s in range(6)])
        assert "loss" not in store.keys and not store.bad and not store.resumes


def test_a_curve_of_a_split_is_headed_with_its_metric(tmp_path: Path, writer: Any,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``add_scalars("loss", {"train", "val"})``: the table heads the curves ``loss`` and ``loss/val``, not ``loss``
    and ``val`` (a validation of nothing it names)."""
    _write(tmp_path / "run", range(3), writer=writer)
    code, out, _ = run_cli(["tail", str(tmp_path / "run"), "-n", "1", "--width", "0"], capsys)
    header = out.splitlines()[0].split()
    assert code == 0
    assert "loss" in header and "loss/val" in header and "val" not in header, header


def test_a_resumed_run_keeps_each_curve_of_the_session_that_wrote_the_step(tmp_path: Path, writer: Any) -> None:
    """The second launch (another writer on the same directory, from step 3) writes new files beside the first's, in
    the run's directory and in each curve's: the steps it logged again hold its values, in every column."""
    run = tmp_path / "run"
    _write(run, range(6), writer=writer)
    time.sleep(1.1)  # (tensorboardX names a file by the second it was made in: a relaunch within it would replace it)
    _write(run, range(3, 9), shift=100.0, writer=writer)
    store = next(iter(read_once(tmp_path).stores.values()))
    rows = rows_of(store)
    assert list(store.steps) == list(range(9)) and store.resumes == [3]
    assert [r["train/reward"] for r in rows] == pytest.approx([0.1 * s + (100 if s >= 3 else 0) for s in range(9)])
    assert [r[f"{_tutorial(writer)}/Training"] for r in rows] == pytest.approx([s + (100 if s >= 3 else 0)
                                                                               for s in range(9)])


def test_a_curve_directory_named_on_its_own_is_a_run(tmp_path: Path) -> None:
    _write(tmp_path / "run", range(4))
    store = next(iter(read_once(tmp_path / "run" / "loss_train").stores.values()))
    assert [r["loss"] for r in rows_of(store)] == pytest.approx([1 / (s + 1) for s in range(4)])


def test_a_run_inside_a_run_that_is_no_curve_stays_a_run(tmp_path: Path) -> None:
    """``exp_2`` inside a run directory, its tag not the ``exp`` its name would take for add_scalars' main tag."""
    _write(tmp_path / "base", range(3))
    w = torch_tb.SummaryWriter(str(tmp_path / "base" / "exp_2"))
    for s in range(3):
        w.add_scalar("eval/acc", 0.5, s)
    w.close()
    arms = sorted(s.arm for s in read_once(tmp_path).stores.values())
    assert arms == ["base", "exp_2"]


def test_curves_that_appear_while_followed_join_their_run(tmp_path: Path, writer: Any) -> None:
    """A run followed before its first add_scalars: the curve directories it then makes where its writer makes them
    (their first file holding no scalar until the writer flushes) are read into the run as they fill, and are never
    runs of their own."""
    run = tmp_path / "run"
    w = writer(str(run), max_queue=1000, flush_secs=10_000)
    for s in range(3):
        w.add_scalar("train/reward", s, s)
    _flush(w, run, 3)
    f = Follower([tmp_path])
    f.scan()
    made = [run / "loss_train"] if writer is torch_tb.SummaryWriter else [run / "loss", run / "loss" / "train"]
    curve = writer(str(made[-1]), max_queue=1000, flush_secs=10_000)  # made, not written (add_scalars' own writer)
    f.on_events(set(made))
    f.scan()
    assert len(f.stores) == 1 and "loss/train" not in next(iter(f.stores.values())).keys
    for s in range(3, 6):
        w.add_scalar("train/reward", s, s)
        curve.add_scalar("loss", 1 / (s + 1), s)
    _flush(w, run, 6)
    _flush(curve, made[-1], 3)
    (event,) = made[-1].glob("events.out.tfevents.*")
    f.on_events({event})
    (store,) = f.stores.values()
    rows = rows_of(store)
    assert [r.get("loss/train", math.nan) for r in rows][3:] == pytest.approx([1 / (s + 1) for s in range(3, 6)])
    assert list(store.steps) == list(range(6))
    f.scan()  # a full discovery agrees
    assert len(f.stores) == 1
    w.close()
    curve.close()


def test_a_curve_is_named_as_add_scalars_names_its_directory(tmp_path: Path) -> None:
    """torch's ``<run>/<tag, / as _>_<curve>``, tensorboardX's ``<run>/<tag>/<curve>``, each below a directory with
    event files of its own; a directory named so below one without them is no curve."""
    run = tmp_path / "run"
    _write(run, range(1))
    assert curve_at(run / "loss_train", "loss") == Curve(run, "loss", "train")
    assert curve_at(run / "train_loss_a_b", "train/loss") == Curve(run, "train/loss", "a_b")
    assert curve_at(run / "train" / "loss" / "a", "train/loss") == Curve(run, "train/loss", "a")
    assert curve_at(run / "loss_", "loss") is None and curve_at(run / "lossy_train", "loss") is None
    assert curve_at(tmp_path / "loss_train", "loss") is None  # (tmp_path holds no event files)
    assert Curve(run, "train/loss", "val").column("train/loss") == "train/loss/val" and Curve(run).pending


def test_event_files_are_ordered_by_the_numbers_in_their_names() -> None:
    names = ["events.out.tfevents.1700000001.h.9.10", "events.out.tfevents.1700000001.h.9.2",
             "events.out.tfevents.1700000000.h.9.11"]
    assert sorted(names, key=event_order) == [names[2], names[1], names[0]]


def test_first_tag_waits_for_a_scalar(tmp_path: Path) -> None:
    w = torch_tb.SummaryWriter(str(tmp_path))
    w.flush()
    (event,) = tmp_path.glob("events.out.tfevents.*")
    assert first_tag(event) is None  # the file_version event alone
    w.add_scalar("a/b", 1.0, 0)
    w.flush()
    assert first_tag(event) == "a/b"
    w.close()
    assert first_tag(tmp_path / "gone") is None


def test_a_curve_made_within_the_clock_tick_of_the_last_look_is_found(tmp_path: Path) -> None:
    """A directory's time moves in clock ticks (milliseconds): a curve made in the tick the run's directory was last
    looked at leaves it the time it had. The next look lists it again all the same (its time is recent)."""
    run = tmp_path / "run"
    w = torch_tb.SummaryWriter(str(run))
    for s in range(3):
        w.add_scalar("train/reward", s, s)
    w.close()
    f = Follower([tmp_path])
    f.scan()
    st = os.stat(run)
    w = torch_tb.SummaryWriter(str(run / "loss_train"))
    w.add_scalar("loss", 0.5, 2)
    w.close()
    os.utime(run, ns=(st.st_atime_ns, st.st_mtime_ns))  # (as if made within that tick)
    (event,) = (run / "loss_train").glob("events.out.tfevents.*")
    f.on_events({event})
    (store,) = f.stores.values()
    assert rows_of(store)[2].get("loss/train") == 0.5 and len(f.stores) == 1
