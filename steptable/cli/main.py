"""The ``steptable`` command: watch, tail, summary, legend, demo. ``python -m steptable`` is the same."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from steptable import __version__

#: the commands (in help order) and their modules under steptable.cli, each with ``add_parser(sub)`` and
#: ``run(args) -> int``
COMMANDS = {
    "demo": "demo", "legend": "legend", "watch": "watch", "tail": "tail", "summary": "summary", "compare": "compare",
    "runs": "runs", "mcp": "mcpcmd", "serve": "serve",
}


def _module(name: str) -> Any:
    """The module of command ``name`` (imported when used: a command's heavy imports stay inside its handlers)."""
    return importlib.import_module(f"steptable.cli.{COMMANDS[name]}")


def _parser(only: str | None = None, cls: type[argparse.ArgumentParser] = argparse.ArgumentParser
            ) -> argparse.ArgumentParser:
    """The command line's parser: every command's, or only command ``only``'s (what a command line naming it can
    reach: each command's module, imported to register its arguments, costs its imports, ~55 ms for all nine);
    ``cls`` the parsers' class (the commands' too)."""
    p = cls(
        prog="steptable",
        description="The per-step metrics table of a training run: live viewer, plain-text tail, agent summaries.",
    )
    p.add_argument("--version", action="version", version=f"steptable {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")

    for name in COMMANDS if only is None else (only,):  # (in this order in the help)
        _module(name).add_parser(sub)
    return p


#: the exit status of a bug of ours (sysexits' EX_SOFTWARE): never 1, which ``--alerts-only`` gives an error alert
INTERNAL_ERROR = 70


def main(argv: Sequence[str] | None = None) -> int:
    """The ``steptable`` command: parse ``argv`` (sys.argv by default), run the command and return its exit
    status (2: a usage error, an unknown schema, a broken schema file or an output that cannot be written;
    70: an internal error, its traceback on stderr)."""
    try:
        return _main(argv)
    except Exception as e:  # a crash must not read as "an error alert fired" (status 1) to a CI job
        import traceback

        from steptable.table.cells import sanitize

        sys.stderr.write(sanitize(traceback.format_exc(), keep_newlines=True))  # (its messages may quote a file)
        sys.stderr.write(f"steptable: internal error ({type(e).__name__}); exit status {INTERNAL_ERROR}\n")
        return INTERNAL_ERROR
    finally:
        if "steptable.schemafiles.files" in sys.modules:  # (a caller in this process is a library user again)
            sys.modules["steptable.schemafiles.files"].set_scope(None)


def _end_now(status: int) -> NoReturn:
    """End the process now with ``status``: a command that sets ``end_at_once`` is done (the watch app has exited
    and put the terminal back; summary's text is out). The interpreter's own teardown (freeing the app's objects, its
    reader thread holding the GIL while it parses a pathological line; a long run's store) took 0.4-0.7 s more for
    watch; the exit handlers still run and the streams are flushed."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(status)


def refused(args: argparse.Namespace) -> str | None:
    """Why parsed arguments are refused before anything is read (a line), or None: an empty path (a shell variable
    that expanded to nothing: "" would be read as the current directory, all of it), an empty --schema."""
    paths = getattr(args, "paths", None)
    if isinstance(paths, list) and any(not str(x).strip() for x in paths):
        return f"steptable {args.cmd}: an empty path (for the current directory, pass .)\n"
    if getattr(args, "schema", None) is not None and not args.schema.strip():
        return f"steptable {args.cmd}: --schema needs a name (leave it out to detect the schema)\n"
    return None


def _main(argv: Sequence[str] | None) -> int:
    if sys.stdout is None:  # started with stdout closed (`>&-`): nothing can be written; say so where possible
        if sys.stderr is not None:
            sys.stderr.write("steptable: no standard output to write to\n")
        return 2
    for stream in (sys.stdout, sys.stderr):
        _tolerant(stream)
    if argv is None and sys.stderr is not None:  # (the program: a caller in-process keeps its own stderr)
        sys.stderr = _Diagnostics(sys.stderr)  # type: ignore[assignment]
    words = sys.argv[1:] if argv is None else list(argv)
    parser = _parser(words[0] if words and words[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    if args.cmd is None:  # a command is required: the help, and the status of a usage error
        parser.print_help(sys.stderr)
        return 2
    if (why := refused(args)) is not None:
        sys.stderr.write(why)
        return 2
    if (args.cmd == "watch" or (args.cmd == "demo" and not args.stdout)) and not _terminal():
        # Textual would draw to a pipe and wait for keys that never come: say so instead of hanging.
        hint = "steptable demo --stdout prints the run instead" if args.cmd == "demo" else \
            "for pipes, CI and agents: steptable tail -f PATH, or steptable summary PATH"
        sys.stderr.write(f"steptable {args.cmd}: the watch app needs a terminal (stdin and stdout); {hint}\n")
        return 2
    try:
        if hasattr(args, "schema_file"):  # the log directories' files that apply: those of the paths given
            _scope(args)
        if getattr(args, "schema", None) and args.cmd in ("tail", "summary"):
            from steptable.schemafiles.resolve import get_schema

            get_schema(args.schema, near=args.paths)  # an unknown name: said now, not after a scan of the tree
        status = int(_module(args.cmd).run(args))
        if argv is None and getattr(args, "end_at_once", False):  # (the program itself, not a caller in-process)
            sys.stdout.flush()  # (here, where a full disk is said as one line and status 2)
            _end_now(status)
        return status
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


def _scope(args: argparse.Namespace) -> None:
    """Let only the schema files at or below the paths given apply (and ``--schema-file``, read now: a broken one is
    said before anything is scanned)."""
    from steptable.schemafiles.files import set_scope
    from steptable.schemafiles.resolve import user_schemas

    set_scope(args.paths or ["."], args.schema_file)
    if args.schema_file is not None:
        user_schemas(".")


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


class _Diagnostics:
    """The program's stderr: a write that fails (a full disk, a reader gone) drops it and every later one. Problems
    are said on stderr, the command's output goes to stdout: a stderr that cannot take them must not cost the
    output or change the exit status."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._broken = False

    def write(self, text: str) -> int:
        if not self._broken:
            try:
                self._stream.write(text)
            except (OSError, ValueError):  # (ValueError: a closed stream)
                self._broken = True
        return len(text)

    def flush(self) -> None:
        if not self._broken:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._broken = True

    def __getattr__(self, name: str) -> Any:  # (encoding, isatty, fileno... as the stream has them)
        return getattr(self._stream, name)


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
