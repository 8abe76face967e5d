"""`steptable mcp`: the MCP server for coding agents, over stdio (steptable.agents). Its tools run the commands
below through :func:`run_argv`, so their text is the command line's."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any, NoReturn, TextIO

HINT = "steptable mcp: needs the MCP SDK: pip install 'steptable[mcp]'\n"


def add_parser(sub: Any) -> None:
    sub.add_parser(
        "mcp", help="an MCP server over stdio for coding agents (tools: runs, summary, tail, alerts, legend, compare)",
        description="An MCP server over stdio: the tools runs, summary, tail (rows after a cursor), alerts, legend and "
        "compare return the same text as the commands of those names. Register it with an agent as the command "
        "`steptable mcp`. Needs the extra: pip install 'steptable[mcp]'.",
    )


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("mcp") is None:
        sys.stderr.write(HINT)
        return 2
    from steptable.agents.server import serve_stdio

    serve_stdio(run_argv)
    return 0


class _Refused(Exception):
    """argparse's refusal, in its words."""


class _SaysWhy(argparse.ArgumentParser):
    """A parser whose refusal comes back to the tool call (the server's stderr reaches no agent)."""

    def error(self, message: str) -> NoReturn:
        raise _Refused(f"{self.prog}: {message}")


def run_argv(argv: list[str], out: TextIO, err: TextIO) -> int:
    """Run ``steptable *argv`` (runs, summary, tail without -f, legend, compare) writing on ``out`` and ``err``;
    the exit status. ``tail`` ends with its cursor line whether or not --since was given. What the command read is
    freed by reference counting when it returns (the server lives as long as the agent's session)."""
    from steptable.cli.main import _parser, refused

    try:  # (the tools build argv from typed arguments; a value argparse refuses is an agent's, as a cursor)
        args = _parser(cls=_SaysWhy).parse_args(argv)
    except _Refused as e:
        err.write(f"{e}\n")
        return 2
    except SystemExit:
        err.write(f"steptable: invalid arguments: {argv}\n")
        return 2
    if (why := refused(args)) is not None:
        err.write(why)
        return 2
    if args.cmd == "tail" and not args.follow:
        from steptable.cli.tail import tail_once

        status, cursor = tail_once(args, out, err)
        err.write(cursor)  # (none where status 2 leaves none to go on from)
        return status
    if args.cmd == "summary":
        from steptable.cli import summary

        return summary.run(args, out, err)
    if args.cmd == "legend":
        from steptable.cli import legend

        return legend.run(args, out, err)
    if args.cmd == "compare":
        from steptable.cli import compare

        return compare.run(args, out, err)
    if args.cmd == "runs":
        from steptable.cli import runs

        return runs.run(args, out, err)
    err.write(f"steptable: {args.cmd} is not run for the MCP tools\n")
    return 2
