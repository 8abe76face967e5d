"""steptable.schemas.retrain: retrain's metrics and emergence files laid out by one schema (golden),
surprisal columns first, generations a side file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from steptable.schemafiles.resolve import detect, get_schema
from steptable.schemas import layout, side_file
from tests.schemas.helpers import Rows, check_layout, read_one
from tests.trainer_logs import write_retrain


def test_retrain_entropy_mirrors_and_surprisal_first() -> None:
    schema = get_schema("retrain")
    row = {"step": 3, "exec_surprisal_mean": 1.5, "exec_entropy_mean": 1.5, "plan_entropy_mean": 2.0}
    cols = layout([Rows([row])], schema)
    keys = [c.key for c in cols]
    assert "exec_surprisal_mean" in keys and "plan_surprisal_mean" in keys
    assert not any("_entropy_" in k for k in keys)
    assert schema.derive(row)["plan_surprisal_mean"] == 2.0


def test_generations_are_a_side_file_and_legacy_retrain_detected(tmp_path: Path) -> None:
    out = write_retrain(tmp_path, steps=4, legacy_entropy=True)
    found = side_file(out["generations"])
    assert found is not None and found[0].name == "retrain" and found[1].kind == "generations"
    assert detect(out["metrics"], read_one(out["metrics"]).keys).name == "retrain"


Golden = Callable[[str, str], None]


def test_retrain(tmp_path: Path, golden: Golden) -> None:
    out = write_retrain(tmp_path)
    text = check_layout(golden, "retrain", out["metrics"], "retrain")
    assert "ex_surp" in text.splitlines()[0] and "_entropy_" not in text.splitlines()[0]
    text = check_layout(golden, "retrain_emergence", out["steps"], "retrain")
    assert "corr_n" in text and "/16" in text
