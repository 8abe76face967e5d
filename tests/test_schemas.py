"""Schemas: the pieces (headers, layout, derived and aliased columns, rules, side files, log-entry kinds, legends)."""

from __future__ import annotations

import math

import pytest

from steptable.schemafiles.resolve import get_schema
from steptable.schemas import (
    GENERIC,
    SCHEMAS,
    Derived,
    Rule,
    Schema,
    SideFile,
    auto_col,
    layout,
    legend_for,
    ratio_pair,
    short_headers,
    side_file,
)
from steptable.schemas.headers import MAX_HEADER
from steptable.table import render
from steptable.table.columns import Col, ColumnError
from steptable.table.formatting import display_width
from tests.schemas.helpers import Rows

# ------------------------------------------------------------------------------------------------------ headers


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["actor/pg_loss"], ["pg_loss"]),
        (["env/all/reward/total"], ["reward"]),
        (["critic/score/mean"], ["score"]),
        (["response_length/mean"], ["resp_len"]),
        (["critic/rewards/mean", "critic/score/mean"], ["rewards", "score"]),
        (["critic/rewards/max", "critic/score/max"], ["rewards/max", "score/max"]),
        (["timing_s/gen", "timing_per_token_ms/gen"], ["t/gen", "tpt/gen"]),
        (["env/all/reward/total", "test/env/all/reward/total"], ["reward", "test/reward"]),
        (["train/loss", "eval/loss"], ["loss", "eval/loss"]),
        (["val/test_score/openai/gsm8k"], ["val/gsm8k"]),
        (["val-core/openai/gsm8k/reward/mean@4"], ["val/reward@4"]),
        (["prompt_length/clip_ratio"], ["prompt_len/clip"]),
        (["a/x/loss", "b/x/loss"], ["a/x/loss", "b/x/loss"]),
    ],
)
def test_short_headers(keys: list[str], expected: list[str]) -> None:
    assert list(short_headers(keys).values()) == expected


def test_short_headers_distinct_bounded_and_inert() -> None:
    keys = [
        "time/do_group_rollout:mean", "time/do_group_rollout:max", "time/do_group_rollout:count", "loss", "x/loss",
        "y/loss", "a very long key name that goes on and on", "a very long key name that goes on and on!",
        "bad\x1b[2Jkey", "\x1b]0;title\x07", "", "日本語の長いキーの名前です/値",
    ]
    hs = short_headers(keys, reserved=["loss"])
    assert len(set(hs.values())) == len(keys)
    assert "loss" not in hs.values()
    for h in hs.values():
        assert h and display_width(h) <= MAX_HEADER
        assert h.isprintable() and " " not in h and "\x1b" not in h
    assert hs["time/do_group_rollout:count"].endswith(":count")


# ------------------------------------------------------------------------------------------------------- layout


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
    assert lines[0].endswith("nan")


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


# ---------------------------------------------------------------------------------------- derived and aliases


def test_derived_fraction_column() -> None:
    schema = Schema(
        "s", (Col("step", 4, "step"), Col("ok", 6, "ok", "frac")),
        derived=(Derived("ok", ("good", "total"), ratio_pair("good", "total")),),
    )
    run = Rows([{"step": 0, "good": 3, "total": 8}, {"step": 1, "good": None, "total": 8}])
    cols = layout([run], schema)
    assert [c.key for c in cols] == ["step", "ok"]  # the inputs are consumed by the fraction
    assert render.table(cols, [schema.derive(r) for r in run.rows]).splitlines()[1:] == [
        "   0    3/8", "   1    nan"]
    assert schema.column(run, "ok") == [(3, 8), None]
    assert [c.key for c in layout([run], schema, patterns=["good"])] == ["step", "good"]


def test_derived_errors_are_nan_and_need_a_declared_col() -> None:
    bad = Derived("r", ("a",), lambda row: 1 / row["a"])
    schema = Schema("s", (Col("r", 4, "r"),), derived=(bad,))
    assert "r" not in schema.derive({"a": 0})
    assert schema.derive({"a": 4})["r"] == 0.25
    with pytest.raises(ColumnError):
        Schema("s", (), derived=(bad,))


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


# ------------------------------------------------------------------------------------------ built-in schemas


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_builtin_columns_are_described_and_narrow(name: str) -> None:
    schema = get_schema(name)
    for c in schema.cols:
        assert c.desc, c.key
        assert display_width(c.header) <= c.width <= 10, c.key
        assert c.better in (None, "higher", "lower")
    for r in schema.rules:
        assert r.desc, r.pattern


def test_pg_losses_have_no_direction() -> None:
    for name, key in [("verl", "actor/pg_loss"), ("tinyzero", "actor/pg_loss"), ("trl", "loss"),
                      ("maxent-grpo", "train/loss/policy")]:
        c = get_schema(name).col(key)
        assert c is not None and c.better is None
    for name, key in [("verl", "critic/score/mean"), ("tinker", "env/all/reward/total"), ("trl", "reward")]:
        c = get_schema(name).col(key)
        assert c is not None and c.better == "higher"


