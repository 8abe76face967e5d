"""steptable.logger.rowrecord: a row's values read once, and the JSONL record they make."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from steptable.logger.rowrecord import read_row, record_of

NS = 1_700_000_000_123_456_789


class _Reads:
    """A 0-d value that counts how often it is read (a device tensor's sync)."""

    ndim = 0

    def __init__(self, value: float) -> None:
        self.value, self.reads = value, 0

    def item(self) -> float:
        self.reads += 1
        return self.value


def test_a_row_of_plain_numbers_is_copied_as_it_is() -> None:
    raw: dict[str, Any] = {"step": 3, "loss": 0.5}
    cells, numbers = read_row(raw)
    assert numbers and cells == raw and cells is not raw
    raw["loss"] = 9.0  # the loop updates its dict later: the row keeps this step's value
    assert cells["loss"] == 0.5


def test_any_other_value_is_read_once_and_the_row_is_not_plain_numbers() -> None:
    t = _Reads(0.25)
    cells, numbers = read_row({"step": 1, "x": t, "note": "ok"})
    assert not numbers and cells["x"] == 0.25 and t.reads == 1
    _, numbers = read_row({"step": 1, "gone": None})
    assert not numbers


def test_the_record_starts_with_step_arm_and_our_clock_then_the_rows_keys_without_none() -> None:
    cells, numbers = read_row({"loss": 0.5, "kl": None, "note": "a"})
    record = record_of(cells, 7, "routeA", NS, numbers, "t-order")
    assert list(record) == ["step", "arm", "ts", "loss", "note"]
    assert record["step"] == 7 and record["arm"] == "routeA" and record["ts"] == 1_700_000_000.123


def test_the_callers_own_step_time_and_arm_win(capsys: pytest.CaptureFixture[str]) -> None:
    cells, numbers = read_row({"step": 2, "ts": 12.5, "arm": "absorb", "loss": math.nan})
    record = record_of(cells, 2, "routeA", NS, numbers, "t-own")
    assert record["ts"] == 12.5 and record["arm"] == "absorb" and math.isnan(record["loss"])
    record_of(cells, 3, "routeA", NS, numbers, "t-own")
    err = capsys.readouterr().err
    assert err.count("is filed as its arm") == 1 and "'absorb'" in err and "'routeA'" in err


def test_a_rows_arm_equal_to_the_loggers_is_not_reported(capsys: pytest.CaptureFixture[str]) -> None:
    cells, numbers = read_row({"arm": "routeA", "loss": 0.1})
    assert record_of(cells, 0, "routeA", NS, numbers, "t-same")["arm"] == "routeA"
    assert capsys.readouterr().err == ""


def test_a_step_that_is_not_whole_is_recorded_as_given_and_said_once(capsys: pytest.CaptureFixture[str]) -> None:
    cells, numbers = read_row({"loss": 0.1})
    assert record_of(cells, 0.25, None, NS, numbers, "t-step")["step"] == 0.25
    assert record_of(cells, 0.5, None, NS, numbers, "t-step")["step"] == 0.5
    assert record_of(cells, 3.0, None, NS, numbers, "t-step-whole")["step"] == 3.0
    err = capsys.readouterr().err
    assert err.count("not a whole number") == 1 and "0.25" in err


def test_an_arm_whose_text_holds_control_sequences_is_reported_inert(capsys: pytest.CaptureFixture[str]) -> None:
    cells, numbers = read_row({"arm": "\x1b[2Jevil"})
    record_of(cells, 0, "routeA", NS, numbers, "t-inert")
    assert "\x1b" not in capsys.readouterr().err


def test_a_row_of_device_tensors_is_read_with_one_host_transfer(monkeypatch: pytest.MonkeyPatch) -> None:
    """read_row of a GRPO loop's row of 0-d tensors: one transfer for them all (CPU tensors read as a device's:
    READ_EACH emptied), counted by the diagnostics tests' dispatch-mode recorder."""
    torch = pytest.importorskip("torch")
    from steptable.table import rowvalues
    from tests.diagnostics.test_host_syncs import HostSyncRecorder

    monkeypatch.setattr(rowvalues, "READ_EACH", frozenset(), raising=False)
    raw = {"step": 5, "loss": torch.tensor(0.5), "kl": torch.tensor(0.25), "n": torch.tensor(2**53 + 1)}
    with HostSyncRecorder() as rec:
        cells, numbers = read_row(raw)
    assert [name for _, name in rec.host_bound] == ["_to_copy"]
    assert cells == {"step": 5, "loss": 0.5, "kl": 0.25, "n": 2**53 + 1} and not numbers


def test_logging_a_row_of_device_tensors_costs_one_host_transfer_in_all(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, captured: list[str]) -> None:
    """StepLogger.log of a row of tensors, some in a nested mapping, the printed row, the JSONL, the alerts and the
    close after it: one transfer in all (the row read once, at log time), and the file holds the values read."""
    torch = pytest.importorskip("torch")
    from steptable import StepLogger
    from steptable.table import rowvalues
    from tests.diagnostics.test_host_syncs import HostSyncRecorder

    monkeypatch.setattr(rowvalues, "READ_EACH", frozenset(), raising=False)
    row = {"loss": torch.tensor(0.5), "kl": torch.tensor(0.25), "entropy": torch.tensor(1.5, dtype=torch.bfloat16),
           "tokens": torch.tensor(4096)}
    train = {"reward": torch.tensor(0.75), "acc": torch.tensor([3, 16])}
    with HostSyncRecorder() as rec, StepLogger(run_dir=tmp_path / "run") as sl:
        sl.log({"step": 0, **row, "train": train})
    assert [name for _, name in rec.host_bound] == ["_to_copy"]
    (line,) = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert {k: v for k, v in json.loads(line).items() if k in row or k == "train"} == {
        "loss": 0.5, "kl": 0.25, "entropy": 1.5, "tokens": 4096, "train": {"reward": 0.75, "acc": [3, 16]}}
    assert "I    0   .5 .25 1.5 4096 .75  3/16\n" in captured  # (the printed row: the same values)
