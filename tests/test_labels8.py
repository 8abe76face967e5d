"""Run labels in tail titles, summary and alert lines: sibling runs read apart, and no label reads as a path under a
file (review 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.ingest.files.discover import discover
from tests.helpers import run_cli, write_rows

SWEEP = Path("exps/2024-06-01_resnet50_cifar10_sweep/lr_0.001/lightning_logs")


def _lightning(path: Path, steps: range) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["epoch,step,train_loss", *(f"0,{s},{1 / (s + 1)}" for s in steps)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _titles(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("──")]


def test_tail_tells_two_lightning_versions_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _lightning(SWEEP / "version_0" / "metrics.csv", range(0, 10))
    _lightning(SWEEP / "version_1" / "metrics.csv", range(10, 20))
    rc, out, _ = run_cli(["tail", "-n", "2", "exps"], capsys)
    titles = _titles(out)
    assert rc == 0 and len(titles) == 2, out
    assert all(t.endswith(f"/version_{v}/metrics.csv)") for t, v in zip(titles, (0, 1), strict=True)), titles


def test_summary_and_alerts_of_runs_sharing_an_arm_name_their_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for exp in ("exp1", "exp2"):
        rows = [{"step": s, "loss": float("nan") if exp == "exp1" and s == 5 else 1.0} for s in range(10)]
        write_rows(tmp_path / exp / "seed0" / "metrics.jsonl", rows)
    _, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert "a: exp1/seed0/metrics.jsonl: steps" in out and "b: exp2/seed0/metrics.jsonl: steps" in out, out
    _, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert out.startswith("E [exp1/seed0/metrics.jsonl] step 5 loss non-finite"), out


def test_a_file_named_beside_a_directory_is_named_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_rows(Path("odd/a/metrics.jsonl"), [{"step": 0, "loss": 1.0}])
    Path("odd/b").mkdir()
    Path("odd/b/results.csv").write_text("step,loss\n0,1\n1,0.5\n", encoding="utf-8")
    assert sorted(c.run_id for c in discover(["odd", "odd/b/results.csv"])) == ["odd/a/metrics.jsonl",
                                                                                "odd/b/results.csv"]
    _, out, _ = run_cli(["tail", "-n", "1", "odd", "odd/b/results.csv"], capsys)
    assert "── results (odd/b/results.csv)" in _titles(out), out
