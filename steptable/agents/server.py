"""``steptable mcp``: an MCP server over stdio (the official ``mcp`` SDK, extra ``steptable[mcp]``) whose tools return
the same text as the CLI commands they run: ``runs``, ``summary``, ``tail`` (rows after a cursor, and the new
cursor), ``alerts``, ``legend`` and ``compare``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from steptable.agents import tools
from steptable.agents.tools import CommandFailed, Runner

INSTRUCTIONS = (
    "steptable reads the per-step metrics of ML training runs (JSONL, CSV, console logs, TensorBoard, W&B/trackio "
    "exports...). Start with summary(path) for a compact overview (of a sweep: its best, worst and diverged runs), "
    "runs(path) for the runs' names; follow a run with "
    "tail(path, run, since_step=<cursor>) which returns the rows after the cursor (the first 100: max_rows) and ends "
    "with the next cursor; "
    "alerts(path, since_step) says what went wrong (NaN, blow-ups, stalls, crashes); legend(path) explains the "
    "column names; compare(path, baseline) says which arm (runs grouped by name, seeds together) wins each metric "
    "and whether beyond chance. Replies are the CLI's text: where it names an option, the tool's parameter does "
    "that (--since: since_step, --run: run, --all: every_run (summary) or every_arm (compare), --metrics: metrics, "
    "--window: window, --group: group, --limit: max_runs)."
)


def build(runner: Runner) -> Any:
    """The server (an ``mcp.server.mcpserver.MCPServer``) with the tools bound to ``runner``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from steptable import __version__

    def said(fn: Callable[..., str]) -> Callable[..., str]:
        """A failed command's own words reach the agent; any other exception its type and message, one line (the
        SDK's own wrapper said "Error executing tool X" and no reason)."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> str:
            try:
                return fn(*args, **kwargs)
            except CommandFailed as e:
                raise ToolError(str(e)) from e
            except Exception as e:  # (a bug of steptable's: what it was, without the traceback)
                said = " ".join(str(e).split())  # (the SDK puts "Error executing tool NAME: " before it)
                raise ToolError(type(e).__name__ + (f": {said}" if said else "")) from e

        return wrapper

    @said
    def runs(path: str, max_runs: int = tools.RUN_LINES) -> str:
        """The runs under path (a directory or metrics file), one line each, the first max_runs by id (default 50;
        0 = all; a line says how many more): id, arm, rows, steps, age of the last row, how it ended. The id or the
        arm names a run for tail and summary. For a sweep's best, worst and diverged runs, summary is shorter."""
        return tools.runs(runner, path, max_runs)

    @said
    def summary(path: str, run: str | None = None, every_run: bool = False) -> str:
        """A compact summary of each run under path (or only `run`, an id or arm from runs): steps, rate, age,
        then first/last/min/max/tr% (recent trend in percent; = within the noise) of its key columns, then
        its alerts. Many runs (a sweep): their ranking by a metric instead, and how many diverged, crashed or
        stalled; every_run=True gives each run's block all the same."""
        return tools.summary(runner, path, run, every_run)

    @said
    def tail(path: str, run: str, since_step: int | str | None = None, columns: str | None = None,
             last: int | None = None, max_rows: int = tools.PAGE_ROWS) -> str:
        """The run's rows as a fixed-width table: those at steps after since_step, or without since_step the last
        `last` rows (default 20; 0 = all; refused with since_step: the rows between would be lost); the earliest
        max_rows of them (default 100, shared among an arm's runs; 0 = all; a line says how many are left, the
        cursor where they start).
        columns: comma-separated globs of keys or headers. The last line gives the cursor: pass it as since_step
        next time, as written, to get the rows after those returned (120:14:3@Kq3 for one run, a token for several:
        where each run was left, so that a row whose evaluation came after it was returned comes again, whole, and
        so does an earlier row changed since; a resume to a step at or before it is said, with the rows from there;
        a run that appeared since comes from its start). A plain step (120) is every run's."""
        return tools.tail(runner, path, run, since_step, columns, last, max_rows)

    @said
    def alerts(path: str, since_step: int | str | None = None, run: str | None = None, from_line: int = 0,
               max_lines: int = tools.REPLY_LINES, pages_read: str | None = None) -> str:
        """Alert lines of the runs under path (or only `run`, an id or arm from runs): level E or W, run, step,
        column, what happened; all, or those at steps after since_step (a stall, a crash or an interruption is
        always told; a run that ended normally raises none: runs says "ended"); lines from_line.. of them, at most
        max_lines (default 100; 0 = all; a line says how many are left, and the from_line and pages_read of the
        next page: where new alerts moved the lines read, that page says so). The last line gives the cursor to pass
        back as written, once every page was read (where each run was left: an alert of a row changed since, as a
        late evaluation's, is told then, and a run that appeared since is checked from its start)."""
        return tools.alerts(runner, path, since_step, run, from_line, max_lines, pages_read)

    @said
    def legend(path: str, from_line: int = 0, max_lines: int = tools.REPLY_LINES) -> str:
        """What each column of the runs under path means (header, key, meaning, whether higher is better): lines
        from_line.. of it, at most max_lines (default 100; 0 = all; a line says how many are left)."""
        return tools.legend(runner, path, from_line, max_lines)

    @said
    def compare(path: str, baseline: str, x: str | None = None, window: str | None = None,
                metrics: str | None = None, every_arm: bool = False, from_line: int = 0,
                max_lines: int = tools.REPLY_LINES, group: str | None = None) -> str:
        """Which arm wins: per metric, each arm's mean over a window of x (default: the last 10% of the range every
        run reached; the header names the run that ends it) with its 95% interval, and its difference from the
        baseline arm (better/worse where the interval excludes 0); then, per metric with a good direction, the best
        arm and how many arms beat the baseline beyond chance. x: step (default), tokens, samples, time or a key;
        window: a fraction (0.2) or a range (A:B); metrics: comma-separated globs of the keys to compare. Past 10
        arms the table lists the baseline and the arms of the best means (every_arm=True: all of them). group: a
        regex of the seed part of the runs' names, where the default (routeA_seed1, routeA-s2, routeA/seed3) does
        not find it (lr1e-5_seed3_r12: '_seed\\d+_r\\d+'); a named group 'arm' names the arm instead. Lines
        from_line.. of the reply, at most max_lines (default 100; 0 = all; a line says how many are left)."""
        return tools.compare(runner, path, baseline, x, window, metrics, every_arm, from_line, max_lines, group)

    return MCPServer("steptable", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING",
                     tools=[_strict(fn) for fn in (runs, summary, tail, alerts, legend, compare)])