def test_retrain_entropy_mirrors_and_surprisal_first() -> None:
    schema = get_schema("retrain")
    row = {"step": 3, "exec_surprisal_mean": 1.5, "exec_entropy_mean": 1.5, "plan_entropy_mean": 2.0}
    cols = layout([Rows([row])], schema)
    keys = [c.key for c in cols]
    assert "exec_surprisal_mean" in keys and "plan_surprisal_mean" in keys
    assert not any("_entropy_" in k for k in keys)
    assert schema.derive(row)["plan_surprisal_mean"] == 2.0


@pytest.mark.usefixtures("xdg")
def test_unknown_schema_name() -> None:
    with pytest.raises(KeyError, match=r"known: .*verl"):
        get_schema("nope")


# ---------------------------------------------------------------------------------------------- side files


@pytest.mark.parametrize(
    ("path", "schema", "kind", "step"),
    [
        ("logs/train/emergence/generations.jsonl", "retrain", "generations", None),
        ("run/train_iteration_000010_rollout_summaries.jsonl", "tinker", "rollout_summaries", 10),
        ("run/iteration_000012/train_rollout_summaries.jsonl", "tinker", "rollout_summaries", 12),
        ("run/checkpoints.jsonl", "tinker", "checkpoints", None),
        ("run/config.json", "tinker", "config", None),
        ("out/rich_completions/completions_step_000040.json", "maxent-grpo", "generations", 40),
    ],
)
def test_side_files(path: str, schema: str, kind: str, step: int | None) -> None:
    found = side_file(path)
    assert found is not None
    s, sf = found
    assert (s.name, sf.kind, sf.step_of(path)) == (schema, kind, step)


def test_side_file_step_from_records_and_no_side_for_metrics() -> None:
    _, gens = side_file("x/emergence/generations.jsonl") or (None, None)
    assert gens is not None and gens.step_of("x", {"step": 7, "prompt": "p"}) == 7
    assert side_file("logs/train/metrics.jsonl") is None
    assert side_file("exp/trainer_state.json") is None
    with pytest.raises(ValueError):
        SideFile("*.bin", "weights")


# ------------------------------------------------------------------------------------------------------ legend


def test_legend_for_schema_lists_declared_rules_and_side_files() -> None:
    text = legend_for(get_schema("tinker"))
    assert text.startswith("tinker: ")
    assert "reward" in text and "higher is better" in text
    assert "test/*" in text and "progress/batch" in text and "checkpoints.jsonl (checkpoints)" in text


def test_legend_for_runs_describes_only_present_columns() -> None:
    run = Rows([{"step": 0, "critic/score/mean": 0.5, "actor/pg_loss": 0.01, "timing_s/ref": 3.0,
                 "training/global_step": 0}], path="proj/exp.jsonl")
    text = legend_for(run)
    assert text.splitlines()[0] == "verl columns:"
    assert "score" in text and "pg_loss" in text and "t/ref" in text
    assert "resp_len" not in text
    # a key kept out of the table by a rule that describes it is described: not just named
    assert "\n training/global_step  the trainer's step counter (same as step)" in text and "more key(s)" not in text
    assert legend_for([run], get_schema("generic")).splitlines()[0] == "generic columns:"
    with pytest.raises(TypeError):
        legend_for(42)  # type: ignore[arg-type]


def test_nan_is_not_informative() -> None:
    run = Rows([{"step": i, "dead": math.nan, "alive": float(i)} for i in range(3)])
    assert [c.key for c in layout([run])][:2] == ["step", "alive"]


def test_keys_as_the_trainers_docs_spell_them() -> None:
    from steptable.ingest.readers.console import parse_console_line

    tinker = Rows([{"step": 0, "progress/batch": 0, "env/all/reward/total": 0.5, "entropy": 0.71,
                    "kl_sample_train_v1": 0.0012, "ac_tokens_per_turn": 312.5}], path="run/metrics.jsonl")
    text = legend_for(tinker, get_schema("tinker"))
    assert "entropy of the sampling policy" in text and "mean tokens the policy generated per turn" in text
    maxent = get_schema("maxent-grpo")
    assert maxent.rule("eval/reward_std") is not None and maxent.rule("eval/reward_std").better is None  # type: ignore[union-attr]
    assert "whole loss" in maxent.rule("train/loss/total").desc  # type: ignore[union-attr]
    assert parse_console_line("critic/score/mean:0.6 - mfu/actor:0.3 [repeated 2x across cluster]") == {
        "critic/score/mean": 0.6, "mfu/actor": 0.3}


def test_a_column_grows_when_its_values_drift_out_of_its_measure() -> None:
    """A loss measured at .5 and drifting to .0125 kept 4 cells in a live watch (.013) while tail, measuring the
    whole run, gave 5 (.0125): more than a tenth of new rows losing digits widens the column; a rare one does not."""
    from steptable.schemas import cells_outgrown

    class Rows:
        def __init__(self, values: list[float]) -> None:
            self.values = values

        def value(self, i: int, key: str) -> float:
            return self.values[i]

    col = (Col("loss", 4, "loss"),)
    drifted = Rows([0.0125 - i * 1e-5 for i in range(50)])
    assert cells_outgrown(col, drifted, 0, 50) == {"loss": 5}
    rare = Rows([0.5] * 49 + [0.0125])
    assert cells_outgrown(col, rare, 0, 50) == {}
