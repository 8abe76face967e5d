"""``steptable demo``: a live synthetic three-arm routing run, watched in the app or printed to stdout."""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from typing import Any


def add_parser(sub: Any) -> None:
    """Register ``demo`` on the CLI's sub-parsers."""
    d = sub.add_parser("demo", help="a live synthetic three-arm routing run (opens the watch app)")
    d.add_argument("--dir", default=None, help="write the run here and keep it (default: a temporary directory, "
                   "removed at the end)")
    d.add_argument("--steps", type=int, default=2000, help="steps per arm (default 2000)")
    d.add_argument("--interval", type=float, default=0.5, help="seconds between steps (default 0.5)")
    d.add_argument("--stdout", action="store_true", help="print the rows to stdout instead of opening the app")
    d.add_argument("--theme", default=None, help="app theme (dark, light, high-contrast or any Textual theme)")


def run(args: argparse.Namespace) -> int:
    """Run the demo (the app, or rows on stdout with ``--stdout``); returns its exit status."""

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
    finally:  # (a temporary run's files never outlive the demo)
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
