"""``steptable legend [PATH...] [--schema NAME]``: the legend of the columns a run has (or a schema declares)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO


def add_parser(sub: Any) -> None:
    """Register ``legend`` on the CLI's sub-parsers."""
    lg = sub.add_parser("legend", help="print the legend of the columns a run has")
    lg.add_argument("paths", nargs="*", help="run files or directories")
    lg.add_argument("--schema", default=None, help="a schema name instead of a path (e.g. routing)")
    lg.add_argument("--schema-file", metavar="PATH", default=None,
                    help="a schema file (TOML) to apply; a log directory's steptable.toml applies only "
                   "at or below the paths given")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``steptable legend``: print the legend of the runs' columns (of ``--schema``, or routing's, without a
    path); returns 0, or 2 when nothing readable was found or a path is missing."""
    from steptable.schemafiles.resolve import get_schema, run_schema
    from steptable.schemas import legend_for
    from steptable.table.formatting import sanitize

    out, err = out or sys.stdout, err or sys.stderr
    missing: list[str] = []
    if args.paths:
        from steptable.cli.reading import read_runs
        from steptable.ingest.files.discover import nothing_found

        follower, stores = read_runs(args.paths, err)
        if not stores:
            err.write(f"steptable legend: {sanitize(nothing_found(args.paths))}\n")
            return 2
        if follower.read_nothing():  # a legend of nothing read would be made up
            err.write("steptable legend: no readable rows\n")
            return 2
        if not any(len(s) for s in stores):  # (a run just started: its columns are not known yet)
            err.write(f"steptable legend: no rows yet in {sanitize(', '.join(str(s.path) for s in stores))}\n")
            return 2
        text = legend_for(stores, get_schema(args.schema, near=args.paths) if args.schema else None, run_schema)
        if not args.schema:
            from steptable.schemafiles.resolve import unused_files

            for e in unused_files(stores):
                err.write(f"steptable legend: {sanitize(str(e))} (the file is not used)\n")
        from steptable.cli.tail import missing_paths

        missing = missing_paths(args.paths)
    else:
        try:
            text = legend_for(get_schema(args.schema or "routing", near="."))
        except KeyError as e:
            err.write(f"steptable legend: {e.args[0]}\n")
            return 2
        if not args.schema:  # say what this is: a run's own columns need its path
            text = "(no path: the routing schema's columns; steptable legend PATH shows a run's own)\n" + text
    from steptable.schemas.legend import marks_text

    out.write(text.rstrip("\n") + "\n\n" + marks_text() + "\n")
    for p in missing:  # a legend of some of the paths given must not pass for one of all
        err.write(f"steptable legend: no such path: {sanitize(p)}\n")
    return 2 if missing else 0
