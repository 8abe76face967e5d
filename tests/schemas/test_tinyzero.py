"""steptable.schemas.tinyzero: TinyZero's console log (golden); a verl console log is verl's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from steptable.schemafiles.resolve import detect
from tests.schemas.helpers import check_layout
from tests.trainer_logs import write_tinyzero_console


def test_verl_console_log_is_verl_not_tinyzero() -> None:
    keys = ["step", "actor/pg_loss", "actor/entropy", "critic/score/mean", "perf/mfu/actor", "timing_s/gen"]
    assert detect(Path("runs/verl.log"), keys).name == "verl"


Golden = Callable[[str, str], None]


def test_tinyzero(tmp_path: Path, golden: Golden) -> None:
    text = check_layout(golden, "tinyzero", write_tinyzero_console(tmp_path / "train.log"), "tinyzero")
    assert "val/countdown" in text.splitlines()[0]
