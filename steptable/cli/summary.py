"""``steptable summary PATH...``: one compact block per run, for agents, CI logs and reports."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO


def add_parser(sub: Any) -> None:
    """Register ``summary`` on the CLI's sub-parsers."""
    from steptable.cli.reading import non_negative

    s = sub.add_parser(
        "summary", help="one compact block per run (for agents, CI logs and reports)",
        description="One compact block per run: first, last, min, max and tr% of its key columns, then its alerts. "
        "tr% is the recent trend: the trimmed mean of the last 10% of a column's values against the 10% before, in "
        "percent of that level (or of the noise, when the level is near zero); = when the difference is within the "
        "noise (2 standard errors).",
        epilog="Exit status: 0 when the runs were read, whatever their alerts say (error alerts included: read the "
        "alerts lines; `steptable tail --alerts-only PATH` exits 1 on an error alert); 2 for a usage error, a path "
        "that does not exist, --columns that match no column at all, no metrics file found, no readable row (only "
        "empty files: no rows yet), or a run that could not be read (the summary of what was read is still printed, "
        "except when nothing was found).",
    )
    s.add_argument("paths", nargs="+", help="metrics files or directories")
    s.add_argument("--columns", default="", help="comma-separated keys to summarise (default: the table's columns, "
                   "then evaluation scores, then the most informative of the rest)")
    s.add_argument("--max-columns", type=non_negative, default=None,
                   help="columns chosen automatically for each trainer's runs (default 20; several arms of one "
                   "trainer: as many whole columns as fit 15 rows, the others named)")
    s.add_argument("--format", choices=("text", "md"), default="text", help="plain text (default) or a markdown table")
    s.add_argument("--align", action="store_true", help="pad every column (easier on eyes, costs tokens)")
    s.add_argument("--run", default=None, metavar="NAME", help="only the run with this id or arm (see steptable runs)")
    s.add_argument("--schema-file", metavar="PATH", default=None,
                   help="a schema file (TOML) to apply; a log directory's steptable.toml applies only "
                   "at or below the paths given")
    s.add_argument("--top", type=int, default=None, metavar="K",
                   help="a sweep: the K best and K worst runs by --by, one line each (reads only each file's end; "
                        "W&B, TensorBoard, trackio and HF runs whole)")
    s.add_argument("--by", default=None, metavar="METRIC", help="the metric --top ranks by (default: the sweep's "
                   "first reward/score key, else loss)")
    s.add_argument("--stat", choices=("last", "mean", "best"), default="mean",
                   help="what --top ranks: the last value, the mean of the newest rows (default) or their best")
    s.add_argument("--lower", action="store_true", help="for --top: lower is better (default: the schema's word; "
                   "where it says none, highest first, not called better)")
    s.add_argument("--all", action="store_true", help="every run's block, however many runs (a path of more runs "
                   "than a summary's rows hold, 15, gives the --top ranking by default)")
    # (the interpreter's teardown of a long run's store, ~20 ms for 100k rows, is skipped once the text is out)
    s.set_defaults(end_at_once=True)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``steptable summary``: print one block per run found under ``args.paths`` (on ``out``, problems on ``err``;
    default stdout and stderr); returns 0, or 2 when nothing readable was found, a path is missing or unreadable,
    ``--run`` names no run, or --columns matched nothing (the summary of what was read is still printed)."""
    from steptable.alerts.replaced import read_replaced
    from steptable.cli.reading import named, read_runs
    from steptable.ingest.files.discover import nothing_found
    from steptable.summary.alertpass import AlertsAhead
    from steptable.table.formatting import sanitize

    out, err = out or sys.stdout, err or sys.stderr
    if args.top is not None or args.by is not None:
        from steptable.cli.sweeptop import run_top

        return run_top(args, out, err) or 0  # (None only for a bound: none given here)
    if not getattr(args, "all", False) and getattr(args, "run", None) is None and not args.columns:
        from steptable.cli.sweeptop import run_top
        from steptable.ingest.files.discover import discover
        from steptable.summary.report import ARM_ROWS

        # a sweep: each run's block would be a line of every column, past the rows a summary holds (an agent's
        # budget); its ranking instead, read from each file's end (candidates first: a file may be no run)
        cands = discover(args.paths)
        if len(cands) > ARM_ROWS and (status := run_top(args, out, err, ARM_ROWS, cands)) is not None:
            out.write("(each run's block and its alerts: --all; one run's: --run NAME)\n")
            return status
    only = getattr(args, "run", None)
    follower, stores = read_runs(args.paths, err, read_replaced, split=True, keep=() if only is None else (only,))
    if not stores:
        err.write(f"steptable summary: {sanitize(nothing_found(args.paths))}\n")
        return 2
    if only is not None:  # --run: the runs of that id or arm
        stores = named(stores, only)
        if not stores:
            from steptable.cli.reading import no_run

            err.write(no_run("summary", only, follower.stores))
            return 2
    now = time.time()
    alerts = AlertsAhead(stores, now)  # (in worker processes where that pays, while the rest is worked out)
    try:
        return _report(args, out, err, follower, stores, now, alerts)
    finally:
        alerts.close()


def _report(args: argparse.Namespace, out: TextIO, err: TextIO, follower: Any, stores: list[Any], now: float,
            alerts: Mapping[str, list[Any]]) -> int:
    """The rest of :func:`run`, once the runs are read and their alert pass started: the text and the status."""
    from steptable.ingest.files.discover import missing_paths
    from steptable.schemafiles.resolve import by_schema, schema_file_notes, unused_files
    from steptable.schemas import layout
    from steptable.schemas.arrange import matches, unmatched
    from steptable.summary.report import ARM_ROWS, summarize
    from steptable.table.formatting import sanitize

    for e in unused_files(stores):
        err.write(f"steptable summary: {sanitize(str(e))} (the file is not used)\n")
    # Rows are named by the same short headers as the table (pg_loss for actor/pg_loss).
    labels: dict[str, str] = {}
    hidden: set[str] = set()  # keys a schema keeps out of its table ("same as step", legacy mirrors): not picked
    shown: set[str] = set()
    groups = by_schema(stores)
    for schema, group in groups:  # each trainer's runs named as its own table names them
        for c in layout(group, schema, measure=False):  # (its keys, headers and order: not its widths)
            for k in (c.key, *c.aliases):  # (a run may log the column under an alias: its row is named the same)
                labels.setdefault(k, c.header.strip())
                shown.add(k)
        hidden |= {k for s in group for k in s.keys if (r := schema.rule(k)) is not None and r.hide}
    hidden -= shown  # (a key one schema hides may be another run's column)
    columns = None
    nothing_picked = False
    patterns = [c.strip() for c in args.columns.split(",") if c.strip()]
    if patterns:  # globs over keys and the headers the rows are named by, as `tail --columns` takes them
        names = [(k, labels.get(k, k)) for k in dict.fromkeys(k for s in stores for k in s.keys)]
        chosen = dict.fromkeys(k for p in patterns for k, h in names if matches(k, h, p))  # in the order asked
        columns = list(chosen)
        for p in unmatched(patterns, names):
            err.write(f"steptable summary: --columns {sanitize(p)!r} matches no column\n")
        if not columns:  # every pattern missed: a summary of no column is no answer
            nothing_picked = True
    comparison: list[str] = []
    if len(groups) == 1 and len(stores) > 1:  # (arms of one trainer only; one run is one arm: no comparison)
        from steptable.cli.compare import summary_comparison

        comparison = summary_comparison(stores, args.paths[0])
    text = summarize(stores, columns=columns, now=now, fmt=args.format, alerts=alerts,
                     max_columns=20 if args.max_columns is None else args.max_columns, labels=labels,
                     align=args.align, skip=hidden, groups=groups, comparison=comparison,
                     max_rows=ARM_ROWS if args.max_columns is None and len(groups) == 1 else None)
    for note in schema_file_notes(groups):  # on stdout: what an agent reads must say the columns were redefined
        out.write(sanitize(note) + "\n")
    out.write(text if text.endswith("\n") else text + "\n")
    if follower.read_nothing():
        err.write("steptable summary: no readable rows\n")
        return 2
    status = 2 if nothing_picked else 0
    if not any(len(s) for s in stores):  # empty files only: nothing was checked, which must not pass for "fine"
        err.write(f"steptable summary: no rows yet in {sanitize(', '.join(str(s.path) for s in stores))}\n")
        status = 2
    for p in missing_paths(args.paths):  # a summary of some runs must not pass for one of all
        err.write(f"steptable summary: no such path: {sanitize(p)}\n")
        status = 2
    if unread := follower.unreadable():
        err.write(f"steptable summary: could not read {sanitize(', '.join(unread))}\n")
        status = 2
    return status

