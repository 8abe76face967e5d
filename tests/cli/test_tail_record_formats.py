"""``tail`` and ``summary`` over a directory holding one run of each record format (W&B, TensorBoard, trackio)
beside a JSONL run: every row with its step and values, the arms named after the runs."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli, write_rows

pytest.importorskip("wandb")
pytest.importorskip("tensorboard")
pytest.importorskip("trackio")


@pytest.fixture
def mixed(tmp_path: Path, wandb_run: Path, trackio_dir: Path) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    root = tmp_path / "exp"
    shutil.copytree(wandb_run / "wandb", root / "wandb", symlinks=True)
    (root / "trackio").mkdir(parents=True)
    shutil.copy(trackio_dir / "proj.db", root / "trackio" / "proj.db")
    w = SummaryWriter(str(root / "tb" / "ppo-tb"))
    for i in range(4):
        w.add_scalar("train/loss", 10.0 + i, i)
    w.close()
    write_rows(root / "jsonl-arm" / "metrics.jsonl", [{"step": i, "loss": 5.0 - i} for i in range(3)])
    return root


def test_tail_prints_every_row_of_each_run(mixed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["tail", "-n", "0", "--format", "jsonl", str(mixed)], capsys)
    assert code == 0, err
    by_arm: dict[str, list[dict[str, object]]] = {}
    for line in out.splitlines():
        rec = json.loads(line)
        by_arm.setdefault(str(rec["arm"]), []).append(rec)
    assert sorted(by_arm) == ["grpo-a", "jsonl-arm", "ppo-tb", "run-a", "run-b"]
    assert [r["step"] for r in by_arm["grpo-a"]] == list(range(6))  # (the table's own step: no row)
    assert by_arm["grpo-a"][1]["train/loss"] == 0.5 and by_arm["grpo-a"][3]["y"] == math.inf  # (1e999)
    assert [(r["step"], r["train/loss"]) for r in by_arm["ppo-tb"]] == [(i, 10.0 + i) for i in range(4)]
    assert [r["step"] for r in by_arm["run-a"]] == [0, 1, 2, 3, 4] and by_arm["run-b"][2]["train/loss"] == 1 / 3
    assert [r["step"] for r in by_arm["jsonl-arm"]] == [0, 1, 2]


def test_summary_names_each_run(mixed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["summary", str(mixed)], capsys)
    assert code == 0, err
    for name in ("grpo-a", "ppo-tb", "run-a", "run-b", "jsonl-arm"):  # "x: name:" or, shared, "x: name, y: ..."
        assert f": {name}:" in out or f": {name}," in out, name
    # (runs in the same state share one header line: "a: grpo-a, b: ...: steps 0-5, ..., ended")
    line = next(ln for ln in out.splitlines() if "grpo-a" in ln and "steps" in ln)
    assert "steps 0-5" in line and ", ended" in line, line
