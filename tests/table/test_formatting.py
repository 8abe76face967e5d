"""steptable.table.formatting: a raw value and a column format give text of exactly the column's width; the
automatic format, number fitting and filling, fractions, hostile objects."""

from __future__ import annotations

import math
import struct
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steptable.table.formatting import (
    FILL_DIGITS,
    auto_filled,
    display_width,
    fill_digits,
    fill_number,
    fit_number,
    fmt_auto,
    format_cell,
    format_value,
    to_float,
    unique_name,
)
from steptable.table.notation import choose


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0.41234, ".412"),
        (-0.41234, "-.412"),
        (0.0412, ".0412"),
        (12.345, "12.3"),
        (123.45, "123"),
        (1234.5, "1234"),
        (3.0, "3"),
        (0.00031, ".00031"),
        (0.000123456, ".000123"),
        (3.1e-5, "3.1e-5"),
        (123456.7, "123457"),
        (999999.7, "1e6"),
        (123456789.0, "1.23e8"),
        (-2.5e-7, "-2.5e-7"),
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        # rounding carries into the next decade: the digit count holds, no exponent, no stray point
        (9.9996, "10"),
        (99.96, "100"),
        (-99.96, "-100"),
        (0.09996, ".1"),
        (-0.0009996, "-.001"),
        (1e-4, ".0001"),
        (9.9999e-5, ".0001"),  # (rounded to 3 digits it is 1e-4: positional, as .09996 is .1)
        (9.994e-5, "9.99e-5"),
        (math.nan, "NaN"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
    ],
)
def test_fmt_auto(x: float, expected: str) -> None:
    assert fmt_auto(x) == expected


@pytest.mark.parametrize(
    ("value", "fmt", "width", "expected"),
    [
        (None, None, 5, ""),  # not logged: blank, never read as a NaN
        (math.nan, "+.2f", 6, "NaN"),
        ("nan", ".2f", 6, "NaN"),
        ("NaN", None, 6, "NaN"),
        (math.inf, ".2f", 6, "inf"),
        (-math.inf, None, 6, "-inf"),
        ("-Infinity", None, 6, "-inf"),
        ((3, 8), "frac", 6, "3/8"),
        ([3, 8], "frac", 6, "3/8"),
        ([1234, 5678], "frac", 6, ".217"),  # too wide as n/d: the ratio instead
        ((True, 1), "frac", 6, "1/1"),  # a bool counts as one
        ((3.0, 8), "frac", 6, "3/8"),
        (("3", 8), "frac", 6, "NaN"),  # text is not a count
        ((object(), 8), "frac", 6, "NaN"),
        ((None, 8), "frac", 6, "NaN"),
        (True, None, 3, "T"),
        (False, "d", 3, "0"),  # an explicit numeric spec formats a bool as format() does
        (True, "+.2f", 6, "+1.00"),
        (7, "d", 4, "7"),
        (7.0, "d", 4, "7"),
        (7.5, "d", 4, "7.5"),
        (0.25, "+.2f", 6, "+0.25"),
        (1234.5, ".1e", 7, "1.2e3"),
        (3e-6, ".1e", 7, "3.0e-6"),
        (0.0004, ".2f", 6, ".0004"),  # a fixed spec would print 0.00: show the magnitude
        (-123456.7, "+.2f", 7, "-123457"),
        (-123456.7, "+.2f", 6, "-1.2e5"),
        ("hold", None, 6, "hold"),
        (b"ok\x1b[2J", None, 6, "ok"),  # bytes read as text, escapes removed
        ("throttle-hard", None, 6, "throt…"),
        (10**400, "d", 5, "#####"),
        (1e100, None, 4, "1e99"[:0] + "####"),
    ],
)
def test_format_value(value: object, fmt: str | None, width: int, expected: str) -> None:
    assert format_value(value, fmt, width) == expected


@pytest.mark.parametrize(
    ("value", "fmt", "width", "expected"),
    [
        (6e-5, ".1%", 6, " .006%"),  # rounded to zero by the spec: the magnitude, still in percent
        (12345.6, ".1%", 6, "1.2e6%"),  # too wide: shorter, still in percent
        (-5e-9, ".0%", 5, "  -0%"),  # no form of the magnitude fits: the spec's own rounding
        (0.5, ".1%", 6, " 50.0%"),
    ],
)
def test_percent_spec_degrades_in_percent(value: float, fmt: str, width: int, expected: str) -> None:
    assert format_cell(value, fmt, width) == expected


