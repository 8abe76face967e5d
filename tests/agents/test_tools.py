"""The MCP tools as plain functions (steptable.agents.tools): the argument list each builds, the text it returns,
status 2 as CommandFailed; no SDK needed."""

from __future__ import annotations

from typing import TextIO

import pytest

from steptable.agents import tools


class Recorder:
    """A runner that records each argv and answers with a fixed status and text."""

    def __init__(self, status: int = 0, out: str = "", err: str = "") -> None:
        self.status, self.out, self.err = status, out, err
        self.argvs: list[list[str]] = []

    def __call__(self, argv: list[str], out: TextIO, err: TextIO) -> int:
        self.argvs.append(argv)
        out.write(self.out)
        err.write(self.err)
        return self.status


def test_each_tool_builds_its_commands_arguments() -> None:
    r = Recorder(out="rows\n", err="cursor 9\n")
    assert tools.tail(r, "exp", "armA", since_step=4, columns="loss") == "rows\ncursor 9\n"
    tools.tail(r, "exp", "armA", last=2)
    tools.runs(r, "exp")
    tools.summary(r, "exp", "armA")
    tools.alerts(r, "exp", since_step=3)
    tools.alerts(r, "exp", since_step=3, run_name="armA")
    tools.legend(r, "-exp")
    tools.compare(r, "exp", "vanilla", x="tokens", window="0.2")
    tools.summary(r, "exp", every_run=True)
    tools.compare(r, "exp", "vanilla", metrics="rew*,loss")
    tools.compare(r, "exp", "vanilla", every_arm=True)
    assert r.argvs == [
        ["tail", "--run=armA", "--since=4", "--page=100", "--columns=loss", "--", "exp"],
        ["tail", "--run=armA", "--last=2", "--", "exp"],
        ["runs", "--limit=50", "--", "exp"],
        ["summary", "--run=armA", "--", "exp"],
        ["tail", "--alerts-only", "--since=3", "--", "exp"],
        ["tail", "--alerts-only", "--run=armA", "--since=3", "--", "exp"],
        ["legend", "--", "-exp"],  # a path that looks like an option stays a path
        ["compare", "--baseline=vanilla", "--x=tokens", "--window=0.2", "--", "exp"],
        ["summary", "--all", "--", "exp"],
        ["compare", "--baseline=vanilla", "--metrics=rew*,loss", "--", "exp"],
        ["compare", "--baseline=vanilla", "--all", "--", "exp"],
    ]


def test_status_two_fails_and_status_one_answers() -> None:
    with pytest.raises(tools.CommandFailed, match="no run 'nope'"):
        tools.summary(Recorder(2, err="steptable summary: no run 'nope'\n"), "exp", "nope")
    with pytest.raises(tools.CommandFailed, match="steptable runs failed"):
        tools.runs(Recorder(2), "exp")
    assert tools.alerts(Recorder(1, out="E loss nan\n"), "exp") == "E loss nan\n"
    assert tools.legend(Recorder(0), "exp") == "(nothing)\n"
    r = Recorder()
    with pytest.raises(tools.CommandFailed, match="last must be 0 or more"):
        tools.tail(r, "exp", "armA", last=-1)
    assert r.argvs == []  # refused before any command ran


def test_tail_refuses_last_with_a_cursor() -> None:
    """since_step=50 with last=5 gave the 5 newest rows after 50 and a cursor at the newest: the rows between were
    never served to an agent that capped its reply with last."""
    r = Recorder()
    with pytest.raises(tools.CommandFailed, match="last and since_step do not go together"):
        tools.tail(r, "exp", "armA", since_step=50, last=5)
    assert r.argvs == []