def _strict(fn: Callable[..., str]) -> Any:
    """The SDK's tool for ``fn``, refusing an argument ``fn`` does not take: the SDK drops one silently, so an
    agent that wrote ``since`` for ``since_step`` got every row back as if it had asked for them. The schema the
    client reads says so too (``additionalProperties: false``)."""
    from mcp.server.mcpserver.tools import Tool
    from pydantic import ConfigDict, model_validator

    tool = Tool.from_function(fn)
    base = tool.fn_metadata.arg_model
    known = list(base.model_fields)

    # (a subclass of the model the SDK made for this tool at run time)
    class Strict(base):  # type: ignore[misc, valid-type]
        model_config = ConfigDict(**{**base.model_config, "extra": "forbid", "title": base.__name__})

        @model_validator(mode="before")
        @classmethod
        def _no_unknown(cls, data: Any) -> Any:
            if isinstance(data, dict) and (unknown := [k for k in data if k not in known]):
                raise ValueError(f"{tool.name} has no parameter {', '.join(map(repr, unknown))}; "
                                 f"its parameters: {', '.join(known)}")
            return data

    tool.fn_metadata.arg_model = Strict
    tool.parameters = Strict.model_json_schema(by_alias=True)
    return tool


def serve_stdio(runner: Runner) -> None:
    """Serve the tools on stdin/stdout until the client closes them."""
    build(runner).run("stdio")
