"""The ``steptable`` command: watch, tail, summary, legend, demo. ``python -m steptable`` is the same."""

from __future__ import annotations

import argparse
import errno
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence

from steptable import __version__


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="steptable",
        description="The per-step metrics table of a training run: live viewer, plain-text tail, agent summaries.",
    )
    p.add_argument("--version", action="version", version=f"steptable {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")

    d = sub.add_parser("demo", help="a live synthetic three-arm routing run (opens the watch app)")
    d.add_argument("--dir", default=None, help="write the run here and keep it (default: a temporary directory, "
                   "removed at the end)")
    d.add_argument("--steps", type=int, default=2000, help="steps per arm (default 2000)")
    d.add_argument("--interval", type=float, default=0.5, help="seconds between steps (default 0.5)")
    d.add_argument("--stdout", action="store_true", help="print the rows to stdout instead of opening the app")
    d.add_argument("--theme", default=None, help="app theme (dark, light, high-contrast or any Textual theme)")

    lg = sub.add_parser("legend", help="print the legend of the columns a run has")
    lg.add_argument("paths", nargs="*", help="run files or directories")
    lg.add_argument("--schema", default=None, help="a schema name instead of a path (e.g. routing)")

    from steptable.cli.commands import add_commands

    add_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdout is None:  # started with stdout closed (`>&-`): nothing can be written; say so where possible
        if sys.stderr is not None:
            sys.stderr.write("steptable: no standard output to write to\n")
        return 2
    for stream in (sys.stdout, sys.stderr):
        _tolerant(stream)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.cmd is None:  # a command is required: the help, and the status of a usage error
        parser.print_help(sys.stderr)
        return 2
    if getattr(args, "schema", None) is not None and not args.schema.strip():
        sys.stderr.write(f"steptable {args.cmd}: --schema needs a name (leave it out to detect the schema)\n")
        return 2
    if (args.cmd == "watch" or (args.cmd == "demo" and not args.stdout)) and not _terminal():
        # Textual would draw to a pipe and wait for keys that never come: say so instead of hanging.
        hint = "steptable demo --stdout prints the run instead" if args.cmd == "demo" else \
            "for pipes, CI and agents: steptable tail -f PATH, or steptable summary PATH"
        sys.stderr.write(f"steptable {args.cmd}: the watch app needs a terminal (stdin and stdout); {hint}\n")
        return 2
    try:
        if getattr(args, "schema", None) and args.cmd in ("tail", "summary"):
            from steptable.schemas import get_schema

            get_schema(args.schema, near=args.paths)  # an unknown name: said now, not after a scan of the tree
        if args.cmd == "demo":
            return _demo(args)
        if args.cmd == "legend":
            return _legend(args)
        from steptable.cli.commands import run_command

        return run_command(args)
    except KeyboardInterrupt:
        return 130
    except (KeyError, ValueError) as e:
        from steptable.schemas import SchemaFileError
        from steptable.table.formatting import sanitize

        if isinstance(e, SchemaFileError):  # a user's schema file: name the file and line, no traceback
            sys.stderr.write(f"steptable: {sanitize(str(e))}\n")  # paths and names come from the disk
            return 2
        if isinstance(e, KeyError) and "unknown schema" in str(e):
            sys.stderr.write(f"steptable: {sanitize(str(e.args[0]))}\n")
            return 2
        raise
    except BrokenPipeError:
        # `steptable tail ... | head`: the reader left; that is not an error.
        try:
            sys.stdout = open("/dev/null", "w")
        except OSError:
            pass
        return 0
    except OSError as e:
        if not _stdout_failed(e):
            raise
        # a full disk or a dead stream under stdout: one line and status 2 (1 means "an error alert fired")
        try:
            sys.stdout = open("/dev/null", "w")  # the interpreter's final flush must not fail again
        except OSError:
            pass
        sys.stderr.write(f"steptable {args.cmd}: cannot write the output ({e.strerror or e})\n")
        return 2


def _tolerant(stream: object) -> None:
    """A stream whose encoding cannot hold the table's characters (a cp1252 redirect, PYTHONIOENCODING=ascii)
    writes them as ``?``: a traceback after half a table helps nobody (StepLogger's sink does the same)."""
    try:
        "─↑↓…".encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        try:
            stream.reconfigure(errors="replace")  # type: ignore[attr-defined]
        except (AttributeError, ValueError, OSError):  # (not a text file: a test's StringIO)
            pass


def _stdout_failed(e: OSError) -> bool:
    """Was ``e`` raised writing stdout? (A path in the error means a file the command tried to read.)"""
    if e.filename is not None:
        return False
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return e.errno in (errno.ENOSPC, errno.EIO, errno.EBADF, errno.EDQUOT)


def _terminal() -> bool:
    """stdin and stdout are a terminal, or the app runs under textual-serve (`steptable serve`): its web driver
    talks to the browser over the pipes."""
    if os.environ.get("TEXTUAL_DRIVER", "").endswith("web_driver:WebDriver"):
        return True
    try:
        return sys.stdin is not None and sys.stdout is not None and sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def _demo(args: argparse.Namespace) -> int:

    if args.steps < 1 or not 0 <= args.interval < math.inf:
        sys.stderr.write("steptable demo: --steps must be 1 or more and --interval a number of seconds >= 0\n")
        return 2

    if args.dir:
        return _demo_in(args, args.dir)
    from steptable.app.signals import end_on_signals

    out = tempfile.mkdtemp(prefix="steptable-demo-")
    try:
        with end_on_signals():  # (a TERM before the app is up ends the demo here, the directory removed below)
            return _demo_in(args, out)
    finally:  # (a demo left 2000 steps x 3 arms of files behind each time)
        shutil.rmtree(out, ignore_errors=True)
        if sys.stderr is not None:  # say the files are gone; --stdout's end named some of them (table.txt)
            named = " (those named above too)" if args.stdout else ""
            try:
                sys.stderr.write(f"steptable demo: {out} was temporary and is removed with its files{named}; "
                                 "--dir DIR keeps the run\n")
            except OSError:  # a hang-up: the terminal is gone
                pass


def _demo_in(args: argparse.Namespace, out: str) -> int:
    from steptable.demo.run import run_demo

    if args.stdout:
        import threading
        from typing import TextIO, cast

        from steptable.demo.run import StdoutGuard
        from steptable.logger.setup import setup_logging

        stop = threading.Event()  # set when the reader of stdout went away: the demo ends quietly (status 0)
        real = sys.stdout
        sys.stdout = cast(TextIO, StdoutGuard(real, stop))
        try:
            setup_logging("demo", log_dir=out)
            run_demo(out, steps=args.steps, interval=args.interval, console=True, stop=stop)
        finally:
            sys.stdout = real
        return 0
    from steptable.app.demo import run_demo_app

    return run_demo_app(out, steps=args.steps, interval=args.interval, theme=args.theme)


def _legend(args: argparse.Namespace) -> int:
    from steptable.cli.commands import legend_command

    return legend_command(args)
