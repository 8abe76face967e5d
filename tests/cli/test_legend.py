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
        for mark in ("↑ ↓ after a header", "? after a header", "\"\\t\" as a header", "blank cell", "NaN inf -inf",
                     "err", "…", "!", "green", "bold red", "red NaN / inf", "accent", "tinted column"):
            assert any(line.startswith(f" {mark}") for line in lines), mark
        assert "colours in watch:" in lines and "median of the values before those in the last 58 rows" in out


def test_every_column_of_the_table_is_in_the_legend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A StepLogger run's own columns with no description (``lr``, ``mem_gb``) were left out of its legend, while
    keys outside its column set were listed "as logged": each column the table shows is named, those whose header
    is their key and whose meaning is not known on one line."""
    from steptable import StepLogger

    with StepLogger(run_dir=tmp_path / "run", console=False, alerts=False) as lg:
        for s in range(5):
            lg.log({"step": s, "loss": 1.0 / (s + 1), "lr": 1e-5, "mem_gb": 3.2 + s, "train/nested": {"a": 0.5}})
        lg.log({"step": 5, "loss": 0.1, "lr": 1e-5, "mem_gb": 8.0, "train/nested": {"a": 0.5}, "late": 1.0})
    rc, out, _ = run_cli(["tail", str(tmp_path), "-n", "1"], capsys)
    shown = out.splitlines()[0].split()
    rc, out, _ = run_cli(["legend", str(tmp_path)], capsys)
    legend = out.split("\n\n")[0]
    named = {line.split()[0] for line in legend.splitlines()[1:] if line.startswith(" ")}
    plain = next(line for line in legend.splitlines() if line.startswith("no description"))
    plain_keys = set(plain.split(": ", 1)[1].split(", "))
    assert rc == 0 and {"lr", "mem_gb", "late"} <= plain_keys and "a" in named, legend
    assert set(shown) <= named | plain_keys, (shown, legend)
