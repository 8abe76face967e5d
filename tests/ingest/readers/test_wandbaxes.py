"""W&B runs whose ``define_metric`` calls declare step metrics are keyed by them (steptable.ingest.readers.wandbaxes):
a run's keys by one step metric under any name and glob, two step metrics in one run (an evaluation in the row of
the training step it was logged at), a run whose metrics are not all declared left on ``_step``. The runs are
written by wandb itself (offline); each is read with the walk in C (tried at every record, so that none is left to
the loop in Python by chance) and with the loop in Python alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.readers.wandbaxes import Axes
from tests.ingest import writers
from tests.ingest.readers.helpers import WANDB_READS, wandb_read_by
from tests.ingest.writers import only, read_once, rows_of, wandb_file

pytest.importorskip("wandb")


@pytest.fixture(autouse=True, params=WANDB_READS)
def _reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test with the walk in C (where it is built) and with the loop in Python alone."""
    wandb_read_by(request.param, monkeypatch, walk_every_record=True)


def _run(tmp_path_factory: pytest.TempPathFactory, name: str, code: str) -> Path:
    """The .wandb file of ``code`` run after ``run = wandb.init(...)`` and before ``run.finish()``."""
    root = tmp_path_factory.mktemp(name)
    body = "\n".join("    " + line for line in code.strip().splitlines())
    writers.run_writer(f"""
import wandb
run = wandb.init(project="p", name={name!r})
if True:
{body}
run.finish()
""", {"WANDB_DIR": str(root)})
    return wandb_file(root)


def _rows(path: Path) -> tuple[list[int], dict[int, dict[str, Any]], Any]:
    store = only(read_once(path))
    return list(store.steps), {s: r for s, r in zip(store.steps, rows_of(store), strict=True)}, store


