"""``steptable watch PATH...``: the live viewer (the Textual app in steptable.app)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    """Register ``watch`` on the CLI's sub-parsers."""
    from steptable.cli.reading import positive_seconds

    w = sub.add_parser("watch", help="the live viewer: per-arm tables, legend, diagnostics, charts")
    w.add_argument("paths", nargs="+", help="log directories or metrics files (searched recursively)")
    w.add_argument(
        "--poll", type=positive_seconds, default=None, help="poll files every SECONDS instead of notifications"
    )
    w.add_argument("--theme", default=None, help="dark, light, high-contrast or any Textual theme")
    w.add_argument("--wait", action="store_true",
                   help="follow a path that does not exist yet (a run about to start), as tail -f and serve do, "
                   "instead of refusing it")
    w.add_argument("--schema", default=None, help="column set to use instead of the detected one")
    w.add_argument("--schema-file", metavar="PATH", default=None,
                   help="a schema file (TOML) to apply; a log directory's steptable.toml applies only "
                   "at or below the paths given")
    w.add_argument("--group", default=None, metavar="REGEX",
                   help="the seed part of a run's name, as compare takes it: runs that differ only by it fold into "
                   "one arm's table of means (default: the runs' steptable.toml [compare] group, else a trailing "
                   "seed<N>)")
    w.set_defaults(end_at_once=True)  # once the app is gone, the process ends without the interpreter's teardown


def run(args: argparse.Namespace) -> int:
    """Run the app over ``args.paths`` until it is quit; returns its exit status."""
    import gc

    # The start makes Textual's and steptable's objects, which live for the session: a collection then only scans
    # them (a full one took 18 ms of a 330 ms first frame). Off from before the imports until the first rows are on
    # screen (run_watch enables it again then, or when it returns).
    paused = gc.isenabled()
    gc.disable()
    try:
        from steptable.app import run_watch
    except BaseException:
        if paused:
            gc.enable()
        raise
    return run_watch(list(args.paths), poll=args.poll, theme=args.theme, schema=args.schema, gc_paused=paused,
                     wait=args.wait, group=args.group)
