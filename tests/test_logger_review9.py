"""StepLogger in real loops (ninth review): one-element tensors and arrays (an all-reduced loss), a rank that is known
only once the process group is made (torch.multiprocessing.spawn), a second Ctrl-C while close() marks the run
ended, and a JSONL deleted during the run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steptable import StepLogger
from tests.helpers import run_cli
from tests.logger.helpers import ARRAY_MAKERS, LOSS_COLS, jsonl_rows


@pytest.mark.parametrize("make", ARRAY_MAKERS)
def test_a_nan_in_a_one_element_loss_raises_the_alert_in_the_loop_and_in_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], captured: list[str],
    make: Callable[[float, tuple[int, ...]], Any],
) -> None:
    """[nan] was text to the alerts and a list in the file: a NaN loss raised no alert, here or in ``tail``."""
    with StepLogger(LOSS_COLS, run_dir=tmp_path, console=True) as sl:
        for step in range(12):
            sl.log({"step": step, "loss": make(float("nan") if step == 10 else 1.0 / (step + 1), (1,))})
    assert any(line.startswith("E ") and "loss non-finite (nan)" in line for line in captured)
    assert jsonl_rows(tmp_path)[10]["loss"] is None
    _, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert "step 10 loss non-finite (nan)" in out
