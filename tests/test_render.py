from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steptable.schemas.routing import routing_columns
from steptable.table import render
from steptable.table.columns import Col, ColumnError, select, streamed, validate
from steptable.table.formatting import display_width

SEED_ORDER = [
    "step", "ref_eq", "rew", "rew_s", "gt_s", "gt_t", "hack_s", "hack_t", "hack_deployed", "solve_deployed",
    "hk_c", "hk_m", "lp_s", "lp_t", "loss", "gn", "lr", "auroc", "cos", "qmass", "keep", "resid", "rout", "tlo",
    "thi", "stale", "hack_abl", "solve_abl",
]


def routing_rows() -> list[dict[str, object]]:
    rng = random.Random(7)
    rows: list[dict[str, object]] = []
    for step in range(6):
        rows.append({
            "step": step, "ref_eq": step * 0.25, "rew": rng.uniform(-1, 1), "rew_s": rng.uniform(-1, 1),
            "gt_s": (rng.randint(0, 32), 32), "gt_t": [rng.randint(0, 32), 32], "hack_s": (step, 32),
            "hack_t": (3, 32), "hack_deployed": math.nan if step % 3 else 0.125,
            "solve_deployed": None if step % 3 else 0.5, "hk_c": step, "hk_m": 0, "lp_s": -0.93, "lp_t": -0.61,
            "loss": -0.0123, "gn": 10 ** (step - 2), "lr": 1e-5, "auroc": 0.5 + step / 20, "cos": -0.02,
            "qmass": 0.3, "keep": 0.5, "resid": 0.25, "rout": 0.25, "tlo": -0.7, "thi": 1.1, "stale": step,
            "hack_abl": (1, 8), "solve_abl": (5, 8), "sec": 12.5,
        })
    return rows


def generic_columns() -> list[Col]:
    cols = [Col("step", 6, "step", "d", "training step")]
    for i in range(19):
        fmt = [None, ".3f", "+.2f", ".1e", "d"][i % 5]
        cols.append(Col(f"m{i}", 7, f"met_{i}", fmt, f"metric number {i}"))
    return cols


def test_routing_layout_matches_seed_order() -> None:
    cols = routing_columns(modes=["code", "math"], mode_code={"code": "c", "math": "m"}, show_ablate=True)
    assert [c.key for c in streamed(cols)] == SEED_ORDER
    assert [c.key for c in cols if not c.stream] == ["gen", "fb", "t_rew", "sec"]


def test_routing_conditional_columns() -> None:
    single = [c.key for c in routing_columns(modes=["code"])]
    assert not any(k.startswith("hk_") and k not in ("hk_dep",) for k in single)
    assert "hack_abl" not in single and "solve_abl" not in single
    assert {"auroc", "cos", "qmass", "keep", "resid", "rout", "tlo", "thi", "stale"} <= set(single)
    arms = [routing_columns(modes=["a", "b"], mode_code={"a": "a", "b": "b"}) for _ in ("vanilla", "routeA")]
    assert render.header(arms[0]) == render.header(arms[1])


def test_routing_golden(golden: Callable[[str, str], None]) -> None:
    cols = streamed(routing_columns(modes=["code", "math"], mode_code={"code": "c", "math": "m"}, show_ablate=True))
    text = render.table(cols, routing_rows()) + "\n"
    golden("routing_table.txt", text)
    golden("routing_legend.txt", render.legend(routing_columns(["code", "math"], show_ablate=True)) + "\n")
    widths = {display_width(line) for line in text.splitlines()}
    assert widths == {render.width(cols)}


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


def test_missing_keys_render_nan() -> None:
    cols = [Col("step", 4, "step", "d"), Col("loss", 6, "loss", ".3f")]
    assert render.row(cols, {}) == " nan    nan"


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
    line = render.row(cols, {"step": 1})
    spans = render.spans(cols)
    assert spans[-1][1] == len(line)
    assert all(line[a:b].strip() for a, b in spans)


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
    ):
        row = {c.key: data.draw(_values) for c in cols}
        assert render.compile_row(cols)(row) == render.SEP.join(render.cells(cols, row))


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
    ):
        row = dict(data.draw(st.sampled_from(routing_rows()))) if len(cols) > 4 else {
            "n": 3, "x": 0.25, "e": 1e-5, "f": (3, 8)}
        for _ in range(data.draw(st.integers(1, 2))):
            row[data.draw(st.sampled_from([c.key for c in cols]))] = data.draw(_hostile)
        assert render.compile_row(cols)(row) == render.SEP.join(render.cells(cols, row))


