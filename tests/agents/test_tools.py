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
    tools.compare(r, "exp", "lr1e-5", group=r"_seed\d+_r\d+")
    assert r.argvs == [
        ["tail", "--run=armA", "--since=4", "--page=100", "--columns=loss", "--", "exp"],
        ["tail", "--run=armA", "--last=2", "--page=100", "--", "exp"],
        ["runs", "--limit=50", "--", "exp"],
        ["summary", "--run=armA", "--", "exp"],
        ["tail", "--alerts-only", "--since=3", "--", "exp"],
        ["tail", "--alerts-only", "--run=armA", "--since=3", "--", "exp"],
        ["legend", "--", "-exp"],  # a path that looks like an option stays a path
        ["compare", "--baseline=vanilla", "--x=tokens", "--window=0.2", "--", "exp"],
        ["summary", "--all", "--", "exp"],
        ["compare", "--baseline=vanilla", "--metrics=rew*,loss", "--", "exp"],
        ["compare", "--baseline=vanilla", "--all", "--", "exp"],
        ["compare", "--baseline=lr1e-5", r"--group=_seed\d+_r\d+", "--", "exp"],  # (a sweep's seed part)
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


def test_legend_and_compare_replies_come_a_page_of_lines_at_a_time() -> None:
    """A 3,000-key run's legend was 292,404 characters of reply, its compare 334,516: at most max_lines lines (and
    REPLY_CHARS characters) of the command's text, then a line saying how many are left and how to ask for them;
    the command's notes on stderr after it; the text whole where it fits."""
    text = "".join(f"line {i}\n" for i in range(250))
    r = Recorder(out=text, err="steptable legend: a note\n")
    got = tools.legend(r, "exp")
    assert got == "".join(f"line {i}\n" for i in range(100)) + (
        "(150 more line(s) of 250: from_line=100 gives the next; max_lines=0 all)\nsteptable legend: a note\n")
    assert tools.legend(r, "exp", from_line=200).startswith("line 200\n")
    assert "more line" not in tools.legend(r, "exp", from_line=200) and tools.legend(r, "exp", max_lines=0) == (
        text + "steptable legend: a note\n")
    got = tools.compare(Recorder(out=text), "exp", "base", max_lines=10)
    assert got.endswith("line 9\n(240 more line(s) of 250: metrics='GLOBS' compares fewer, from_line=10 gives the "
                        "next; max_lines=0 all)\n")
    wide = Recorder(out=("x" * 1000 + "\n") * 50)  # (long lines: the characters bound it too)
    assert len(tools.legend(wide, "exp")) <= tools.REPLY_CHARS + 100
    assert tools.legend(Recorder(out="a\nb\n"), "exp") == "a\nb\n"
    with pytest.raises(tools.CommandFailed, match="from_line must be 0 or more"):
        tools.compare(Recorder(), "exp", "base", from_line=-1)


def test_a_page_past_the_end_says_so_and_how_long_the_reply_is() -> None:
    """from_line past the last line answered "(nothing)", as if the legend, compare or alerts were empty."""
    text = "".join(f"line {i}\n" for i in range(250))
    for got in (tools.legend(Recorder(out=text), "exp", from_line=250),
                tools.compare(Recorder(out=text), "exp", "base", from_line=10**9),
                tools.alerts(Recorder(out=text, err="cursor 9\n"), "exp", from_line=300)):
        assert got.startswith("(from_line=") and (
            "is past the end: the reply has 250 line(s); from_line=0 starts it)\n" in got)
    assert tools.alerts(Recorder(out=text, err="cursor 9\n"), "exp", from_line=300).endswith(")\ncursor 9\n")
    assert tools.legend(Recorder(), "exp", from_line=5) == "(nothing)\n"  # (a reply of no line: nothing it is)
