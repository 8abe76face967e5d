"""steptable.schemas.arrange: the column layout of runs shown together: declared columns first, then the keys
that inform most, one layout for all arms, step key variants, fitting to a width, hidden rules and filters."""

from __future__ import annotations

import math

import pytest

from steptable.schemas import Rule, Schema, auto_col, layout
from steptable.table import render
from steptable.table.columns import Col
from steptable.table.formatting import display_width
from tests.schemas.helpers import Rows


def test_layout_declared_order_then_auto_by_information() -> None:
    schema = Schema("s", (Col("step", 4, "step", "d"), Col("b", 5, "bee"), Col("a", 5, "ay"), Col("zz", 5, "zz")))
    run = Rows([{"step": i, "a": i / 3, "b": 1.0, "const": 5, "sparse": i if i % 2 else None, "vary": -i,
                 "ts": 99.0 + i} for i in range(6)])
    cols = layout([run], schema)
    assert [c.key for c in cols] == ["step", "b", "a", "vary", "sparse", "const"]  # zz absent, ts is bookkeeping
    assert all(c.width >= display_width(c.header) for c in cols)


def test_layout_one_layout_for_all_arms() -> None:
    a = Rows([{"step": 0, "x": 1.0}, {"step": 1, "x": 3.0}])
    b = Rows([{"step": 0, "y": 1.0, "x": 2.0}, {"step": 1, "y": 1.5, "x": 2.0}])
    cols = layout([a, b])
    assert [c.key for c in cols] == ["step", "x", "y"]  # y is missing from a: still one shared layout
    lines = [render.row(cols, r) for r in a.rows + b.rows]
    assert {len(line) for line in lines} == {render.width(cols)}
    assert lines[0].endswith(" " * cols[-1].width)  # y not logged in a: blank, not a NaN


@pytest.mark.parametrize("key", ["iteration", "global_step", "_step", "progress/batch"])
def test_layout_step_key_variants(key: str) -> None:
    cols = layout([Rows([{key: 1, "loss": 0.5}, {key: 2, "loss": 0.4}])])
    assert cols[0].key == key and cols[0].header == "step"
    assert [c.key for c in cols] == [key, "loss"]


def test_layout_fit_and_patterns() -> None:
    run = Rows([{"step": i, **{f"m/k{j}": i * j + 0.5 for j in range(30)}} for i in range(3)])
    fitted = layout([run], max_width=40)
    assert render.width(fitted) <= 40 and fitted[0].key == "step"
    picked = layout([run], patterns=["m/k1?"])
    assert [c.key for c in picked] == ["step"] + [f"m/k{j}" for j in range(10, 20)]


def test_hidden_rule_keeps_keys_out_until_filtered() -> None:
    schema = Schema("s", (Col("step", 4, "step"),), rules=(Rule("debug/*", "debug value {key}", hide=True),))
    run = Rows([{"step": 0, "loss": 1.0, "debug/a": 2.0}])
    assert [c.key for c in layout([run], schema)] == ["step", "loss"]
    cols = layout([run], schema, patterns=["debug/*"])
    assert [c.key for c in cols] == ["step", "debug/a"]
    assert cols[1].desc == "debug value debug/a"


def test_rule_desc_better_fmt_and_promotion() -> None:
    schema = Schema(
        "s", (Col("step", 4, "step"), Col("loss", 5, "loss")),
        rules=(Rule("val/*", "validation {key}", "higher", ".2f", promote=True),),
    )
    run = Rows([{"step": i, "loss": 1.0 / (i + 1), "noisy": i * 1.5, "val/acc": 0.5 if i == 2 else None}
                for i in range(4)])
    cols = layout([run], schema)
    assert [c.key for c in cols] == ["step", "loss", "val/acc", "noisy"]
    val = cols[2]
    assert (val.header, val.better, val.fmt, val.desc) == ("val/acc", "higher", ".2f", "validation val/acc")


def test_non_extending_schema_shows_only_declared() -> None:
    schema = Schema("s", (Col("step", 4, "step"), Col("a", 4, "a")), extend=False)
    run = Rows([{"step": 0, "a": 1, "b": 2}])
    assert [c.key for c in layout([run], schema)] == ["step", "a"]
    assert [c.key for c in layout([run], schema, patterns=["b"])] == ["step", "b"]


def test_numbers_rank_before_text() -> None:
    run = Rows([{"step": i, "note": f"text {i}", "x": float(i)} for i in range(5)])
    assert [c.key for c in layout([run])] == ["step", "x", "note"]
    assert layout([run])[2].align == "left"


def test_auto_col_width_from_data_never_below_header() -> None:
    c = auto_col("a/very_long_metric_name", [0.5, 1.25], header="very_long_metric_name")
    assert c.width == len("very_long_metric_name")
    assert auto_col("x", [123456.0, -0.001]).width <= 8
    assert auto_col("f", [(3, 32), [5, 32]]).fmt == "frac"


def test_nan_is_not_informative() -> None:
    run = Rows([{"step": i, "dead": math.nan, "alive": float(i)} for i in range(3)])
    assert [c.key for c in layout([run])][:2] == ["step", "alive"]


def test_a_layout_not_measured_has_the_same_columns_as_wide_as_their_headers() -> None:
    """``measure=False`` (summary reads only keys, headers and order): the same columns, headers, formats and order
    as the measured layout, each undeclared one as wide as its header (at least 3); declared ones as declared."""
    schema = Schema("s", (Col("step", 4, "step", "d"), Col("b", 5, "bee")),
                    rules=(Rule("eval/*", "score {key}", promote=True, fmt="frac"),))
    run = Rows([{"step": i, "b": 1.0, "a/long/path/value": i / 3 + 123456.789, "t": "text" * i, "n": 10**i,
                 "eval/acc": (i, 7), "x": None if i % 2 else -i} for i in range(12)])
    for runs, sch in (([run], schema), ([run], None), ([run, Rows([{"step": 0, "other": 1.5}])], None)):
        measured, plain = layout(runs, sch), layout(runs, sch, measure=False)
        assert [(c.key, c.header, c.fmt, c.aliases, c.desc, c.better) for c in plain] == [
            (c.key, c.header, c.fmt, c.aliases, c.desc, c.better) for c in measured]
        declared = {c.key for c in sch.cols} if sch is not None else set()
        for m, p in zip(measured, plain, strict=True):
            if m.key in declared or m.key == "step":
                assert p.width == m.width
            else:
                assert p.width == max(display_width(p.header), 3) and m.width >= p.width
    assert any(m.width > p.width for m, p in zip(layout([run], schema), layout([run], schema, measure=False),
                                                   strict=True))  # (the measured layout did measure)
