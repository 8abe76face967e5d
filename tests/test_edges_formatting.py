"""Edges of the number formats that a user sees in a cell (mutation testing found them unpinned)."""

from __future__ import annotations

import math

import pytest

from steptable.table.formatting import fit_number, fmt_auto, format_value, to_float, unique_name


class _Hostile:
    """A logged object whose every conversion raises: the row must still print."""

    def __float__(self) -> float:
        raise RuntimeError("no float")

    def __str__(self) -> str:
        raise RuntimeError("no str")


def test_positional_form_stops_below_a_million() -> None:
    # 999999.5 rounds to 7 digits: past the positional range, so the exponent is the shorter honest form
    assert fmt_auto(999999.5) == "1e6"
    assert fit_number(999999.5, 7) == "1e6"


@pytest.mark.parametrize(
    ("value", "fmt", "width", "expected"),
    [
        (1234.0, ",d", 5, "1,234"),  # an integral float under a "d" spec is formatted by the spec when it fits
        (1234567.0, "d", 5, "1.2e6"),  # ... and shows its magnitude, not a cut "1234…", when it does not
    ],
)
def test_integral_float_under_d_spec(value: float, fmt: str, width: int, expected: str) -> None:
    assert format_value(value, fmt, width) == expected


@pytest.mark.parametrize(
    ("value", "fmt", "width", "expected"),
    [
        (0.03, ".1%", 2, "3%"),  # too narrow for "3.0%": the magnitude, still as a percent
        (0.5, ".0%", 1, "#"),  # no room for any percent: '#' marks, never a bare "%"
    ],
)
def test_percent_spec_in_a_narrow_column(value: float, fmt: str, width: int, expected: str) -> None:
    assert format_value(value, fmt, width) == expected


@pytest.mark.parametrize("pair", [(math.nan, 4), (4, math.nan), (math.nan, math.nan)])
def test_frac_with_a_nan_side_is_nan(pair: tuple[float, float]) -> None:
    # a fraction with a missing side has no value: the cell says nan, like any other missing number
    assert format_value(pair, "frac", 8) == "nan"


def test_frac_over_zero_that_does_not_fit_is_marked() -> None:
    # "123456/0" needs 8 cells and n/0 has no ratio to show instead: '#' marks, not an error text
    assert format_value((123456, 0), "frac", 5) == "#####"


def test_frac_that_does_not_fit_shows_its_ratio() -> None:
    # a negative denominator is an ordinary ratio, not the n/0 case
    assert format_value((123456, -1), "frac", 5) == "-1e5"


def test_int_past_float_range_is_marked_not_an_error() -> None:
    # JSON allows any number of digits; str() of a 5001-digit int raises in Python, the cell must not say "err"
    assert format_value(10**5000, None, 5) == "#####"
    assert format_value(10**5000, "d", 5) == "#####"


def test_thousand_bit_int_in_a_wide_column_is_exact() -> None:
    # the big-int guard starts past 1000 bits: up to it an int that fits its column is shown digit for digit
    value = 2**1000 - 1
    assert format_value(value, None, 302) == str(value)


def test_hostile_value_in_a_three_cell_column() -> None:
    # "err" fits three cells; only a narrower column gets the one-cell "?"
    assert format_value(_Hostile(), None, 3) == "err"
    assert format_value(_Hostile(), None, 2) == "?"


def test_to_float_of_none_is_nan() -> None:
    # a missing value is nan for stats and sorting, never None (which would break arithmetic)
    x = to_float(None)
    assert isinstance(x, float) and math.isnan(x)


def test_unique_name_skips_every_taken_suffix() -> None:
    # two keys that read alike stay two names: past "loss~2" the next free one is "loss~3"
    assert unique_name("loss", {"loss", "loss~2"}) == "loss~3"
    assert unique_name("loss", {"loss", "loss~2", "loss~3"}) == "loss~4"
