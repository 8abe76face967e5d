"""Side files decoded as untrusted input: bounded nesting, one reason, the run still read."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.table import sidejson
from tests.helpers import run_cli, write_rows


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert sidejson.depth(b'{"a": [1, {"b": "[[[[{{{"}], "c": "\\"[["}') == 3
    assert sidejson.depth(b"[" * 1000) == 1000
    assert sidejson.load(b'{"lr": [1, 2]}') == {"lr": [1, 2]}
    with pytest.raises(sidejson.SideFileError, match="nested 1000 deep"):
        sidejson.load(b"[" * 1000)
    with pytest.raises(sidejson.SideFileError, match="not valid JSON"):
        sidejson.load(b'{"n": ' + b"9" * 5000 + b"}")  # (past int()'s digit limit)


@pytest.mark.parametrize("command", ["tail", "summary", "legend"])
def test_a_deeply_nested_config_beside_a_run_is_one_line_and_the_runs_are_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    for run in ("good", "evil"):
        write_rows(tmp_path / "logs" / run / "metrics.jsonl", [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}])
    (tmp_path / "logs" / "evil" / "config.json").write_text("[" * 1000)
    rc, out, err = run_cli([command, str(tmp_path / "logs")], capsys)
    assert rc == 0, err
    assert "evil/config.json: config JSON nested 1000 deep" in err and "Traceback" not in err
    assert err.count("config.json") == 1
    if command == "summary":
        assert "good" in out and "evil" in out


def test_alerts_only_does_not_read_a_bad_config_as_an_error_alert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_rows(tmp_path / "run" / "metrics.jsonl", [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}])
    (tmp_path / "run" / "config.json").write_text("{" * 5000)
    rc, _, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and "nested 5000 deep" in err
