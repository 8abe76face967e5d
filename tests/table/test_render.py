"""steptable.table.render: header, row, legend and title lines; the compiled whole-row path equals the
cell-by-cell one."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steptable.schemas.routing import routing_columns
from steptable.table import render, wholerow
from steptable.table.columns import Col, select, streamed, with_notations
from steptable.table.formatting import display_width
from steptable.table.render import title_line
from tests.schemas.helpers import routing_rows


def generic_columns() -> list[Col]:
    cols = [Col("step", 6, "step", "d", "training step")]
    for i in range(19):
        fmt = [None, ".3f", "+.2f", ".1e", "d"][i % 5]
        cols.append(Col(f"m{i}", 7, f"met_{i}", fmt, f"metric number {i}"))
    return cols


def test_generic_20_column_golden(golden: Callable[[str, str], None]) -> None:
    cols = generic_columns()
    rng = random.Random(3)
    specials: list[object] = [None, math.nan, math.inf, -math.inf, "nan", True, 10**12, 1e-30, -7.0, "日本語"]
    rows = []
    for step in range(8):
        r: dict[str, object] = {"step": step * 1000}
        for i in range(19):
            special = (step * i) % 4 == 0
            r[f"m{i}"] = specials[(step + i) % len(specials)] if special else rng.gauss(0, 10 ** (i % 7 - 3))
        rows.append(r)
    text = render.table(cols, rows, header_every=4) + "\n" + render.legend(cols) + "\n"
    golden("generic20.txt", text)
    for line in text.splitlines()[:10]:
        assert display_width(line) == render.width(cols)


def test_missing_keys_render_blank_and_non_finite_values_as_nan_inf() -> None:
    """Not logged is blank; a logged NaN / inf reads NaN / inf / -inf, on the whole-row path and the per-cell one."""
    cols = [Col("step", 4, "step", "d"), Col("loss", 6, "loss", ".3f"), Col("kl", 6, "kl", "+.2f")]
    assert render.row(cols, {}) == " " * render.width(cols)
    assert render.row(cols, {"step": 1, "loss": math.nan, "kl": math.nan}) == "   1    NaN    NaN"
    assert render.row(cols, {"step": 1, "loss": math.inf, "kl": -math.inf}) == "   1    inf   -inf"
    assert render.row(cols, {"step": 1, "kl": math.inf}) == "   1           inf"
    auto = [Col("step", 4, "step", "d"), Col("rew", 6, "rew")]
    assert render.row(auto, {"step": 2, "rew": float("nan")}) == "   2    NaN"
    assert render.row(auto, {"step": 2}) == "   2       "


def test_select_and_trend() -> None:
    cols = routing_columns()
    keys = [c.key for c in select(cols, ["hack*", "au*"])]
    assert keys == ["step", "hack_s", "hack_t", "hack_deployed", "auroc"]
    rew = next(c for c in cols if c.key == "rew_s")
    hack = next(c for c in cols if c.key == "hack_s")
    assert render.trend(rew, 0.5, 0.4) == 1 and render.trend(rew, 0.3, 0.4) == -1
    assert render.trend(hack, (3, 8), (1, 8)) == -1
    assert render.trend(rew, math.nan, 0.4) == 0


def test_spans_cover_row() -> None:
    cols = generic_columns()
    line = render.row(cols, {c.key: math.nan for c in cols})
    spans = render.spans(cols)
    assert spans[-1][1] == len(line)
    assert all(line[a:b].strip() for a, b in spans)
    assert len(render.row(cols, {"step": 1})) == len(line)


_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-2, max_value=2),
    st.floats(min_value=-1e-3, max_value=1e-3),
    st.integers(min_value=-(10**7), max_value=10**7),
    st.none(),
    st.booleans(),
    st.sampled_from([0.0, -0.0, 0.004, -0.005, 10.0, 1e-5, "nan", "hold", (3, 8), [3, 8], (3.0, 8), (1, 0)]),
    st.tuples(st.integers(-(10**6), 10**6), st.integers(0, 10**6)),
)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_compiled_row_equals_cell_by_cell(data: st.DataObject) -> None:
    for cols in (
        tuple(streamed(routing_columns(["code", "math"], show_ablate=True))),
        tuple(generic_columns()),
        (Col("a", 5, "a", "+.1%"), Col("b", 8, "b", ".3e"), Col("c", 6, "c", None, align="left"),
         Col("d", 6, "d", ">6.2f")),
        _auto_and_noted(),
    ):
        row = {c.key: data.draw(_values) for c in cols}
        assert render.compile_row(cols)(row) == render.SEP.join(render.cells(cols, row))


def _auto_and_noted() -> tuple[Col, ...]:
    """Automatic-format columns, without a notation and with the ones the live logger would choose (positional,
    exact decimals, a shared exponent in the header), beside an int column: all of them take the whole-row path."""
    cols = (Col("n", 4, "n", "d"), Col("a", 6, "a"), Col("b", 7, "b"), Col("g", 5, "g"), Col("x", 7, "x"),
            Col("l", 5, "l"))
    noted = with_notations(cols[2:], [{"b": -12.5, "g": 1.25, "x": 0.0031, "l": 2e-7}, {"b": 3.0, "g": 0.5}])
    noted = tuple(c.with_(notation=c.notation.in_header()) if c.key == "l" and c.notation else c for c in noted)
    assert all(c.notation is not None for c in noted)
    return (*cols[:2], *noted)


class _Floaty:
    """A scalar that only converts (numpy/torch-like)."""

    def __init__(self, x: float) -> None:
        self.x = x

    def __float__(self) -> float:
        return self.x


_hostile = st.one_of(
    _values,
    st.sampled_from([True, False, 10**400, -(10**30), 1e300, -1e-300, 2.5, "3", b"x", [1, 2], (1, 2, 3), {"a": 1},
                     (True, 1), (3, 8.5), (math.nan, 8), (10**400, 1), float("-nan"), _Floaty(0.5), _Floaty(2e-9)]),
    st.builds(_Floaty, st.floats(allow_nan=True, allow_infinity=True)),
    st.tuples(st.booleans(), st.integers(0, 40)),
)


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_whole_row_path_equals_cell_by_cell_on_one_odd_value(data: st.DataObject) -> None:
    """A realistic row (every value of the type its column expects, so the whole-row template is taken) with one
    or two cells replaced by anything: the text must still equal the per-cell rendering."""
    for cols in (
        tuple(streamed(routing_columns(["code", "math"], show_ablate=True))),
        (Col("n", 4, "n", "d"), Col("x", 6, "x", "+.3f"), Col("e", 7, "e", "+.1e"), Col("f", 5, "f", "frac")),
        (Col("n", 4, "n", "-d"), Col("x", 6, "x", "-.2f"), Col("e", 7, "e", ".2F"), Col("f", 5, "f", "frac")),
        _auto_and_noted(),
    ):
        if len(cols) > 6:
            row = dict(data.draw(st.sampled_from(routing_rows())))
        elif cols[0].key == "n":
            row = {"n": 3, "x": 0.25, "e": 1e-5, "f": (3, 8)}
        else:
            row = {"n": 3, "a": 0.3401, "b": -12.5, "g": 1.25, "x": 0.0031, "l": 2e-7}
        for _ in range(data.draw(st.integers(1, 2))):
            row[data.draw(st.sampled_from([c.key for c in cols]))] = data.draw(_hostile)
        if data.draw(st.booleans()):  # a key the row does not log (blank)
            row.pop(data.draw(st.sampled_from([c.key for c in cols])), None)
        assert render.compile_row(cols)(row) == render.SEP.join(render.cells(cols, row))


def test_whole_row_path_is_taken_for_a_typical_row() -> None:
    """The fast path is not dead code: a routing row (its gn in the automatic format, then in a notation the live
    logger chose for it) renders without the per-cell fallback."""
    base = tuple(streamed(routing_columns(["code"])))
    assert any(c.fmt is None for c in base)  # gn: automatic
    noted = with_notations(base, [{"gn": 0.5}, {"gn": 2.5}])
    assert next(c for c in noted if c.key == "gn").notation is not None
    calls: list[object] = []
    for cols in (base, noted):
        fn = render.compile_row(cols)
        assert fn.__name__ == "render_fast"
        fn.__globals__["render_row"], orig = (lambda values: calls.append(values) or ""), fn.__globals__["render_row"]
        try:
            row: dict[str, object] = {c.key: 0.5 for c in cols}
            row.update(step=12, stale=0, gt_s=(3, 32), gt_t=(4, 32), hack_s=(0, 32), hack_t=(1, 32), gn=0.5, lr=1e-5)
            assert fn(row) and not calls
            row["gn"] = math.nan  # a NaN in an automatic-format column stays on the whole-row path
            assert fn(row) and not calls
            del row["gn"]  # and so does an automatic-format column the row does not log (blank)
            assert fn(row) == render.SEP.join(render.cells(cols, row)) and not calls
        finally:
            fn.__globals__["render_row"] = orig


def test_a_defaultdict_row_is_read_not_filled() -> None:
    from collections import defaultdict

    cols = tuple(streamed(routing_columns(["code"])))
    row: defaultdict[str, object] = defaultdict(float, {"step": 3, "rew": 0.5})
    text = render.compile_row(cols)(row)
    assert set(row) == {"step", "rew"} and text.strip() != "3" and text.count(" ") > len(cols)
    assert text == render.SEP.join(render.cells(cols, row))


def test_headers_are_made_inert() -> None:
    """A header from a TOML file beside the logs is untrusted: no escape sequence survives into the header line."""
    c = Col("k", 12, "\x1b]0;title\x07\x1b[41mL\u202e")
    assert c.header == "L" and "\x1b" not in render.header([c])


def test_a_fraction_past_the_int_digit_limit_renders_like_cells() -> None:
    cols = tuple(streamed(routing_columns(["code"])))
    row = {"step": 1, "gt_s": (10**5000, 1)}
    assert render.compile_row(cols)(row) == render.SEP.join(render.cells(cols, row))


def test_legend_aligns_wide_headers_by_cells() -> None:
    from steptable.table.columns import Col

    text = render.legend([Col("a", 6, "中文", "d", "wide"), Col("bb", 6, "bb", "d", "narrow")], title=None)
    lines = text.splitlines()
    starts = [display_width(line[: line.index(d)]) for line, d in zip(lines, ("wide", "narrow"), strict=True)]
    assert starts == [7, 7] and lines[1] == " bb    narrow"  # the descriptions start in one column


def test_a_row_of_thousands_of_columns_renders() -> None:
    """``tail --width 0`` over a verl validation row of 2000 keys: the compiled renderer stays flat."""
    cols = tuple(Col(f"k{i}", 5, f"h{i}") for i in range(3000))
    line = render.row(cols, {"k0": 0.5, "k2999": 7})
    assert len(line) == 3000 * 6 - 1 and line.startswith("   .5") and line.endswith("    7")


def test_legend_names_the_key_of_a_renamed_column_without_a_description() -> None:
    """Col("grad_norm", 6, "gn") without desc: the legend names its key, so something says what "gn" is."""
    cols = [Col("step", 4, "step", "d", "optimizer step"), Col("grad_norm", 6, "gn"), Col("loss", 6, "loss")]
    text = render.legend(cols)
    assert text.splitlines() == ["columns:", " step  optimizer step", " gn    grad_norm"]
    assert render.legend([Col("loss", 6, "loss")]) == "columns: (none described)"


def test_legend_names_a_key_with_a_line_break_on_one_line() -> None:
    """A logged key "a\nb" (its header shown "a⏎b") without a description: the legend names the key as the header
    shows it (the line break made the legend's own description invalid: `steptable legend` and watch's l crashed)."""
    text = render.legend([Col("step", 4, "step", "d", "optimizer step"), Col("a\nb", 5, "a⏎b")])
    assert text.splitlines() == ["columns:", " step  optimizer step", " a⏎b   a⏎b"]


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
    for n in range(2 * wholerow.MEMO_SIZE + 5):
        assert wholerow.frac_new(memo, (n, 7)) == f"{n}/7"
    assert 0 < len(memo) <= wholerow.MEMO_SIZE


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
    # '%.1e' % (3e-4,) unpacks the tuple: the whole-row path must show [0.0003] as every other view does, not 3.0e-4
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


SWEEP = Path("exps/2024-06-01_resnet50_cifar10_sweep/lr_0.001/lightning_logs")


def test_a_long_title_keeps_its_file_and_nearest_directories() -> None:
    text = f"lr_0.001 ({SWEEP.relative_to('exps')}/version_1/metrics.csv)"
    line = title_line(text, 50).rstrip()
    assert display_width(line) == 49
    assert line.startswith("── lr_0.001 (2024-06-01_") and line.endswith("…/version_1/metrics.csv)"), line


def test_a_title_without_a_path_loses_its_middle() -> None:
    line = title_line("qwen7b_grpo_kl0.01_" + "x" * 60 + "_seed1", 40).rstrip()
    assert display_width(line) == 39 and line.startswith("── qwen7b_") and line.endswith("_seed1"), line


def test_a_narrow_title_keeps_the_arm_that_tells_runs_apart() -> None:
    # the middle cut began at the first "/" inside "(path)": both seeds read "grpo_qwen7b_…/version_0/metrics.csv)"
    titles = [title_line(f"grpo_qwen7b_lr1e-6_seed{s} (runs/grpo_qwen7b_lr1e-6_seed{s}/lightning_logs/version_0/"
                         "metrics.csv)", 10) for s in (1, 2)]
    assert titles == ["── grpo_qwen7b_lr1e-6_seed1 ", "── grpo_qwen7b_lr1e-6_seed2 "]
    wide = title_line("lr_0.001 (sweep/lr_0.001/lightning_logs/version_1/metrics.csv)", 40)
    assert wide.startswith("── lr_0.001 (") and wide.rstrip(" ─").endswith("/version_1/metrics.csv)")
    assert display_width(wide) == 40


def test_title_line_is_measured_in_cells() -> None:
    from steptable.table.render import title_line

    assert display_width(title_line("奖励 arm", 30)) == 30
    assert display_width(title_line("a" * 100, 10)) == 40  # a long label is cut, a narrow table keeps it readable


def test_frac_cell_with_unhashable_member_renders_like_the_slow_path() -> None:
    # The whole-row fast path looked the pair up in a memo dict: an ndarray or list inside raised TypeError.
    cols = (Col("step", 6, "step", "d"), Col("f", 6, "f", "frac"))
    for v in [(np.array(3), 32), ([1], 2)]:
        row = {"step": 1, "f": v}
        assert render.row(cols, row) == render.SEP.join(render.cells(cols, row))


def test_zero_decimal_spec_does_not_round_a_value_to_zero() -> None:
    cols = (Col("step", 6, "step", "d"), Col("x", 6, "x", ".0f"))
    for v in (0.3, 0.5, -0.5, 2.5):
        row = {"step": 1, "x": v}
        assert render.row(cols, row) == render.SEP.join(render.cells(cols, row)), v
    assert render.row((Col("x", 6, "x", ".0f"),), {"x": 0.5}).strip() == ".5"


def test_int_beyond_str_digit_limit_does_not_raise() -> None:
    cols = (Col("step", 6, "step", "d"), Col("x", 6, "x", "d"))
    row = {"step": 10**5000, "x": 10**5000}
    assert render.row(cols, row) == render.SEP.join(render.cells(cols, row))


def test_spec_without_precision_does_not_round_a_value_to_zero() -> None:
    from steptable.table import render
    from steptable.table.columns import Col

    cols = (Col("a", 9, "a", "f"), Col("b", 9, "b", "+f"))
    for row in ({"a": 1e-9, "b": 0.5}, {"a": 0.5, "b": -1e-9}, {"a": 0.0, "b": 0.0}):
        assert render.compile_row(cols)(row) == render.SEP.join(render.cells(cols, row))


def test_a_compiled_row_writes_a_value_its_notation_rounds_away_on_its_own() -> None:
    """Both compiled paths (the whole-row template and the per-cell code for a row it cannot take) write what the
    cells write for a value fixed decimals would show as zero digits: its own form, not ``.0000``."""
    cols = with_notations([Col("step", 4, "step", "d"), Col("x", 6, "x")], [{"step": 0, "x": 0.0123}])
    row = render.compile_row(cols)
    for x, text in ((3e-6, "3e-6"), (-2.1e-5, "-2e-5"), (0.0, "0"), (0.0119, ".0119")):
        for values in ({"step": 1, "x": x}, MappingProxyType({"step": 1, "x": x})):  # (not a dict: per-cell code)
            assert row(values).split() == ["1", text], (x, type(values))
            assert row(values) == render.SEP.join(render.cells(cols, values))
