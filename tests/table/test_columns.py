"""Col without a width: fitted to the values as rows arrive, widening only."""

from __future__ import annotations

import pytest

from steptable.table.columns import FIT_MAX, Col, ColumnError, fit_to


def test_a_column_without_a_width_starts_at_its_header_and_takes_the_key_as_header() -> None:
    c = Col("loss")
    assert (c.width, c.header, c.fit) == (4, "loss", True)
    assert Col("acc", header="accuracy").width == 8
    assert Col("x", 5, "x").fit is False
    assert Col("loss").with_(width=9).fit is True  # (a widened copy is still fitted)
    with pytest.raises(ColumnError, match="width"):
        Col("x", 0, "x")  # a width given is still checked
    with pytest.raises(ColumnError, match="width"):
        Col("x", -1, "x")  # (a schema file's -1 is not "left out")


def test_fit_to_widens_only_and_only_fitted_columns() -> None:
    cols = (Col("step", 5, "step", "d"), Col("loss"), Col("acc", 3, "acc"))
    assert fit_to(cols, {"step": 1, "loss": 0.5, "acc": 0.5}) is None  # everything fits: no new layout
    wide = fit_to(cols, {"step": 1, "loss": -0.012345, "acc": 0.123456})
    assert wide is not None and [c.width for c in wide] == [5, 6, 3]  # -.0123: 3 significant digits, 6 cells
    assert fit_to(wide, {"loss": 0.5}) is None  # never narrower again
    text = fit_to(cols, {"loss": "x" * 100})
    assert text is not None and text[1].width == FIT_MAX  # a long text value: cut past FIT_MAX
