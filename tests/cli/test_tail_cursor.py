"""`steptable tail --since STEP` (rows after a cursor, and the next cursor) and `--run NAME`."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.helpers import run_cli, write_rows


def _steps(out: str) -> list[int]:
    return [int(ln.split()[0]) for ln in out.splitlines() if ln.split() and ln.split()[0].isdigit()]


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": 1 / (s + 1)} for s in range(50)])
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": s, "loss": 1 / (s + 1)} for s in range(0, 40, 2)])
    return tmp_path


def test_since_prints_every_row_after_the_cursor_and_the_next_cursor(two_runs: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(["tail", str(two_runs / "a"), "--since", "17"], capsys)
    assert rc == 0 and _steps(out) == list(range(18, 50))  # all of them: -n 20 is not applied after a cursor
    assert err.endswith("steptable tail: cursor 49 (--since 49 prints what follows)\n")
    rc, out, err = run_cli(["tail", str(two_runs / "a"), "--since", "49"], capsys)
    assert rc == 0 and _steps(out) == [] and "cursor 49" in err  # nothing new: the cursor stays
    rc, out, _ = run_cli(["tail", str(two_runs / "a"), "--since", "17", "-n", "3"], capsys)
    assert _steps(out) == [47, 48, 49]
    rc, out, err = run_cli(["tail", str(two_runs / "a"), "--since", "-5"], capsys)  # before the first step: all
    assert _steps(out) == list(range(50)) and "cursor 49" in err


def test_several_runs_the_cursor_is_the_lowest(two_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(["tail", str(two_runs), "--since", "30"], capsys)
    assert rc == 0 and _steps(out) == [*range(31, 50), 32, 34, 36, 38]
    assert "cursor 38 " in err  # b's last row: a's new rows after it are repeated, none is missed


def test_run_picks_one_run_by_id_or_arm_and_a_wrong_name_says_the_runs(two_runs: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(["tail", str(two_runs), "--run", "b/metrics.jsonl", "--since", "33"], capsys)
    assert rc == 0 and _steps(out) == [34, 36, 38] and "cursor 38" in err
    rc, out, err = run_cli(["tail", str(two_runs), "--run", "c"], capsys)
    assert rc == 2 and out == ""
    assert "no run 'c' (runs: a/metrics.jsonl, b/metrics.jsonl)" in err and "cursor" not in err
    rc, out, err = run_cli(["summary", str(two_runs), "--run", "a/metrics.jsonl"], capsys)
    assert rc == 0 and out.startswith("a: steps 0-49") and "\nb: " not in out
    rc, out, err = run_cli(["summary", str(two_runs), "--run", "zz"], capsys)
    assert rc == 2 and "no run 'zz'" in err


def test_alerts_since_tells_only_later_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"step": s, "loss": math.nan if s in (10, 30) else 0.5, "grad_norm": 0.4} for s in range(40)]
    write_rows(tmp_path / "metrics.jsonl", rows)
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 1
    all_lines = out.splitlines()
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only", "--since", "20"], capsys)
    later = out.splitlines()
    assert later and set(later) < set(all_lines)  # the history is still read: the same alert lines, fewer
    assert any("step 10 " in ln for ln in all_lines) and not any("step 10 " in ln for ln in later)
    assert rc == 1 and "cursor 39" in err
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only", "--since", "30"], capsys)
    assert rc == 0 and out == ""  # the error alerts were at or before the cursor