def test_float_subclass_formats_by_value() -> None:
    class Shouty(float):
        def __format__(self, spec: str) -> str:
            return "LOUD"

    assert format_cell(Shouty(1.5), ".2f", 6) == "  1.50"


def test_hostile_objects_never_raise() -> None:
    class Bad:
        def __format__(self, spec: str) -> str:
            raise RuntimeError("boom")

        def __float__(self) -> float:
            raise RuntimeError("boom")

        def __str__(self) -> str:
            raise RuntimeError("boom")

    assert display_width(format_cell(Bad(), ".2f", 5)) == 5


def test_to_float() -> None:
    assert to_float((1, 4)) == 0.25
    assert math.isnan(to_float((1, 0)))
    assert to_float(True) == 1.0
    assert math.isnan(to_float("hold"))
    assert to_float("-inf") == -math.inf
    assert to_float(10**400) == math.inf and to_float(-(10**400)) == -math.inf  # JSON allows any digits: no raise


values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.none(),
    st.booleans(),
    st.text(max_size=40),
    st.tuples(st.integers(-(10**9), 10**9), st.integers(-(10**9), 10**9)),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "\x1b[2J", "日本語", "\u202e", "e\u0301\u0301"]),
)
fmts = st.sampled_from([None, "frac", "d", "+.2f", ".2f", ".1e", ".3g", "+.4f", ",d"])


@settings(max_examples=600, deadline=None)
@given(value=values, fmt=fmts, width=st.integers(min_value=1, max_value=12))
def test_every_cell_has_exactly_its_width(value: object, fmt: str | None, width: int) -> None:
    for align in ("right", "left", "center"):
        cell = format_cell(value, fmt, width, align)
        assert display_width(cell) == width, (value, fmt, width, cell)
        assert "\x1b" not in cell


@settings(max_examples=300, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False), width=st.integers(min_value=4, max_value=10))
def test_fit_number_is_honest(x: float, width: int) -> None:
    s = fit_number(x, width)
    assert len(s) <= width
    if "#" not in s:
        # the text read back is the number to the precision shown (at least 1 significant digit)
        back = Decimal(s)
        exact = Decimal(x)
        assert (back < 0) == (exact < 0) or back == 0
        assert abs(back - exact) <= abs(exact) * Decimal("0.5")


@pytest.mark.parametrize(
    ("x", "width", "expected"),
    [
        (0.34016, 3, ".34"),  # no room: fit_number's text
        (0.34016, 4, ".340"),  # the third significant digit is a zero, and it is shown
        (0.34016, 5, ".340"),  # the width is a maximum, not a target: never a fourth digit
        (0.34016, 6, ".340"),
        (0.65733, 8, ".657"),
        (-0.073276, 7, "-.0733"),
        (0.0029804, 7, ".00298"),
        (1.003, 4, "1.00"),
        (1 / 3, 6, ".333"),
        (9.99996, 6, "10.0"),  # rounds into the next decade without gaining a digit
        (9.99999999, 6, "10"),  # as good as 10: no zeros it does not have
        (99.996, 5, "100"),
        (0.09996, 6, ".100"),
        (0.09996, 3, ".1"),
        # a value shown exactly keeps its own digits, at most 3 of them
        (0.5, 6, ".5"),
        (71.46, 6, "71.5"),
        (0.1 + 0.2, 6, ".3"),
        (0.10000000149011612, 6, ".1"),  # float32 0.1
        (-0.0733, 7, "-.0733"),
        # integers, three-digit magnitudes and exponents: a decimal point would cost a cell and a token
        (3.0, 6, "3"),
        (123.4, 6, "123"),
        (5e-5, 8, "5e-5"),
        (123456789.0, 9, "1.23e8"),
        (math.nan, 6, "NaN"),
        (-math.inf, 6, "-inf"),
    ],
)
def test_fill_number(x: float, width: int, expected: str) -> None:
    assert fill_number(x, width) == expected


def test_automatic_format_shows_3_digits_whatever_the_width() -> None:
    assert format_cell(0.34016, None, 6) == "  .340"  # the width is a maximum, not a target
    assert format_cell(0.37012345, None, 12) == "        .370"
    assert format_cell(-0.0023946, None, 9) == "  -.00239"
    assert format_value(0.34016, None, 6, fill=False) == ".34"
    assert format_cell(0.34016, ".2f", 6) == "  0.34"  # an explicit spec is the user's precision
    assert format_cell(7, None, 6) == "     7"  # and an int is an int


