"""A new user's first commands: paths behind a directory they may not enter, a stdout that is not UTF-8, a broken
pipe after a usage error, what the sdist carries."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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


class _LeftReader(io.StringIO):
    """A stdout whose reader left (``| head -1``) after the first write."""

    def write(self, s: str) -> int:
        if self.getvalue():
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        return super().write(s)


def test_a_broken_pipe_keeps_the_status_of_a_columns_typo(tmp_path: Path) -> None:
    # `tail --columns 'zz*' | head -1` exited 0: a `set -o pipefail` script missed the typo (2 without the pipe)
    from steptable.cli.main import _parser
    from steptable.cli.tail import run as run_tail

    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": i, "loss": 1.0} for i in range(50)])
    args = _parser().parse_args(["tail", str(tmp_path), "--columns", "zz*", "-n", "50"])
    err = io.StringIO()
    assert run_tail(args, _LeftReader(), err) == 2
    assert "matches no column" in err.getvalue()
    args = _parser().parse_args(["tail", str(tmp_path), "-n", "50"])
    assert run_tail(args, _LeftReader(), io.StringIO()) == 0  # the reader leaving is no error in itself


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_a_stdout_that_is_not_utf8_gets_question_marks_not_a_traceback(tmp_path: Path, encoding: str) -> None:
    # a Windows redirect (cp1252), PYTHONIOENCODING=ascii: the title's box characters raised UnicodeEncodeError
    for arm in ("a", "b"):
        write_rows(tmp_path / arm / "metrics.jsonl", [{"step": i, "loss": 1.0} for i in range(3)])
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    got = subprocess.run([sys.executable, "-m", "steptable", "tail", str(tmp_path)], capture_output=True, env=env)
    assert got.returncode == 0 and b"Traceback" not in got.stderr, got.stderr
    assert b"?? a " in got.stdout and b"loss" in got.stdout, got.stdout


def test_a_dangling_link_beside_a_good_path_is_a_missing_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the permission fix read a link to nowhere as there (lexists): a broken `latest` link passed a CI gate
    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": 1, "loss": 1.0}])
    (tmp_path / "latest").symlink_to(tmp_path / "nonexistent" / "run")
    for cmd in (["tail", "--alerts-only"], ["summary"]):
        rc, _, err = run_cli([*cmd, str(tmp_path / "good"), str(tmp_path / "latest")], capsys)
        assert rc == 2 and "no such path" in err, (cmd, err)
