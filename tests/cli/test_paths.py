"""The paths a command is given: missing, unreachable, behind a directory one may not enter, dangling links, and a file
named beside its directory; the good paths are still read and the status says what went wrong."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.files.discover import discover
from tests.cli.helpers import block_titles
from tests.helpers import run_cli, write_rows


@pytest.fixture
def locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path/home700: a directory the user may not enter (as on a shared cluster; root enters any, so simulated)."""
    home = tmp_path / "home700"
    write_rows(home / "run" / "metrics.jsonl", [{"step": i, "loss": 1.0} for i in range(3)])
    real_stat = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        p = os.path.abspath(os.fspath(path))
        if p.startswith(str(home) + os.sep):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    return home


@pytest.mark.parametrize("cmd", [["tail"], ["summary"], ["legend"], ["tail", "--alerts-only"]])
def test_a_path_behind_a_directory_one_may_not_enter_is_said_not_a_traceback(
    locked: Path, cmd: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Path.is_file() re-raised EACCES: a traceback and status 1 (for --alerts-only: "an error alert fired")
    rc, _, err = run_cli([*cmd, str(locked / "run")], capsys)
    assert rc == 2 and "Permission denied" in err and "Traceback" not in err, err
    assert "no such path" not in err, err  # it is there


def test_an_unreachable_path_beside_a_good_one(
    locked: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_rows(tmp_path / "ok" / "metrics.jsonl", [{"step": i, "loss": 1.0} for i in range(3)])
    rc, out, err = run_cli(["summary", str(tmp_path / "ok"), str(locked / "run")], capsys)
    assert rc == 2 and "steps 0-2" in out and "Permission denied" in err and "no such path" not in err, (out, err)


def test_a_dangling_link_beside_a_good_path_is_a_missing_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the permission fix read a link to nowhere as there (lexists): a broken `latest` link passed a CI gate
    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": 1, "loss": 1.0}])
    (tmp_path / "latest").symlink_to(tmp_path / "nonexistent" / "run")
    for cmd in (["tail", "--alerts-only"], ["summary"]):
        rc, _, err = run_cli([*cmd, str(tmp_path / "good"), str(tmp_path / "latest")], capsys)
        assert rc == 2 and "no such path" in err, (cmd, err)


@pytest.mark.parametrize(
    ("argv", "shown"),
    [(["tail"], "1.5"), (["tail", "--alerts-only"], ""), (["summary"], "steps 0-2"), (["legend"], "reward")],
)
def test_a_missing_path_beside_a_good_one_is_named_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], shown: str
) -> None:
    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": s, "reward": 1.5} for s in range(3)])
    typo = tmp_path / "typo"
    rc, out, err = run_cli([*argv, str(tmp_path / "good"), str(typo)], capsys)
    assert rc == 2  # a CI gate over armA and a mistyped armB must not pass as "no alerts"
    assert f"no such path: {typo}" in err
    assert shown in out  # what the good path gives is still printed


def test_all_paths_there_is_still_a_success(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": 0, "reward": 1.0}])
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": 0, "reward": 1.0}])
    rc, _, err = run_cli(["tail", "--alerts-only", str(tmp_path / "a"), str(tmp_path / "b")], capsys)
    assert rc == 0 and err == ""


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
    assert "── results (odd/b/results.csv)" in block_titles(out), out


def test_alerts_only_on_a_missing_path_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(["tail", "--alerts-only", str(tmp_path / "typo")], capsys)
    assert rc == 2 and "no such path" in err


@pytest.mark.parametrize("cmd", [["runs"], ["tail"], ["summary"], ["legend"], ["compare", "--baseline", "a"]])
def test_an_empty_path_is_refused_not_read_as_the_current_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cmd: list[str]
) -> None:
    """``steptable runs "$LOGDIR"`` with the variable unset read the whole working directory, then failed."""
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "reward": 1.5} for s in range(3)])
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli([*cmd, ""], capsys)
    assert rc == 2 and out == "" and "an empty path" in err, (out, err)
