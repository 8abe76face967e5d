"""steptable.table.columns: a column's declaration is checked field by field; the limits are inclusive, and
every bad field raises ColumnError naming it (a schema file beside the logs declares columns)."""

from __future__ import annotations

import pytest

from steptable.table import render
from steptable.table.columns import Col, ColumnError, validate

# the documented limits, written out: a test built from the constants would follow a changed constant
MAX_WIDTH = 1000
MAX_SPEC_NUMBER = 200


@pytest.mark.parametrize("width", [1, MAX_WIDTH])
def test_widths_at_the_limits_are_accepted(width: int) -> None:
    # a one-cell flag column ("!") is a real use; the widest allowed column must be allowed
    assert Col("flag", width, "!").width == width


@pytest.mark.parametrize("width", [0, MAX_WIDTH + 1])
def test_widths_past_the_limits_are_rejected(width: int) -> None:
    # past MAX_WIDTH a schema file would only cost memory
    with pytest.raises(ColumnError) as e:
        Col("flag", width, "!")
    assert e.value.field == "width"


@pytest.mark.parametrize("fmt", [f".{MAX_SPEC_NUMBER}f", f"{MAX_SPEC_NUMBER}d", f">{MAX_SPEC_NUMBER}.2f"])
def test_format_numbers_at_the_limit_are_accepted(fmt: str) -> None:
    assert Col("x", 5, "x", fmt).fmt == fmt


@pytest.mark.parametrize("fmt", [f".{MAX_SPEC_NUMBER + 1}f", f"{MAX_SPEC_NUMBER + 1}d", f">{MAX_SPEC_NUMBER + 1}.2f"])
def test_format_numbers_past_the_limit_are_rejected(fmt: str) -> None:
    # format(1.5, ">999999999") builds a gigabyte string: the limit is the defence
    with pytest.raises(ColumnError) as e:
        Col("x", 5, "x", fmt)
    assert e.value.field == "fmt"


@pytest.mark.parametrize("fmt", ["\x1b>", "\x1b>5", "\x07^", "中>"])
def test_fill_character_must_be_one_printable_cell_even_without_a_width(fmt: str) -> None:
    # an ESC fill reaches the terminal through every cell: a two-character spec is no exception
    with pytest.raises(ColumnError) as e:
        Col("x", 5, "x", fmt)
    assert e.value.field == "fmt"


@pytest.mark.parametrize("header", [3, None, b"x", ["x"]])
def test_header_that_is_not_text_is_a_column_error(header: object) -> None:
    # a TOML header = 3 must read as a schema error naming the field, not a crash inside sanitize
    with pytest.raises(ColumnError) as e:
        Col("x", 5, header)  # type: ignore[arg-type]
    assert e.value.field == "header"


def test_column_validation_errors() -> None:
    with pytest.raises(ColumnError, match="wider than its width"):
        Col("x", 3, "long")
    with pytest.raises(ColumnError, match="duplicate column key"):
        validate([Col("a", 4, "a"), Col("a", 4, "b")])
    with pytest.raises(ColumnError, match="share the header"):
        validate([Col("a", 4, "x"), Col("b", 4, "x")])
    with pytest.raises(ColumnError, match="bad format spec"):
        Col("x", 5, "x", fmt=".2q")
    with pytest.raises(ColumnError, match="better"):
        Col("x", 5, "x", better="up")  # type: ignore[arg-type]
    with pytest.raises(ColumnError, match="width"):
        Col("x", 0, "")
    with pytest.raises(ColumnError, match="wider"):
        Col("x", 3, "日本")  # 4 cells


@pytest.mark.parametrize("fmt", ["\x1b>10.2f", "\x07<8d", "\xad^9.1f", "\u754c>10.2f", "\u200b=10.1f"])
def test_a_fill_character_that_is_not_one_printable_cell_is_refused(fmt: str) -> None:
    """A steptable.toml (or a hand-edited run description) with fmt = "\\u001b>10.2f": every cell carried raw ESC
    characters to the terminal; a wide fill wiped the value out."""
    with pytest.raises(ColumnError, match="fill character must be one printable cell") as e:
        Col("loss", 10, "loss", fmt)
    assert "\x1b" not in str(e.value) and "\x07" not in str(e.value)
    assert render.row([Col("loss", 10, "loss", "*>10.2f")], {"loss": 0.5}) == "******0.50"  # a printable one is fine
