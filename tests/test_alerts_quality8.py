"""Alert quality on realistic RL runs: slow incidents are caught, routine noise is not an alert, a condition that
hovers at its threshold is one alert, one divergence is one line (review alerts8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.alerts.helpers import diverged
from tests.helpers import run_cli, write_rows


@pytest.mark.parametrize("fmt", ["text", "jsonl", "csv"])
def test_tail_and_summary_read_the_merged_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, diverged())
    rc, out, _ = run_cli(["tail", "--alerts-only", "--format", fmt, str(path)], capsys)
    assert rc == 1 and out.count("non-finite") == 1 and "actor/kl_loss (nan)" in out
    if fmt == "jsonl":
        rec = json.loads(out.splitlines()[-1])
        assert (rec["step"], rec["level"], rec["column"], rec["kind"]) == (200, "E", "actor/pg_loss", "nonfinite")
    rc, out, _ = run_cli(["summary", str(path)], capsys)
    assert out.count("non-finite") == 1 and "E step 200 actor/pg_loss non-finite (nan)" in out
