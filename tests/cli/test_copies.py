"""One training through several loggers (transformers reporting to W&B, trackio and TensorBoard, its checkpoints'
trainer_state.json) in each command: listed as copies by ``runs``, counted once by compare, summary and tail."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import run_cli

NOTE = "12 runs left out, the same rows as another run"


def test_compare_counts_each_training_once(hf_every_tracker: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(["compare", str(hf_every_tracker)], capsys)
    assert rc == 0 and "arms: hi 2 seeds, lo 2 seeds" in out and NOTE in err
    loss = next(ln for ln in out.splitlines() if ln.startswith("train/loss"))
    assert re.search(r"\bhi\s+2\s+", loss)  # n: the seeds, not their copies
    # transformers' W&B callback logs the step and the epoch in every row: counters, not metrics of an arm
    assert not any(ln.startswith(("train/global_step", "train/epoch")) for ln in out.splitlines())


def test_runs_lists_every_file_and_says_which_are_copies(hf_every_tracker: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(["runs", str(hf_every_tracker)], capsys)
    lines = out.splitlines()
    assert rc == 0 and len(lines) == 16
    copies = [ln for ln in lines if "same rows as wandb/" in ln]
    assert len(copies) == 12 and all(ln.endswith(": left out") for ln in copies)
    # the events of transformers' default logging directory are named after the output directory
    tb = [ln for ln in lines if "/runs/" in ln.split()[0]]
    assert sorted(ln.split()[2] for ln in tb) == ["hi_seed0", "hi_seed1", "lo_seed0", "lo_seed1"]


def test_summary_and_tail_show_each_training_once(hf_every_tracker: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(["summary", str(hf_every_tracker)], capsys)
    assert rc == 0 and NOTE in err
    assert sorted(ln.split(":")[1].strip() for ln in out.splitlines() if re.match(r"^[a-d]: ", ln)) == [
        "hi_seed0", "hi_seed1", "lo_seed0", "lo_seed1"]  # (in their files' order: W&B's random run ids)
    rc, out, err = run_cli(["summary", "--top", "2", str(hf_every_tracker)], capsys)
    assert rc == 0 and out.startswith("4 runs") and NOTE in err
    rc, out, err = run_cli(["tail", "-n", "1", str(hf_every_tracker)], capsys)
    assert rc == 0 and out.count("── ") == 4 and NOTE in err
    wandb_file = next(hf_every_tracker.glob("wandb/*/run-*.wandb"))
    state = next(hf_every_tracker.glob("hi_seed0/checkpoint-16/trainer_state.json"))
    rc, out, err = run_cli(["tail", "-n", "1", str(state), str(wandb_file)], capsys)  # named: both shown
    assert rc == 0 and out.count("── ") == 2 and "left out" not in err


def test_a_copy_asked_for_by_its_id_is_read(hf_every_tracker: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(["runs", str(hf_every_tracker)], capsys)
    copy = next(ln.split()[0] for ln in out.splitlines() if ln.startswith("hi_seed0/runs/"))
    rc, out, err = run_cli(["summary", "--run", copy, str(hf_every_tracker)], capsys)
    assert rc == 0 and out.startswith("hi_seed0: steps 2-16 (8 rows)")
    rc, out, err = run_cli(["tail", "-n", "1", "--run", copy, str(hf_every_tracker)], capsys)
    header = out.split("\n")[0].split()
    assert rc == 0 and header[:3] == ["step", "loss", "gnorm"] and "eval_loss" in header and len(out.splitlines()) == 2
    assert "left out" not in err
