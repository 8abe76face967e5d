"""`steptable runs PATH...` (steptable.cli.runs): one line per run found, status 2 when none is or a path is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli, write_rows


def test_one_line_per_run_and_missing_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(3, 8)])
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(2)])
    rc, out, err = run_cli(["runs", str(tmp_path)], capsys)
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    assert any("5 rows  steps 3-7" in ln for ln in lines) and any("2 rows  steps 0-1" in ln for ln in lines)
    rc, out, err = run_cli(["runs", str(tmp_path), str(tmp_path / "missing")], capsys)
    assert rc == 2 and len(out.splitlines()) == 2 and "no such path" in err
    rc, out, err = run_cli(["runs", str(tmp_path / "missing")], capsys)
    assert rc == 2 and out == "" and err.startswith("steptable runs: ")
