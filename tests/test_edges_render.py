"""Edges of the row renderer: the whole-row fast path must give the per-cell text for odd values, the empty and
one-column sets, and a run's title that keeps the tail of its path."""

from __future__ import annotations

from typing import Any

import pytest

from steptable.table import render
from steptable.table.columns import Col


def per_cell(cols: list[Col], values: dict[str, Any]) -> str:
    """The reference text of a row: every cell through format_cell (what the fast paths must reproduce)."""
    return render.SEP.join(render.cells(cols, values))


def test_frac_of_numbers_that_are_not_ints_reads_as_the_fraction() -> None:
    # a trainer that logs (1.0, 4) or (True, 4) means 1 of 4; the fast path must not print "1.0/4" or "True/4"
    cols = [Col("edge_frac_a", 6, "fa", "frac"), Col("edge_frac_b", 6, "fb", "frac")]
    assert render.row(cols, {"edge_frac_a": (1.0, 4), "edge_frac_b": (True, 4)}) == "   1/4    1/4"


@pytest.mark.parametrize("value", [(1, 2, 3), [1, 2, 3], (7,)])
def test_frac_cell_that_is_not_a_pair_is_not_shown_as_one(value: Any) -> None:
    # (1, 2, 3) is not "1/2": dropping an element would show a number the run never logged
    cols = [Col("edge_frac_c", 6, "fc", "frac"), Col("edge_frac_d", 6, "fd", "frac")]
    values = {"edge_frac_c": value, "edge_frac_d": (3, 4)}
    assert render.row(cols, values) == per_cell(cols, values)
    assert not render.row(cols, values).lstrip().startswith("1/2")


def test_fraction_texts_remembered_stay_bounded() -> None:
    # a run of distinct fractions (a growing denominator, say) must not grow the renderer's memory without limit
    memo: dict[Any, str] = {}
    for n in range(2 * render._MEMO_SIZE + 5):
        assert render._frac_new(memo, (n, 7)) == f"{n}/7"
    assert 0 < len(memo) <= render._MEMO_SIZE


def test_no_columns_renders_empty_lines() -> None:
    # a column selection that matched nothing prints an empty table, not a crash
    assert render.width([]) == 0
    assert render.row([], {"loss": 1.0}) == ""
    assert render.table([], [{}, {"loss": 1.0}]) == "\n\n"


@pytest.mark.parametrize("fmt", ["d", "+d", ".2f", "+.1e"])
@pytest.mark.parametrize("value", [(7,), [7], ((7,),)])
def test_one_column_with_a_one_element_sequence_shows_the_sequence(fmt: str, value: Any) -> None:
    # a lone column (``--cols step``) takes the same text as any other set: [7] is not the number 7
    cols = [Col("edge_one", 8, "one", fmt)]
    assert render.row(cols, {"edge_one": value}) == per_cell(cols, {"edge_one": value})
    assert render.row(cols, {"edge_one": value}).strip() != "7"


def test_exponent_column_with_a_one_element_tuple_shows_the_tuple() -> None:
    # '%.1e' % (3e-4,) unpacks the tuple: the whole-row path printed 3.0e-4 where every other view shows [0.0003]
    cols = [Col("edge_lr", 8, "lr", ".1e"), Col("edge_x", 6, "x", ".2f")]
    values = {"edge_lr": (3e-4,), "edge_x": 1.0}
    assert render.row(cols, values) == per_cell(cols, values)
    assert "3.0e-4" not in render.row(cols, values)


@pytest.mark.parametrize("widths", [[], [5], [1], [5, 3], [4, 1, 9]])
def test_width_is_the_header_width(widths: list[int]) -> None:
    # the app lays out its frozen columns by width(): one column is its own width, with no separator
    cols = [Col(f"edge_w{i}", w, "h") for i, w in enumerate(widths)]
    assert render.width(cols) == len(render.header(cols)) == sum(widths) + max(len(widths) - 1, 0)


def test_title_keeps_the_longest_tail_that_fits_beside_an_ellipsis() -> None:
    # the tail is what tells a sweep's runs apart: one head character and "…" beside it is enough head
    tail = "/lr_3e-4_warmup_100_s1/metrics.csv"
    line = render.title_line("runs/sweep_2024_11_lr_search" + tail, 40)
    assert line == f"── r…{tail} "
