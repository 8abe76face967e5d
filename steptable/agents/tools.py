"""The MCP tools as plain functions over a command runner: each builds the argument list of a CLI command, runs it
with its output captured and returns that text (stdout, then the command's notes on stderr). No SDK import here.

The runner is the CLI's (``steptable.cli.mcpcmd.run_argv``): ``runner(argv, out, err) -> status``, as the command
line would run ``steptable *argv``; ``tail`` also writes its cursor line on ``err``.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
from typing import TextIO

Runner = Callable[[list[str], TextIO, TextIO], int]
#: the cursor line ``tail --since`` ends with (steptable.cli.tailcursor.cursor_line): a step, one run's
#: step:cells[:edits]@key, or the token of several runs
CURSOR = re.compile(r"^steptable tail: cursor (?:-?\d+(?::\d+){0,2}(?:@[\w-]+)?|[A-Za-z][\w-]*) ", re.MULTILINE)
#: a cursor as tail gives it: a step, or a string (steptable.cli.tailcursor)
Cursor = int | str


class CommandFailed(Exception):
    """The command ended with status 2 (a path not there, no run of that name, nothing readable): its text says
    why."""


def run(runner: Runner, argv: list[str], page: Callable[[str], str] | None = None) -> str:
    """``steptable *argv``'s stdout and stderr text (its stdout through ``page`` where given: :func:`lines_page`);
    CommandFailed on status 2. Status 1 (an error alert under --alerts-only) is an answer, not a failure; so is a
    status 2 that came with a cursor (alerts of the runs read, where another run has no rows yet: its line says
    so)."""
    out, err = io.StringIO(), io.StringIO()
    status = runner(argv, out, err)
    text = out.getvalue() + err.getvalue()
    if status == 2 and not CURSOR.search(err.getvalue()):
        raise CommandFailed(text.strip() or f"steptable {argv[0]} failed")
    text = (page(out.getvalue()) if page is not None else out.getvalue()) + err.getvalue()
    return text if text.strip() else "(nothing)\n"


#: lines of a legend, compare or alerts reply by default (a 3,000-key run's legend was 292,404 characters, its
#: compare 334,516; a 200-key compare 28,819; a 300-run sweep's alerts 44,408)
REPLY_LINES = 100
#: characters of those lines at most, whatever their number (a key name may be long)
REPLY_CHARS = 16_000


def lines_page(text: str, from_line: int, max_lines: int, again: str) -> str:
    """Lines ``from_line``.. of ``text`` (0 is the first), at most ``max_lines`` of them and :data:`REPLY_CHARS`
    characters (one line at least; 0: every line), then, where lines are left, one that says how many and how
    to ask for them: ``again`` (``{next}`` in it: the line to start from; ``{key}``: :func:`page_key` of the lines
    before it) or max_lines=0."""
    lines = text.splitlines(keepends=True)
    if lines and from_line >= len(lines):  # (not "(nothing)": the reply is not empty, the page is past its end)
        return f"(from_line={from_line} is past the end: the reply has {len(lines)} line(s); from_line=0 starts it)\n"
    stop, size = from_line, 0
    while stop < len(lines) and (not max_lines or stop - from_line < max_lines):
        size += len(lines[stop])
        if max_lines and size > REPLY_CHARS and stop > from_line:
            break
        stop += 1
    shown = "".join(lines[from_line:stop])
    if stop >= len(lines):
        return shown
    more = again.format(next=stop, key=page_key(lines[:stop]))
    return shown + f"({len(lines) - stop} more line(s) of {len(lines)}: {more}; max_lines=0 all)\n"


def page_key(lines: list[str]) -> str:
    """A check of ``lines`` (the pages read so far): the next page's reply tells whether they are still the
    reply's first lines."""
    return hashlib.blake2b("".join(lines).encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def _since(since_step: Cursor | None) -> list[str]:
    return [] if since_step is None else [f"--since={since_step}"]


#: runs the runs tool lists by default (a 200-run sweep was 21,422 characters)
RUN_LINES = 50


def runs(runner: Runner, path: str, max_runs: int = RUN_LINES) -> str:
    if max_runs < 0:
        raise CommandFailed(f"max_runs must be 0 or more, got {max_runs}")
    return run(runner, ["runs", f"--limit={max_runs}", "--", path])


def summary(runner: Runner, path: str, run_name: str | None = None, every_run: bool = False) -> str:
    argv = ["summary", *([f"--run={run_name}"] if run_name else []), *(["--all"] if every_run else [])]
    return run(runner, [*argv, "--", path])


#: rows a tail returns by default (a 3,000-row run after cursor 0 was 634,305 characters of reply)
PAGE_ROWS = 100
#: the last rows a tail without a cursor is of by default (the CLI's -n)
LAST_ROWS = 20


def tail(runner: Runner, path: str, run_name: str, since_step: Cursor | None = None, columns: str | None = None,
         last: int | None = None, max_rows: int = PAGE_ROWS) -> str:
    if last is not None and last < 0:
        raise CommandFailed(f"last must be 0 or more, got {last}")
    if max_rows < 0:
        raise CommandFailed(f"max_rows must be 0 or more, got {max_rows}")
    if last is not None and since_step is not None:  # (the newest `last` after the cursor: the rows between lost)
        raise CommandFailed("last and since_step do not go together: with since_step the rows after it come "
                            "max_rows at a time, the cursor where the next ones start; last is the newest rows "
                            "without a cursor")
    argv = ["tail", f"--run={run_name}", *_since(since_step)]
    if since_step is None:  # (the last rows come a page at a time too: last=0 of a 100k-step run is 20 MB)
        argv.append(f"--last={LAST_ROWS if last is None else last}")
    argv.append(f"--page={max_rows}")
    if columns:
        argv.append(f"--columns={columns}")
    return run(runner, [*argv, "--", path])


def alerts(runner: Runner, path: str, since_step: Cursor | None = None, run_name: str | None = None,
           from_line: int = 0, max_lines: int = REPLY_LINES, pages_read: str | None = None) -> str:
    """The alert lines from ``from_line`` (:func:`lines_page`). ``pages_read``: the key the page before gave; where
    the lines before ``from_line`` are no longer those (a run wrote alerts between the calls, which moved the
    lines on), CommandFailed: this page would skip some, and its cursor would pass them."""
    _paging(from_line, max_lines)
    argv = ["tail", "--alerts-only", *([f"--run={run_name}"] if run_name else []), *_since(since_step)]

    def page(text: str) -> str:
        lines = text.splitlines(keepends=True)
        if from_line and pages_read is not None and page_key(lines[:from_line]) != pages_read:
            raise CommandFailed(f"the alerts changed since the page before (new alerts came; {len(lines)} line(s) "
                                "now): from_line=0 with the same since_step reads them again")
        return lines_page(text, from_line, max_lines, "from_line={next}, pages_read={key} with the same since_step "
                          "gives the next (the cursor below is past them all)")

    return run(runner, [*argv, "--", path], page)


def _paging(from_line: int, max_lines: int) -> None:
    if from_line < 0:
        raise CommandFailed(f"from_line must be 0 or more, got {from_line}")
    if max_lines < 0:
        raise CommandFailed(f"max_lines must be 0 or more, got {max_lines}")


def legend(runner: Runner, path: str, from_line: int = 0, max_lines: int = REPLY_LINES) -> str:
    _paging(from_line, max_lines)
    return run(runner, ["legend", "--", path],
               lambda text: lines_page(text, from_line, max_lines, "from_line={next} gives the next"))


def compare(runner: Runner, path: str, baseline: str, x: str | None = None, window: str | None = None,
            metrics: str | None = None, every_arm: bool = False, from_line: int = 0,
            max_lines: int = REPLY_LINES, group: str | None = None) -> str:
    _paging(from_line, max_lines)
    argv = ["compare", f"--baseline={baseline}", *([f"--x={x}"] if x else [])]
    argv += [f"--window={window}"] if window else []
    argv += [f"--metrics={metrics}"] if metrics else []
    argv += [f"--group={group}"] if group else []
    argv += ["--all"] if every_arm else []
    return run(runner, [*argv, "--", path],
               lambda text: lines_page(text, from_line, max_lines,
                                       "metrics='GLOBS' compares fewer, from_line={next} gives the next"))
