"""Rollout dumps are generations of the run beside them, never runs: verl's ``rollout_data_dir/{step}.jsonl`` and
``validation_data_dir`` (written by verl's own dump code), TRL's ``completions/completions_{step:05d}.parquet``
(written by a real GRPOTrainer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steptable.ingest.files.discover import discover
from steptable.ingest.files.dumps import dump_step, is_dump
from tests.helpers import run_cli, write_rows
from tests.ingest.dumpwriters import write_verl_dumps
from tests.trainer_logs import write_verl


@pytest.fixture
def verl_tree(tmp_path: Path) -> Path:
    """A verl experiment: its file logger's JSONL, rollouts of steps 1-6 and validation samples of step 1."""
    exp = tmp_path / "verl_exp"
    write_verl(exp / "grpo_qwen.jsonl", steps=6)
    write_verl_dumps(exp, range(1, 7))
    return exp


def test_verl_tree_is_one_run_with_its_rollouts_as_generations(verl_tree: Path) -> None:
    (cand,) = discover([verl_tree])
    assert cand.arm == "grpo_qwen" and cand.kind == "jsonl"
    gens = sorted(cand.side_files["generations"])
    assert [p.relative_to(verl_tree).as_posix() for p in gens] == (
        [f"rollouts/{s}.jsonl" for s in range(1, 7)] + ["val/1.jsonl"])
    assert [dump_step(p) for p in gens] == [1, 2, 3, 4, 5, 6, 1]


def test_tail_of_a_verl_tree_shows_one_arm(verl_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["tail", "-n", "0", "--format", "jsonl", str(verl_tree.parent)], capsys)
    assert code == 0, err
    recs = [json.loads(line) for line in out.splitlines()]
    assert {r["arm"] for r in recs} == {"grpo_qwen"} and [r["step"] for r in recs] == list(range(7))


def test_rollouts_dir_given_alone_with_its_run_elsewhere(tmp_path: Path) -> None:
    """The only run found owns dumps outside its directory (rollout_data_dir set beside the logger's path)."""
    write_verl(tmp_path / "logs" / "exp.jsonl", steps=2)
    write_verl_dumps(tmp_path / "dumps", range(1, 3))
    (cand,) = discover([tmp_path])
    assert len(cand.side_files["generations"]) == 3


def test_a_numbered_metrics_file_is_still_a_run(tmp_path: Path) -> None:
    write_rows(tmp_path / "exp" / "3.jsonl", [{"step": i, "loss": 1.0 / (i + 1)} for i in range(3)])
    (cand,) = discover([tmp_path])
    assert cand.path.name == "3.jsonl" and not cand.side_files
    assert is_dump(cand.path) is False


def test_a_dump_being_written_is_no_run_until_its_first_line_says(tmp_path: Path) -> None:
    write_verl(tmp_path / "exp" / "exp.jsonl", steps=2)
    half = tmp_path / "exp" / "rollouts" / "7.jsonl"
    half.parent.mkdir()
    half.write_text('{"inp')  # (verl's writer mid-line)
    assert is_dump(half) is None
    (cand,) = discover([tmp_path])
    assert cand.side_files["generations"] == [half]
    half.write_text(json.dumps({"step": 7, "loss": 0.5, "acc": 0.1}) + "\n")  # it was someone's metrics after all
    assert is_dump(half) is False
    assert sorted(c.path.name for c in discover([tmp_path])) == ["7.jsonl", "exp.jsonl"]


def test_trl_completions_are_generations_of_the_trainer_run(trl_run: Path, tmp_path: Path) -> None:
    import shutil

    from tests.trainer_logs import write_trl_state

    out = tmp_path / "grpo-out"
    shutil.copytree(trl_run, out)
    write_trl_state(out, steps=2)
    (cand,) = discover([out])
    assert cand.kind == "trainer_state"
    assert sorted(p.name for p in cand.side_files["generations"]) == ["completions_00001.parquet",
                                                                       "completions_00002.parquet"]
