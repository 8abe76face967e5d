"""Handlers of the data commands (tail, summary, watch, legend). Heavy imports happen inside each handler."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_commands(sub: Any) -> None:
    """Register the data commands on the CLI's sub-parsers."""


def run_command(args: argparse.Namespace) -> int:
    raise SystemExit(f"steptable: unknown command {args.cmd!r}")


def legend_command(args: argparse.Namespace) -> int:
    from steptable import render
    from steptable.schemas.routing import routing_columns

    if args.schema == "routing" or (not args.paths and args.schema is None):
        cols = routing_columns(modes=("code", "math"), mode_code={"code": "c", "math": "m"}, show_ablate=True)
        sys.stdout.write(render.legend(cols) + "\n")
        return 0
    sys.stderr.write("steptable legend: only --schema routing is available in this build\n")
    return 2
