"""steptable.cli.legend: ``steptable legend`` of a run, of a schema by name, and of a directory of several trainers'
or unrelated logs (one legend each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli, write_rows
from tests.trainer_logs import write_tinker, write_verl


def test_legend_of_a_directory_of_several_trainers_has_one_legend_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each trainer's runs get their own legend, as tail and the app lay each out (not the first run's for all)."""
    write_verl(tmp_path / "a_verl" / "grpo.jsonl")
    write_tinker(tmp_path / "b_tinker")
    write_rows(tmp_path / "c_plain" / "run.jsonl", [{"step": i, "my_metric": 0.5 + i} for i in range(5)])
    rc, out, _ = run_cli(["legend", str(tmp_path)], capsys)
    assert rc == 0
    heads = [line for line in out.splitlines() if line.endswith(":") and " columns" in line]
    assert [h.split()[0] for h in heads] == ["verl", "tinker", "generic"], heads
    assert "a_verl/grpo.jsonl" in heads[0] and "c_plain/run.jsonl" in heads[2]
    verl, tinker, plain, marks = out.split("\n\n")
    assert marks.startswith("marks:")  # what the marks and colours mean: once, after the legends
    assert "mfu" in verl and "mfu" not in tinker  # verl's own column, in its own legend only
    assert "my_metric" in plain and "my_metric" not in verl
    # one trainer's runs: one legend, with the title of a single legend
    rc, out, _ = run_cli(["legend", str(tmp_path / "a_verl")], capsys)
    assert rc == 0 and out.startswith("verl columns:\n")


def test_legend_gives_each_unrelated_log_its_own(
    lightning_sb3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = run_cli(["legend", str(lightning_sb3)], capsys)
    assert rc == 0
    light, sb3, _ = out.split("\n\n")
    assert "metrics.csv" in light.splitlines()[0] and "val_loss" in light and "ep_rew_mean" not in light
    assert sb3.splitlines()[0] == "sb3 columns (sb3_ppo/progress.csv):" and "ep_rew" in sb3 and "val_loss" not in sb3


def test_legend_of_a_run_and_of_a_schema_by_name(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(["legend", str(demo_dir / "routeA")], capsys)
    assert rc == 0 and "hack_s?" in out and "rollouts" in out
    rc, out, _ = run_cli(["legend", "--schema", "routing"], capsys)
    assert rc == 0 and "auroc" in out
    rc, _, err = run_cli(["legend", "--schema", "nope"], capsys)
    assert rc == 2 and "unknown schema" in err


def test_legend_explains_every_mark_and_colour(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The header marks (routing's rew_s↑, lp_s↓, hack_s?), the cell texts (blank, NaN, err, …), watch's alert mark
    and every colour rule of watch's tables, each on a line of its own, with a path and without one."""
    write_rows(tmp_path / "run.jsonl", [{"step": i, "loss": 0.5 + i} for i in range(5)])
    for args in (["legend", str(tmp_path)], ["legend"]):
        rc, out, _ = run_cli(args, capsys)
        assert rc == 0
        lines = out.splitlines()
        for mark in ("↑ ↓ after a header", "? after a header", "? as a header", "blank cell", "NaN inf -inf",
                     "err", "…", "!", "green", "bold red", "red NaN / inf", "accent", "tinted column"):
            assert any(line.startswith(f" {mark}") for line in lines), mark
        assert "colours in watch:" in lines and "median of the values before those in the last 58 rows" in out