@pytest.fixture(scope="module")
def one_axis(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every key by ``optim/step`` (a name no trainer uses), a validation score logged alone now and then."""
    return _run(tmp_path_factory, "one_axis", """
run.define_metric("optim/step")
run.define_metric("*", step_metric="optim/step")
for i in range(6):
    run.log({"optim/step": 4 * i, "loss": 1.0 / (i + 1)})
    if i % 2:
        run.log({"val/acc": i / 10})
""")


def test_keys_declared_against_a_step_metric_are_in_its_rows(one_axis: Path) -> None:
    steps, rows, store = _rows(one_axis)
    assert steps == [0, 4, 8, 12, 16, 20] and store.step_key == "optim/step"
    assert [rows[4 * i]["loss"] for i in range(6)] == pytest.approx([1.0 / (i + 1) for i in range(6)])
    assert {s: r["val/acc"] for s, r in rows.items() if "val/acc" in r} == pytest.approx({4: 0.1, 12: 0.3, 20: 0.5})
    assert not store.bad


@pytest.fixture(scope="module")
def two_axes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """train/* by train/step, eval/* by eval/step (a count of evaluations): an evaluation before training, then
    one every third step logged alone, and one in the same call as the last training step."""
    return _run(tmp_path_factory, "two_axes", """
run.define_metric("train/step")
run.define_metric("train/*", step_metric="train/step")
run.define_metric("eval/step")
run.define_metric("eval/*", step_metric="eval/step")
run.log({"eval/step": 0, "eval/loss": 2.0})
for i in range(1, 7):
    run.log({"train/step": 10 * i, "train/loss": 1.0 / i})
    if i % 3 == 0:
        run.log({"eval/step": i // 3, "eval/loss": 1.0 / i})
run.log({"train/step": 70, "train/loss": 0.1, "eval/step": 3, "eval/loss": 0.05})
""")


def test_an_evaluation_by_its_own_step_metric_is_in_the_row_of_the_training_step_it_followed(two_axes: Path) -> None:
    """The rows are the training's steps (its step metric was declared first); an evaluation keeps its own step as
    a column. The one before training is at the first position."""
    steps, rows, store = _rows(two_axes)
    assert steps == [0, 10, 20, 30, 40, 50, 60, 70] and store.step_key == "train/step"
    assert [rows[10 * i]["train/loss"] for i in range(1, 8)] == pytest.approx([1.0 / i for i in range(1, 7)] + [0.1])
    evals = {s: (r["eval/step"], r["eval/loss"]) for s, r in rows.items() if "eval/loss" in r}
    assert evals == {0: (0, 2.0), 30: (1, pytest.approx(1 / 3)), 60: (2, pytest.approx(1 / 6)), 70: (3, 0.05)}
    assert not store.bad


@pytest.fixture(scope="module")
def undeclared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """val/* by epoch; the loss, logged at every step with the epoch, declared against nothing."""
    return _run(tmp_path_factory, "undeclared", """
run.define_metric("val/*", step_metric="epoch")
for i in range(6):
    run.log({"loss": float(i), "epoch": i // 3})
    if i % 3 == 2:
        run.log({"val/loss": i / 10, "epoch": i // 3})
""")


def test_a_run_logging_a_metric_declared_against_no_step_metric_stays_on_wandbs_step(undeclared: Path) -> None:
    """Keyed by the epoch, the loss of three steps would share one row: it stays on W&B's count of log calls."""
    steps, rows, store = _rows(undeclared)
    assert store.step_key == "_step" and len(steps) == 8
    assert [r["loss"] for r in rows.values() if "loss" in r] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert not store.bad


def test_the_first_step_metric_declared_keys_the_rows_where_every_metric_has_one() -> None:
    axes = Axes()
    axes.note("train/step", "")
    axes.note("train/*", "train/step")
    axes.note("eval/*", "eval/step")
    axes.note("acc", "epoch")
    assert axes.step_metrics == ["train/step", "eval/step", "epoch"]
    assert axes.row_step({"eval/loss": 1.0, "eval/step": 0, "_step": 0, "_timestamp": 1.7e9}) == "train/step"
    assert axes.row_step({"acc": 0.5, "epoch": 1, "train/x/y": 2, "train/step": 3}) == "train/step"
    assert axes.row_step({"acc": 0.5, "accuracy": 0.5}) is None  # (a name is no glob)
    assert axes.row_step({"train": 1}) is None  # (nor a prefix without its glob's text)


def test_a_step_metric_logged_as_a_fraction_keys_nothing() -> None:
    axes = Axes()
    axes.note("*", "epoch")
    assert axes.row_step({"loss": 1.0, "epoch": 1}) == "epoch"
    assert axes.row_step({"loss": 1.0, "epoch": 0.25}) is None and axes.row_step({"epoch": 1.0}) is None


def test_no_step_metric_declared_keys_nothing() -> None:
    axes = Axes()
    axes.note("loss", "")
    axes.note("eval/*", "")
    assert axes.step_metrics == [] and axes.row_step(["loss"]) is None


@pytest.fixture(scope="module")
def declared_late(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three rows logged, then ``*`` declared against ``s`` (logged in every row), then three rows more."""
    return _run(tmp_path_factory, "declared_late", """
for i in range(3):
    run.log({"loss": float(i), "s": 10 * i})
run.define_metric("*", step_metric="s")
for i in range(3, 6):
    run.log({"loss": float(i), "s": 10 * i})
""")


def test_a_step_metric_declared_after_the_first_row_keys_nothing_read_at_once_or_as_written(
        declared_late: Path) -> None:
    """A follower that read the first rows before the declaration and a one-shot read of the whole file see one
    step: W&B's count of log calls."""
    from steptable.ingest.readers.wandb import WandbParser

    steps, rows, store = _rows(declared_late)
    assert store.step_key == "_step" and steps == [0, 1, 2, 3, 4, 5]
    assert [rows[s]["s"] for s in steps] == [0, 10, 20, 30, 40, 50]
    data, parser, at, followed = declared_late.read_bytes(), WandbParser("late"), 0, []
    for end in [*range(300, len(data), 300), len(data)]:
        n, parsed = parser.parse(memoryview(data)[at:end], at, final=end == len(data))
        at += n
        followed += list(parsed.steps)
    assert followed == steps


@pytest.fixture(scope="module")
def resumed_undeclared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run keyed by ``train/step`` (steps 0-40), resumed from its checkpoint at step 30 by a process that declares
    nothing (steps 30-70, W&B's count of log calls from 0 again, offline): the directory holding ``wandb/``."""
    root = tmp_path_factory.mktemp("resumed_undeclared")
    for lo, hi, declare in ((0, 5, True), (3, 8, False)):
        writers.run_writer(f"""
import wandb
run = wandb.init(project="p", name="resumed", id="resumed1", resume="allow")
if {declare}:
    run.define_metric("train/step")
    run.define_metric("train/*", step_metric="train/step")
for i in range({lo}, {hi}):
    run.log({{"train/step": 10 * i, "train/loss": i + {lo} / 100}})
run.finish()
""", {"WANDB_DIR": str(root)})
    assert len(list(root.glob("wandb/*run-*/run-*.wandb"))) == 2
    return root


def test_a_resumed_process_that_declares_nothing_is_keyed_as_the_run_before_it(resumed_undeclared: Path) -> None:
    """One run with one step: the resumed process's rows at their train/step, after the first process's rows up to
    the step it resumed at (keyed by its own _step, 0-4, they would take the place of all the first process's)."""
    store = only(read_once(resumed_undeclared))
    assert store.step_key == "train/step" and list(store.steps) == [0, 10, 20, 30, 40, 50, 60, 70]
    assert [r["train/loss"] for r in rows_of(store)] == pytest.approx([0, 1, 2, 3.03, 4.03, 5.03, 6.03, 7.03])