@settings(max_examples=400, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False), width=st.integers(min_value=1, max_value=12))
def test_fill_number_is_at_least_as_precise_as_fit_number(x: float, width: int) -> None:
    fitted, filled = fit_number(x, width), fill_number(x, width)
    assert len(fitted) <= len(filled) <= width
    if "#" in fitted or "e" in fitted:
        assert filled == fitted
        return
    error = abs(Decimal(filled) - Decimal(x))
    assert error <= abs(Decimal(fitted) - Decimal(x))
    digits = filled.lstrip("-").replace(".", "").lstrip("0")
    assert len(digits) <= max(FILL_DIGITS, len(str(round(abs(x)))))  # never more than 3 (an integer's own aside)
    if filled != fitted:  # only the trailing zeros of the same 3 significant digits
        assert FILL_DIGITS == 3 and len(digits) == 3 and Decimal(filled) == Decimal(fmt_auto(x, 3))


def test_numpy_scalars_format_like_python_numbers() -> None:
    np = pytest.importorskip("numpy")
    assert format_cell((np.int64(3), np.int32(32)), "frac", 6) == "  3/32"
    assert format_cell(np.float32(0.25), "+.2f", 6) == format_cell(0.25, "+.2f", 6)
    assert format_cell(np.int64(7), "d", 4) == "   7"
    assert format_cell(np.float64("nan"), None, 4) == " NaN"


def test_only_pairs_of_numbers_read_as_fractions() -> None:
    """The automatic format shows ``n/d`` for a pair of real numbers; any other two-element list is text (it used
    to read nan), and an explicit "frac" column still shows nan for a pair it cannot divide."""
    assert format_value([3, 32], None, 8) == "3/32" and format_value((1.5, 2), None, 8) == "1.5/2"
    assert format_value(["train", "eval"], None, 20) == "['train', 'eval']"
    assert format_value([0.5, "x"], None, 20) == "[0.5, 'x']"
    assert format_value([[1, 2], [3]], None, 20) == "[[1, 2], [3]]"
    assert format_value([None, 3], None, 20) == "[None, 3]"
    assert format_value(["a", "b"], "frac", 8) == "NaN"


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


def _float32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


@pytest.mark.parametrize("x", [1e-4, 1e-3, 0.1, 5e-5, 3e-4, 999999.0, 2e-5])
def test_a_float32_copy_of_a_value_is_written_as_the_float64_one(x: float) -> None:
    """TensorBoard keeps scalars as float32 (1e-4 is stored as 9.9999997e-05), W&B and JSONL as float64: one
    training's lr read from both must read the same at 3 significant digits, on both sides of the positional band."""
    y = _float32(x)
    assert y != x or x == 999999.0
    assert fmt_auto(y) == fmt_auto(x)
    assert [fit_number(y, w) for w in range(4, 9)] == [fit_number(x, w) for w in range(4, 9)]
    for width in range(4, 9):
        nx, ny = choose(x, width, scaled=True), choose(y, width, scaled=True)
        assert nx is not None and ny is not None and ny.text(y) == nx.text(x)


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
    # a fraction with a non-finite side has no finite value: the cell says NaN
    assert format_value(pair, "frac", 8) == "NaN"


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


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-10**15, 10**15)))
def test_a_value_whose_form_fits_a_width_has_one_in_every_wider_one(x: float) -> None:
    # (a layout measures a value's form once, at the widest, and looks again only at those wider than a column)
    natural = display_width(format_value(x, None, 12, fill=False))
    for width in range(max(natural, 1), 13):
        assert "#" not in format_value(x, None, width, fill=False)


_AUTO_EDGES = [0.0, -0.0, math.nan, math.inf, -math.inf, 1e-4, -1e-4, 9.9996e-5, 9.9996, 99.96, 99.9996, 100.0, 0.5,
               0.1, 0.1 + 0.2, 71.5, 0.34016, -0.34016, 5e-5, 0.00099996, 12.0, -3.0, 1e300, 5e-324]


@settings(max_examples=3000, deadline=None)
@given(x=st.one_of(st.floats(), st.sampled_from(_AUTO_EDGES),
                   st.builds(round, st.floats(-1000, 1000), st.integers(0, 5))), width=st.integers(1, 12))
def test_auto_filled_is_the_automatic_format_filled(x: float, width: int) -> None:
    """The compiled row's one-format shortcut gives what the automatic format and its filling give."""
    assert auto_filled(x, width) == fill_digits(x, fmt_auto(x), width)
