"""steptable.cli.main: the command's help (exit statuses, what tr% means), its arguments, a broken pipe after a usage
error, and a stdout that is not UTF-8."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from steptable.cli.main import COMMANDS, _parser, main
from tests.helpers import write_rows, written_long_ago


class _LeftReader(io.StringIO):
    """A stdout whose reader left (``| head -1``) after the first write."""

    def write(self, s: str) -> int:
        if self.getvalue():
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        return super().write(s)


def test_a_broken_pipe_keeps_the_status_of_a_columns_typo(tmp_path: Path) -> None:
    # `tail --columns 'zz*' | head -1` exits 2, as without the pipe: a `set -o pipefail` script sees the typo
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


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("argv", [["summary", "--all"], ["summary"], ["tail"], ["tail", "--format", "jsonl"]])
def test_a_stderr_that_cannot_be_written_costs_neither_the_output_nor_the_status(tmp_path: Path,
                                                                                  argv: list[str]) -> None:
    """``2>/dev/full``: the bad line's report fails to write; the command's output and status are those it has
    with a stderr that takes everything."""
    for arm in ("a", "b"):
        write_rows(tmp_path / arm / "metrics.jsonl", [{"step": i, "loss": 1.0 / (i + 1)} for i in range(3)])
    with open(tmp_path / "a" / "metrics.jsonl", "ab") as f:
        f.write(b"not json\n")
    written_long_ago(*tmp_path.glob("*/metrics.jsonl"))  # (the two runs below say the same: no "upd 0s ago")
    cmd = [sys.executable, "-m", "steptable", *argv, str(tmp_path)]
    with open(os.devnull, "w") as null, open("/dev/full", "w") as full:
        said = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=null, text=True)
        lost = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=full, text=True)
    assert said.returncode == 0 and "loss" in said.stdout
    assert (lost.returncode, lost.stdout) == (said.returncode, said.stdout)


@pytest.mark.parametrize("argv", [["-n", "-5"], ["--header-every", "-1"], ["--poll", "0"], ["--width", "-3"]])
def test_negative_counts_are_refused(tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["tail", *argv, str(tmp_path)])
    assert exc.value.code == 2 and "must be" in capsys.readouterr().err


def test_summary_help_says_what_tr_means(capsys: pytest.CaptureFixture[str]) -> None:
    from steptable.cli.main import main

    with pytest.raises(SystemExit):
        main(["summary", "--help"])
    assert "within the noise" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    ("cmd", "said"),
    [("tail", ["Exit status: 0", "1 an error alert fired", "2 if no readable row was ever found"]),
     ("summary", ["Exit status: 0", "whatever their alerts say", "2 for a usage error"])],
)
def test_help_states_the_exit_statuses(cmd: str, said: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """An agent or a CI script reads --help to learn what the status means (summary: alerts never change it)."""
    from steptable.cli.main import main

    with pytest.raises(SystemExit) as e:
        main([cmd, "--help"])
    text = " ".join(capsys.readouterr().out.split())  # (argparse wraps lines at the terminal's width)
    assert e.value.code == 0 and all(s in text for s in said), text


def _sub(parser: Any, cmd: str) -> Any:
    (action,) = [a for a in parser._actions if a.dest == "cmd"]
    return action.choices[cmd]


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_a_command_line_builds_only_its_commands_parser(cmd: str) -> None:
    """``steptable CMD ...`` registers CMD alone (each command's module costs its imports): its arguments, help and
    defaults are those of the parser with every command."""
    alone, full = _parser(cmd), _parser()
    assert [a for a in next(a for a in alone._actions if a.dest == "cmd").choices] == [cmd]
    assert _sub(alone, cmd).format_help() == _sub(full, cmd).format_help()
    assert _sub(alone, cmd)._defaults == _sub(full, cmd)._defaults


def test_an_unknown_command_lists_them_all(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["wacth", "."])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "invalid choice" in err and all(repr(c) in err for c in COMMANDS)


def test_watch_puts_collection_back_when_it_ends_early(tmp_path: Path) -> None:
    """``steptable watch`` pauses garbage collection for the app's start; a path that does not exist ends it before
    the app runs, and collection is on again."""
    import argparse
    import gc

    from steptable.cli import watch

    was = gc.isenabled()
    gc.enable()
    try:
        args = argparse.Namespace(paths=[str(tmp_path / "nowhere")], poll=None, theme=None, schema=None, wait=False,
                                  group=None)
        assert watch.run(args) == 2
        assert gc.isenabled()
    finally:
        if not was:
            gc.disable()
