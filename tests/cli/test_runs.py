"""`steptable runs PATH...` (steptable.cli.runs): one line per run found, status 2 when none is, a path is missing or a
run could not be read."""

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


def test_limit_lists_the_first_runs_by_id_and_counts_the_rest(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A sweep of 12 runs: --limit 5 lists a/ to e/ and says 7 more; 0 (the default) and a limit past the runs list
    them all, with no count."""
    for name in "lkjihgfedcba":
        write_rows(tmp_path / name / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    rc, out, _ = run_cli(["runs", str(tmp_path), "--limit", "5"], capsys)
    lines = out.splitlines()
    assert rc == 0 and [ln.split("/")[0] for ln in lines[:-1]] == list("abcde")
    assert lines[-1] == "(7 more runs: --limit 0 lists all)"
    for extra in ([], ["--limit", "0"], ["--limit", "12"]):
        rc, out, _ = run_cli(["runs", str(tmp_path), *extra], capsys)
        assert rc == 0 and len(out.splitlines()) == 12 and "more runs" not in out, extra
    with pytest.raises(SystemExit) as e:  # (argparse's usage error)
        run_cli(["runs", str(tmp_path), "--limit", "-1"], capsys)
    assert e.value.code == 2 and "must be 0 or more" in capsys.readouterr().err


def test_a_run_that_could_not_be_read_says_so_and_the_status_is_2(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A FIFO named metrics.jsonl beside a good run: its line said "no rows yet" (a run just begun) and the status
    was 0; it says it could not be read, the good run is listed, and the status is 2 (as summary's)."""
    import os

    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(3)])
    (tmp_path / "pipe").mkdir()
    os.mkfifo(tmp_path / "pipe" / "metrics.jsonl")
    write_rows(tmp_path / "new" / "metrics.jsonl", [])
    rc, out, err = run_cli(["runs", str(tmp_path)], capsys)
    assert rc == 2 and "not a regular file" in err
    lines = {ln.split()[0]: ln for ln in out.splitlines()}
    assert lines["pipe/metrics.jsonl"].endswith("0 rows  could not be read")
    assert "3 rows  steps 0-2" in lines["good/metrics.jsonl"]
    assert lines["new/metrics.jsonl"].endswith("0 rows  no rows yet")  # (empty: begun, not unreadable)


def test_a_resumed_run_says_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that crashed at step 9 and was resumed from step 5 (its steps go back in the file): its line says
    "resumed 5", as summary says it (it said nothing of it)."""
    rows = [{"step": s, "loss": 1.0} for s in range(10)] + [{"step": s, "loss": 0.5} for s in range(5, 12)]
    write_rows(tmp_path / "a" / "metrics.jsonl", rows)
    rc, out, err = run_cli(["runs", str(tmp_path)], capsys)
    assert rc == 0, err
    assert "12 rows  steps 0-11" in out and out.rstrip().endswith("resumed 5")