def test_whole_row_path_is_taken_for_a_typical_row() -> None:
    """The fast path is not dead code: a typical routing row renders without the per-cell fallback."""
    cols = tuple(streamed(routing_columns(["code"])))
    fn = render.compile_row(cols)
    assert fn.__name__ == "render_fast"
    calls: list[object] = []
    fn.__globals__["render_row"], orig = (lambda values: calls.append(values) or ""), fn.__globals__["render_row"]
    try:
        row: dict[str, object] = {c.key: 0.5 for c in cols}
        row.update(step=12, stale=0, gt_s=(3, 32), gt_t=(4, 32), hack_s=(0, 32), hack_t=(1, 32), gn=0.5, lr=1e-5)
        assert fn(row) and not calls
    finally:
        fn.__globals__["render_row"] = orig


def test_a_defaultdict_row_is_read_not_filled() -> None:
    from collections import defaultdict

    cols = tuple(streamed(routing_columns(["code"])))
    row: defaultdict[str, object] = defaultdict(float, {"step": 3, "rew": 0.5})
    text = render.compile_row(cols)(row)
    assert set(row) == {"step", "rew"} and "nan" in text
    assert text == render.SEP.join(render.cells(cols, row))


def test_headers_are_made_inert() -> None:
    """A header from a TOML file beside the logs is untrusted: no escape sequence survives into the header line."""
    c = Col("k", 12, "\x1b]0;title\x07\x1b[41mL\u202e")
    assert c.header == "L" and "\x1b" not in render.header([c])


def test_a_fraction_past_the_int_digit_limit_renders_like_cells() -> None:
    cols = tuple(streamed(routing_columns(["code"])))
    row = {"step": 1, "gt_s": (10**5000, 1)}
    assert render.compile_row(cols)(row) == render.SEP.join(render.cells(cols, row))


def test_mode_codes_measure_in_cells_and_may_not_clash() -> None:
    from steptable.table.columns import ColumnError

    cols = routing_columns(modes=["code", "math"], mode_code={"code": "代码", "math": "数学"})
    hk = [c for c in cols if c.key.startswith("hk_")]
    assert [(c.header, c.width) for c in hk[-2:]] == [("hk_代码", 7), ("hk_数学", 7)]
    for modes, codes in ((["code", "coding"], {}), (["code", "x"], {"x": "dep"})):
        with pytest.raises(ColumnError, match="give it a code of its own with mode_code"):
            routing_columns(modes=modes, mode_code=codes)


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
    """Col("grad_norm", 6, "gn") without desc: the legend left it out, so nothing said what "gn" is."""
    cols = [Col("step", 4, "step", "d", "optimizer step"), Col("grad_norm", 6, "gn"), Col("loss", 6, "loss")]
    text = render.legend(cols)
    assert text.splitlines() == ["columns:", " step  optimizer step", " gn    grad_norm"]
    assert render.legend([Col("loss", 6, "loss")]) == "columns: (none described)"


@pytest.mark.parametrize("fmt", ["\x1b>10.2f", "\x07<8d", "\xad^9.1f", "\u754c>10.2f", "\u200b=10.1f"])
def test_a_fill_character_that_is_not_one_printable_cell_is_refused(fmt: str) -> None:
    """A steptable.toml (or a hand-edited run description) with fmt = "\\u001b>10.2f": every cell carried raw ESC
    characters to the terminal; a wide fill wiped the value out."""
    with pytest.raises(ColumnError, match="fill character must be one printable cell") as e:
        Col("loss", 10, "loss", fmt)
    assert "\x1b" not in str(e.value) and "\x07" not in str(e.value)
    assert render.row([Col("loss", 10, "loss", "*>10.2f")], {"loss": 0.5}) == "******0.50"  # a printable one is fine
