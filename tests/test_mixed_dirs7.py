"""Directories of several trainers' runs: `tail`, `legend` and `summary` give each trainer (and each unrelated
generic log: a Lightning metrics.csv, an SB3 progress.csv) its own columns, and `summary`'s column budget is per
trainer, so every run keeps its rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.ingest import Follower
from steptable.schemafiles.resolve import by_schema
from tests.helpers import run_cli, write_rows
from tests.trainer_logs import (
    write_lightning,
    write_routing,
    write_sb3,
    write_tinker,
    write_tinyzero_console,
    write_trl_state,
    write_verl,
)


def _sections(out: str) -> list[tuple[str, str]]:
    """`tail` text output as (section title, header line) per run."""
    lines = out.splitlines()
    return [(line, lines[i + 1]) for i, line in enumerate(lines) if line.startswith("──")]


def _rows_by_tag(out: str) -> dict[str, list[str]]:
    """`summary` text of several runs: arm tag -> the names of the rows it has (every tag from the header lines)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("col "))
    rows: dict[str, list[str]] = {line.split(":")[0]: [] for line in lines[:start]}
    name = ""
    for line in lines[start + 1 :]:
        parts = line.split()
        if parts[1] == "alerts":  # the table ended
            break
        if not line.startswith(" "):
            name, parts = parts[0], parts[1:]
        rows[parts[0]].append(name)
    return rows


@pytest.fixture
def lightning_sb3(tmp_path: Path) -> Path:
    write_lightning(tmp_path / "lightning_logs" / "version_0")
    write_sb3(tmp_path / "sb3_ppo")
    return tmp_path


def test_tail_lays_a_lightning_run_and_an_sb3_run_out_apart(
    lightning_sb3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run_cli(["tail", "-n", "2", "--width", "0", str(lightning_sb3)], capsys)
    assert rc == 0, err
    (light, light_head), (sb3, sb3_head) = _sections(out)
    assert "sb3_ppo" in sb3 and "sb3_ppo" not in light  # (a narrow table's title is cut)
    assert "val_loss" in light_head.split() and "val_acc" in light_head.split()
    assert not {"ep_rew_mean", "approx_kl", "value_loss"} & set(light_head.split())  # no SB3 column of nans
    assert "ep_rew_mean" in sb3_head.split() and not {"val_loss", "train_loss"} & set(sb3_head.split())


def test_legend_gives_each_unrelated_generic_log_its_own(
    lightning_sb3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = run_cli(["legend", str(lightning_sb3)], capsys)
    assert rc == 0
    light, sb3 = out.split("\n\n")
    assert "metrics.csv" in light.splitlines()[0] and "val_loss" in light and "ep_rew_mean" not in light
    assert "progress.csv" in sb3.splitlines()[0] and "ep_rew_mean" in sb3 and "val_loss" not in sb3


def test_by_schema_keeps_arms_of_one_generic_experiment_together(tmp_path: Path) -> None:
    """Arms with the same keys (one with an extra one, one that has logged only its first key so far) share a
    layout; an unrelated CSV log beside them gets its own; the groups come in the order of their first run."""
    for arm, extra in (("a", {}), ("b", {"probe": 1.0})):
        write_rows(tmp_path / arm / "log.jsonl",
                   [{"iteration": i, "loss": 1.0 / (i + 1), "gnorm": 0.5, "tok_s": 900.0 + i, **extra}
                    for i in range(5)])
    write_rows(tmp_path / "c" / "log.jsonl", [{"iteration": 0, "loss": 2.0}])
    write_sb3(tmp_path / "d")
    fol = Follower([str(tmp_path)])
    fol.scan()
    fol.finish()
    stores = [fol.stores[k] for k in sorted(fol.stores)]
    groups = by_schema(stores)
    assert [s.name for s, _ in groups] == ["generic", "generic"]
    assert [[s.path.parent.name for s in g] for _, g in groups] == [["a", "b", "c"], ["d"]]
    ((_, one),) = by_schema(stores, groups[0][0])  # a schema named: all its runs under it, as before
    assert len(one) == 4


def test_summary_of_verl_and_tinker_keeps_verls_validation_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_verl(tmp_path / "verl_run" / "exp.jsonl", steps=40)
    write_tinker(tmp_path / "tinker_run", steps=25)
    rc, alone, _ = run_cli(["summary", str(tmp_path / "verl_run")], capsys)
    assert rc == 0 and "val/reward@1" in alone  # what verl's run shows summarised alone
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0, err
    rows = _rows_by_tag(out)
    tag = next(line.split(":")[0] for line in out.splitlines() if ": exp:" in line or line.endswith("exp"))
    assert "val/reward@1" in rows[tag]


@pytest.fixture
def many_trainers(tmp_path: Path) -> Path:
    for i in range(2):
        write_verl(tmp_path / f"verl_{i}" / "exp.jsonl", steps=30, seed=i)
        write_tinyzero_console(tmp_path / f"tz_{i}" / "train.log", steps=20, seed=i)
        write_trl_state(tmp_path / f"trl_{i}", steps=15, seed=i)
        write_tinker(tmp_path / f"tinker_{i}", steps=15, seed=i)
        write_sb3(tmp_path / f"sb3_{i}", seed=i)
    write_lightning(tmp_path / "lightning_logs" / "version_0")
    write_routing(tmp_path / "routing", steps=20)
    return tmp_path


def test_summary_over_many_trainers_gives_every_run_rows(
    many_trainers: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run_cli(["summary", str(many_trainers)], capsys)
    assert rc == 0, err
    rows = _rows_by_tag(out)
    assert len(rows) == 14
    assert all(len(names) >= 3 for names in rows.values()), {t: len(n) for t, n in rows.items()}
    assert all(len(names) <= 20 for names in rows.values())


def test_summary_budget_is_per_trainer(many_trainers: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--max-columns 3: each run shows at most 3 rows, and every run some."""
    rc, out, _ = run_cli(["summary", "--max-columns", "3", str(many_trainers)], capsys)
    assert rc == 0
    rows = _rows_by_tag(out)
    assert all(1 <= len(names) <= 3 for names in rows.values()), rows
