"""A crash of ours never exits 1 (``--alerts-only`` says 1 for "an error alert fired"): 70 and the traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli, write_rows


def test_an_internal_error_exits_70_with_its_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import steptable.cli.tail as tail

    write_rows(tmp_path / "m.jsonl", [{"step": 0, "loss": 1.0}])

    def broken(args: object) -> int:
        raise RuntimeError("bug \x1b]0;title\x07")

    monkeypatch.setattr(tail, "run", broken)
    rc, _, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 70 and "Traceback" in err and "RuntimeError" in err and "\x1b" not in err
    assert err.rstrip().endswith("exit status 70")


def test_a_deeply_nested_schema_file_is_a_schema_file_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_rows(tmp_path / "logs" / "run" / "m.jsonl", [{"step": 0, "loss": 1.0}])
    (tmp_path / "logs" / "steptable.toml").write_text('[schema]\nname = "x"\ny = ' + "[" * 3000 + "]" * 3000 + "\n")
    rc, _, err = run_cli(["tail", str(tmp_path / "logs")], capsys)
    assert rc == 2 and "steptable.toml: not valid TOML: nested too deeply" in err and "Traceback" not in err
