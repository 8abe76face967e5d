"""steptable.schemas.legend: the legend of a schema or of runs: declared rules and side files, only the columns
present, keys as the trainers' docs spell them, the built-in schemas' legends (golden)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from steptable.schemafiles.resolve import get_schema
from steptable.schemas import SCHEMAS, legend_for
from tests.schemas.helpers import Rows


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


Golden = Callable[[str, str], None]


def test_builtin_legends(golden: Golden) -> None:

    golden("schema_legends.txt", "\n\n".join(legend_for(s) for s in SCHEMAS.values()) + "\n")


def test_a_huge_key_or_pattern_pads_no_other_line() -> None:
    """A described key (or pattern) of 200 000 characters among 100: its own line carries it, every other line is
    padded to at most MAX_WIDTH cells (padded to it, the legend held 100 x 200 000 cells)."""
    from steptable.schemas.base import Schema
    from steptable.schemas.parts import Rule
    from steptable.table.columns import MAX_WIDTH, Col

    huge = "t/" + "k" * 200_000
    schema = Schema("mine", (Col("step", 4, "step", "d", "step"),), rules=(Rule("t/*", "timing ({key})", hide=True),))
    run = Rows([{"step": 0, huge: 1.0, **{f"t/a{j}": 1.0 for j in range(100)}}], path="proj/exp.jsonl")
    rules = (*(Rule(f"p{j}/*", "a pattern") for j in range(100)), Rule(huge, "a huge pattern"))
    for text in (legend_for(run, schema=schema), legend_for(Schema("pats", (), rules=rules))):
        lines = text.splitlines()
        assert sum(huge in line for line in lines) == 1
        assert max(len(line) for line in lines if huge not in line) <= MAX_WIDTH + 100


def test_a_header_arrow_is_called_the_good_direction_only_where_the_column_declares_one() -> None:
    """Routing's ``lp_s↓`` marks a diagnostic with no good direction (its column declares none, watch does not colour
    it): the marks' legend must not call every arrow "the good direction"."""
    from steptable.schemas.legend import marks_text

    arrows = [c for s in SCHEMAS.values() for c in s.cols if c.header.strip().endswith(("↑", "↓"))]
    undirected = [c.header for c in arrows if c.better is None]
    assert "lp_s↓" in undirected
    line = next(ln for ln in marks_text().splitlines() if "↑ ↓ after a header" in ln)
    assert "the good direction of the metric" not in line and "only where" in line, line


def test_runs_whose_column_sets_differ_only_in_a_width_share_one_legend(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A sweep's StepLogger runs whose ``lr`` column was 4, 5 or 6 cells wide (three column sets, three schemas
    ``steplogger``, ``steplogger-2``...) had three identical legends; one now, for all the runs. Another column set
    (a column more) keeps its own."""
    from steptable.logger.steplogger import StepLogger
    from steptable.table.columns import Col
    from tests.helpers import run_cli

    for i, width in enumerate((4, 5, 6, 5)):
        cols = [Col("step", 5, "step", "d", "step"), Col("reward", 6, "rew", None, "mean reward", "higher"),
                Col("lr", width, "lr", ".0e", "learning rate")]
        with StepLogger(cols, run_dir=tmp_path / "sweep" / f"run{i}", console=False, alerts=False) as sl:
            for s in range(3):
                sl.log({"step": s, "reward": 0.5, "lr": 1e-5})
    rc, out, _ = run_cli(["legend", str(tmp_path / "sweep")], capsys)
    assert rc == 0 and out.count("columns") == 1 and out.count(" rew ") == 1, out
    cols = [*cols, Col("kl", 5, "kl", None, "KL to the reference")]
    with StepLogger(cols, run_dir=tmp_path / "sweep" / "other", console=False, alerts=False) as sl:
        sl.log({"step": 0, "reward": 0.5, "lr": 1e-5, "kl": 0.1})
    rc, out, _ = run_cli(["legend", str(tmp_path / "sweep")], capsys)
    assert rc == 0 and out.count("columns (") == 2 and out.count(" rew ") == 2, out
    assert "columns (run0/metrics.jsonl, run1/metrics.jsonl, run2/metrics.jsonl and 1 more)" in out, out


def test_a_legend_of_runs_lays_them_out_once_and_formats_no_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A legend shows headers and meanings, no width: it laid the runs out twice, formatting every sampled value to
    measure widths it never shows (a 300-run sweep: 8.4 s of CPU, `runs` of it 2.5 s). Its text is the same."""
    import steptable.schemas.arrange as arrange
    import steptable.schemas.legend as legend

    runs = [Rows([{"step": s, "loss": 1 / (s + 1), "acc": s / 7, "note": "ok"} for s in range(30)], path=f"r{i}.jsonl")
            for i in range(3)]
    want = legend_for(runs)
    layouts: list[bool] = []
    real = legend.layout

    def counted(*args: object, **kwargs: object) -> object:
        layouts.append(bool(kwargs.get("measure", True)))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    real_format = arrange.format_value

    def refuse(value: object, *args: object, **kwargs: object) -> str:
        if not isinstance(value, int):  # (the step column is measured still: its values are integers here)
            raise AssertionError(f"a value formatted for a legend: {value!r}")
        return real_format(value, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(legend, "layout", counted)
    monkeypatch.setattr(arrange, "format_value", refuse)
    assert legend_for(runs) == want and "loss" in want and "acc" in want
    assert layouts == [False]
