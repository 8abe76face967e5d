"""The Accelerate tracker, in a real Accelerator training loop on CPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.helpers import close_enough, info_of, rows_of

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip("accelerate")

from accelerate.state import PartialState  # noqa: E402

from steptable.integrations.accelerate import StepTableTracker  # noqa: E402


def train(accelerator: Any, steps: int = 12, break_at: int | None = None) -> list[tuple[int, dict[str, float]]]:
    """A linear regression; logs train loss each step and an eval loss every 4th, at that step. Returns the logs."""
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    model, opt = accelerator.prepare(model, opt)
    logged = []
    for step in range(steps):
        if step == break_at:
            raise OverflowError("grad blew up")
        x = torch.randn(8, 1)
        loss = torch.nn.functional.mse_loss(model(x), 2 * x + 1)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        logs = {"loss": loss.item(), "lr": 0.05}
        accelerator.log(logs, step=step)
        logged.append((step, logs))
        if step % 4 == 3:
            with torch.no_grad():
                ev = {"eval_loss": torch.nn.functional.mse_loss(model(x), 2 * x + 1).item()}
            accelerator.log(ev, step=step)
            logged.append((step, ev))
    return logged


def test_by_name_one_row_per_step_with_evals_merged(tmp_path: Path) -> None:
    acc = accelerate.Accelerator(log_with="steptable", project_dir=str(tmp_path), cpu=True)
    acc.init_trackers("run1", config={"lr": 0.05, "layers": 1})
    logged = train(acc)
    acc.end_training()
    run = tmp_path / "run1"
    rows = rows_of(run)
    want: dict[int, dict[str, float]] = {}
    for step, logs in logged:
        want.setdefault(step, {}).update(logs)
    assert [r["step"] for r in rows] == list(range(12))
    for r in rows:
        assert all(close_enough(r[k], v) for k, v in want[r["step"]].items())
    assert [r["step"] for r in rows if "eval_loss" in r] == [3, 7, 11]
    assert json.loads((run / "args.json").read_text()) == {"lr": 0.05, "layers": 1}
    info = info_of(run)
    assert info["closed"] is not None and "end" not in info


def test_an_instance_and_steps_left_out(tmp_path: Path) -> None:
    tracker = StepTableTracker("run2", tmp_path, arm="b")
    acc = accelerate.Accelerator(log_with=[tracker], cpu=True)
    acc.init_trackers("ignored")
    for v in (3.0, 2.0, 1.0):
        acc.log({"loss": v})
    acc.end_training()
    rows = rows_of(tmp_path / "run2")
    assert [(r["step"], r["loss"], r["arm"]) for r in rows] == [(0, 3.0, "b"), (1, 2.0, "b"), (2, 1.0, "b")]


def test_a_process_that_is_not_main_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    acc = accelerate.Accelerator(log_with="steptable", project_dir=str(tmp_path), cpu=True)
    # what process 1 of a two-process launch sees
    monkeypatch.setattr(PartialState, "is_main_process", property(lambda self: False))
    monkeypatch.setattr(PartialState, "use_distributed", property(lambda self: True))
    acc.init_trackers("run3", config={"lr": 0.1})
    train(acc, steps=4)
    acc.end_training()
    assert not (tmp_path / "run3").exists()


def test_a_loop_that_raises_is_marked_ended_with_its_error(tmp_path: Path) -> None:
    acc = accelerate.Accelerator(log_with="steptable", project_dir=str(tmp_path), cpu=True)
    acc.init_trackers("run4")
    with pytest.raises(OverflowError) as caught:
        train(acc, break_at=6)
    sys.excepthook(caught.type, caught.value, caught.tb)  # what the interpreter does with it, uncaught
    assert [r["step"] for r in rows_of(tmp_path / "run4")] == list(range(6))
    assert info_of(tmp_path / "run4")["end"] == "OverflowError"


def test_a_loop_that_raises_through_end_training_in_a_finally_is_marked_ended_with_its_error(tmp_path: Path) -> None:
    """``try: train() finally: acc.end_training()``: the tracker's finish runs while the error passes through, and
    the run ends with its name (it read as a run that ended well)."""
    acc = accelerate.Accelerator(log_with="steptable", project_dir=str(tmp_path), cpu=True)
    acc.init_trackers("run5")
    with pytest.raises(OverflowError):
        try:
            train(acc, break_at=6)
        finally:
            acc.end_training()
    assert [r["step"] for r in rows_of(tmp_path / "run5")] == list(range(6))
    assert info_of(tmp_path / "run5")["end"] == "OverflowError"
