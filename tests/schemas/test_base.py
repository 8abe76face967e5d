"""steptable.schemas.base: a Schema's aliases fill a missing key; a schema without fills hands a row back as is."""

from __future__ import annotations

from steptable.schemas import GENERIC, Schema, layout
from steptable.table.columns import Col
from tests.schemas.helpers import Rows


def test_alias_fills_a_missing_key() -> None:
    schema = Schema("s", (Col("step", 4, "step"), Col("new", 5, "new", aliases=("old",))))
    legacy = Rows([{"step": 0, "old": 0.5}])
    assert [c.key for c in layout([legacy], schema)] == ["step", "new"]
    assert schema.derive({"old": 0.5}) == {"old": 0.5, "new": 0.5}
    assert schema.derive({"old": 0.5, "new": 0.7})["new"] == 0.7
    assert schema.column(legacy, "new") == [0.5]


def test_schema_without_fills_returns_the_row_itself() -> None:
    row = {"step": 1}
    assert GENERIC.derive(row) is row
