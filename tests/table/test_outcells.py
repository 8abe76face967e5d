"""steptable.table.outcells: CSV and JSON cells inert for a terminal and a spreadsheet."""

from __future__ import annotations

import pytest

from steptable.table.outcells import csv_text


@pytest.mark.parametrize(("text", "cell"), [
    ("=1+2", "'=1+2"), ("-2+3", "'-2+3"), ("-", "'-"), ("\r@x", "'@x"), ("  =1", "'  =1"),
    ("-0.5", "-0.5"), ("+inf", "+inf"), ("-1e-3", "-1e-3"), ("-nan", "-nan"), (" -2", " -2"), ("a-b", "a-b"),
])  # fmt: skip
def test_csv_text_quotes_what_a_spreadsheet_would_run(text: str, cell: str) -> None:
    assert csv_text(text) == cell


def test_csv_tells_a_key_not_logged_from_a_logged_nan() -> None:
    import math

    from steptable.table.outcells import csv_cell

    assert csv_cell(None) == ""  # not logged: blank
    assert csv_cell(math.nan) == "NaN"
    assert str(csv_cell(math.inf)) == "inf" and str(csv_cell(-math.inf)) == "-inf"
