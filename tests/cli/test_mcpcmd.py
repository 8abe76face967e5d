"""`steptable mcp` (steptable.cli.mcpcmd): without the MCP SDK, a one-line hint and status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli


def test_without_the_sdk_a_one_line_hint(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a))
    rc, out, err = run_cli(["mcp"], capsys)
    assert rc == 2 and out == "" and err == "steptable mcp: needs the MCP SDK: pip install 'steptable[mcp]'\n"


def test_the_tools_runner_refuses_an_empty_path_as_the_command_line_does(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent's ``runs(path="")`` read the server's working directory, all of it; the command line said why not."""
    import io

    from steptable.cli.mcpcmd import run_argv

    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "metrics.jsonl").write_text('{"step": 0, "loss": 1}\n')
    monkeypatch.chdir(tmp_path)
    for argv in (["runs", "--", ""], ["summary", "--", ""], ["tail", "--since=0", "--", ""], ["legend", "--", ""],
                 ["compare", "--baseline=r", "--", ""]):
        out, err = io.StringIO(), io.StringIO()
        assert run_argv(argv, out, err) == 2, argv
        assert out.getvalue() == "" and err.getvalue() == f"steptable {argv[0]}: an empty path (for the current " \
                                                          "directory, pass .)\n", argv


@pytest.mark.parametrize("cursor", ["3:-1", "abc"])
def test_the_tools_runner_says_why_argparse_refused_a_value(tmp_path: Path, cursor: str) -> None:
    """An agent's tail(since_step="3:-1") came back as "invalid arguments: [...]": argparse's reason went to the
    server's stderr, which no agent reads. The reason is the reply's."""
    import io

    from steptable.cli.mcpcmd import run_argv

    out, err = io.StringIO(), io.StringIO()
    assert run_argv(["tail", "--run=r", f"--since={cursor}", "--", str(tmp_path)], out, err) == 2
    assert out.getvalue() == "" and err.getvalue() == (
        f"steptable tail: argument --since: not a cursor (STEP, STEP:CELLS or STEP:CELLS:EDITS), nor one tail gave: "
        f"{cursor!r}\n")


def test_the_tools_runner_frees_what_a_command_read_when_it_returns(tmp_path: Path) -> None:
    """The MCP server lives as long as an agent's session: after the runner returns, no store of the run is left,
    with the collector off (reference counting frees what a command read; a full pass, which arrays of rows do not
    bring on, is not waited for)."""
    import gc
    import io

    from steptable.cli.mcpcmd import run_argv
    from steptable.ingest.store import RunStore

    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "metrics.jsonl").write_text("".join(f'{{"step": {s}, "loss": 1}}\n' for s in range(50)))
    gc.collect()
    gc.disable()  # (no pass of the collector's own in between: what is left is what the runner left)
    try:
        for argv in (["tail", "--since=3", "--", str(tmp_path)], ["summary", "--", str(tmp_path)],
                     ["tail", "--alerts-only", "--", str(tmp_path)], ["compare", "--", str(tmp_path)]):
            assert run_argv(argv, io.StringIO(), io.StringIO()) == 0, argv
            assert not [o for o in gc.get_objects() if type(o) is RunStore], argv
    finally:
        gc.enable()
