"""StepLogger without a column set: its columns come from the first row."""

from __future__ import annotations

import json
from pathlib import Path

from steptable import StepLogger


def test_a_logger_without_columns_prints_the_first_rows_keys(tmp_path: Path) -> None:
    with StepLogger(run_dir=tmp_path, console=False) as lg:
        first = lg.log({"step": 0, "loss": 2.5, "reward": 0.25, "nested": {"kl": 0.01}})
        lg.log({"step": 1, "loss": 2.25, "reward": 0.5, "nested": {"kl": 0.02}, "late": 1.0})
    # "reward" over a 3-cell value is abbreviated (steptable.logger.consolecols)
    assert lg.header().split() == ["step", "loss", "rew", "kl"]
    assert first is not None and first.split() == ["0", "2.5", ".25", ".01"]
    info = json.loads((tmp_path / "steptable.json").read_text())
    assert [c["key"] for c in info["columns"]] == ["step", "loss", "reward", "nested/kl"]
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows[1]["late"] == 1.0  # a key first logged later: in the file, not a column


def test_a_first_row_that_cannot_be_walked_still_reaches_the_file(tmp_path: Path) -> None:
    class Odd(dict):  # type: ignore[type-arg]
        def items(self):  # type: ignore[no-untyped-def,override]
            raise RuntimeError("no items")

    with StepLogger(run_dir=tmp_path, console=False) as lg:
        lg.log({"step": 0, "loss": 1.0, "odd": Odd(a=1)})
    assert lg.cols and lg.cols[0].key == "step"
