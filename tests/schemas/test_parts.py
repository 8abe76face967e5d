"""steptable.schemas.parts: derived columns (a fraction from two keys; errors as nan) and side files (the step
of a record)."""

from __future__ import annotations

import pytest

from steptable.schemas import Derived, Schema, SideFile, layout, ratio_pair, side_file
from steptable.table import render
from steptable.table.columns import Col, ColumnError
from tests.schemas.helpers import Rows


def test_derived_fraction_column() -> None:
    schema = Schema(
        "s", (Col("step", 4, "step"), Col("ok", 6, "ok", "frac")),
        derived=(Derived("ok", ("good", "total"), ratio_pair("good", "total")),),
    )
    run = Rows([{"step": 0, "good": 3, "total": 8}, {"step": 1, "good": None, "total": 8}])
    cols = layout([run], schema)
    assert [c.key for c in cols] == ["step", "ok"]  # the inputs are consumed by the fraction
    assert render.table(cols, [schema.derive(r) for r in run.rows]).splitlines()[1:] == [
        "   0    3/8", "   1       "]  # an input not logged: the fraction is not logged either
    assert schema.column(run, "ok") == [(3, 8), None]
    assert [c.key for c in layout([run], schema, patterns=["good"])] == ["step", "good"]


def test_derived_errors_are_nan_and_need_a_declared_col() -> None:
    bad = Derived("r", ("a",), lambda row: 1 / row["a"])
    schema = Schema("s", (Col("r", 4, "r"),), derived=(bad,))
    assert "r" not in schema.derive({"a": 0})
    assert schema.derive({"a": 4})["r"] == 0.25
    with pytest.raises(ColumnError):
        Schema("s", (), derived=(bad,))


def test_side_file_step_from_records_and_no_side_for_metrics() -> None:
    _, gens = side_file("x/emergence/generations.jsonl") or (None, None)
    assert gens is not None and gens.step_of("x", {"step": 7, "prompt": "p"}) == 7
    assert side_file("logs/train/metrics.jsonl") is None
    assert side_file("exp/trainer_state.json") is None
    with pytest.raises(ValueError):
        SideFile("*.bin", "weights")
