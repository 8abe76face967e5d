"""Which log-directory steptable.toml applies: only one at or below the paths given (a file planted in a shared
/tmp or /scratch above them does not), or one named with --schema-file; when one applies, every view says which."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli, write, write_rows

PLANTED = """
    [schema]
    name = "planted"
    hide = ["acc"]
    [[columns]]
    key = "loss"
    header = "accuracy"
    desc = "validation accuracy"
    better = "higher"
"""


def make(tmp_path: Path) -> Path:
    run = tmp_path / "a" / "b" / "run"
    write_rows(run / "metrics.jsonl", [{"step": 0, "loss": 1.0, "acc": 0.1}, {"step": 1, "loss": 0.5, "acc": 0.9}])
    return run


@pytest.mark.parametrize("command", ["tail", "legend", "summary"])
def test_a_file_above_the_path_given_does_not_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    run = make(tmp_path)
    write(tmp_path / "steptable.toml", PLANTED)
    rc, out, err = run_cli([command, str(run)], capsys)
    assert rc == 0 and "accuracy" not in out and "acc" in out and "schema file" not in out + err
    (tmp_path / "steptable.toml").write_text("broken [\n")
    rc, out, err = run_cli([command, str(run)], capsys)
    assert rc == 0 and err == "", err


def test_a_file_in_the_tree_given_applies_and_each_view_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make(tmp_path)
    f = write(tmp_path / "a" / "steptable.toml", PLANTED)
    root = str(tmp_path / "a")
    rc, out, err = run_cli(["tail", root], capsys)
    assert rc == 0 and "accuracy" in out and f"steptable tail: schema file {f} (schema planted): 1 run(s)" in err
    rc, out, _ = run_cli(["summary", root], capsys)
    assert rc == 0 and out.splitlines()[0] == f"schema file {f} (schema planted): 1 run(s)"
    rc, out, _ = run_cli(["legend", root], capsys)
    assert rc == 0 and out.splitlines()[0] == f"planted columns (schema file {f}):"
    rc, out, _ = run_cli(["tail", str(run)], capsys)  # below the file: not the user's tree
    assert "accuracy" not in out


def test_schema_file_names_one_anywhere_and_a_broken_one_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make(tmp_path)
    f = write(tmp_path / "shared" / "mine.toml", PLANTED)
    rc, out, err = run_cli(["tail", str(run), "--schema-file", str(f)], capsys)
    assert rc == 0 and "accuracy" in out and f"schema file {f}" in err
    rc, out, _ = run_cli(["legend", str(run), "--schema-file", str(f)], capsys)
    assert rc == 0 and "validation accuracy" in out
    bad = write(tmp_path / "bad.toml", "x [\n")
    rc, out, err = run_cli(["summary", str(run), "--schema-file", str(bad)], capsys)
    assert rc == 2 and out == "" and "bad.toml:1: not valid TOML" in err
    rc, out, err = run_cli(["tail", str(run), "--schema-file", str(tmp_path / "none.toml")], capsys)
    assert rc == 2 and "none.toml" in err and "cannot read" in err
