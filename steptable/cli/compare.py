"""``steptable compare PATH... --baseline ARM``: which arm wins, on a window of x (steptable.compare)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

DESCRIPTION = (
    "Compare arms: per metric and arm the mean over a window of x with its 95% interval (Student t over the seeds' "
    "window means; one seed beside arms of several: their pooled seed spread; every arm one seed: from 10 batch "
    "means of its window, none where those drift), and each arm's difference from the baseline with its 95% Welch "
    "interval (pooled t for one seed), marked better/worse (by the metric's direction) when it excludes 0. Runs "
    "whose names differ only by a seed part (routeA_seed1, routeA-s2, routeA/seed3) are one arm. Default window: "
    "the last 10% of the x range every run has reached."
)
EPILOG = (
    "Exit status: 0 when the comparison was made; 2 for a usage error, a path that does not exist, no metrics file "
    "or readable row, an unknown baseline, an x axis a run lacks, or a window some arm has not reached (named)."
)


def add_parser(sub: Any) -> None:
    c = sub.add_parser("compare", help="which arm wins: window means, 95%% intervals, differences vs a baseline",
                       description=DESCRIPTION, epilog=EPILOG)
    c.add_argument("paths", nargs="+", help="metrics files or directories holding the arms' runs")
    c.add_argument("--baseline", default=None, help="the arm the others are compared with (default: the first)")
    c.add_argument("--x", default=None, metavar="NAME",
                   help="x axis: step (default), tokens, samples, time, or a numeric key (KEY:sum for a per-step "
                   "amount, KEY:cum for a running total, when the guess is wrong)")
    c.add_argument("--window", default=None, metavar="W",
                   help="a share of the common x range, from its end (0.1 = 10%%, the default), or an x range A:B")
    c.add_argument("--metrics", default="", metavar="GLOBS",
                   help="comma-separated globs over keys (default: every numeric key the baseline and another arm log)")
    c.add_argument("--group", default=None, metavar="REGEX",
                   help="the seed part of a run's name (taken out to name its arm; a named group 'arm' names it). "
                   "A [compare] table in the runs' steptable.toml may set group, x and baseline")
    c.add_argument("--format", choices=("text", "md", "jsonl"), default="text", help="output format (default text)")
    c.add_argument("--all", action="store_true",
                   help="list every arm in the table (text and md list those of the best means where there are many)")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``steptable compare``: each arm's window mean and its difference from the baseline, per metric; returns 0,
    or 2 for a usage error, a path or arm that is not there, or a window some arm has not reached. Writes on ``out``
    and ``err`` (default stdout and stderr)."""
    from steptable.cli.reading import no_run, read_runs, shown_as
    from steptable.cli.tail import missing_paths
    from steptable.compare import (
        CompareError,
        choose_window,
        compare,
        compile_group,
        group_runs,
        make_arms,
        parse_window,
        pick_metrics,
        with_metrics,
    )
    from steptable.compare.direction import default_metrics, directions
    from steptable.compare.render import ARMS_LISTED, jsonl_report, md_report, text_report
    from steptable.ingest.files.discover import nothing_found
    from steptable.schemafiles.files import compare_settings
    from steptable.schemas.userdoc import SchemaFileError

    out_, err_ = out or sys.stdout, err or sys.stderr
    from steptable.table.formatting import sanitize

    def fail(msg: str) -> int:
        err_.write(f"steptable compare: {sanitize(msg)}\n")
        return 2

    if missing := missing_paths(args.paths):
        return fail(f"no such path: {', '.join(missing)}")
    try:
        settings = compare_settings(args.paths[0])
    except SchemaFileError as e:
        return fail(str(e))
    x = args.x or settings.get("x", "step")
    try:
        pattern = compile_group(args.group if args.group is not None else settings.get("group"))
        spec = parse_window(args.window)
    except CompareError as e:
        return fail(str(e))
    follower, stores = read_runs(args.paths, err_)
    stores = [s for s in stores if len(s)]
    if not stores:
        return fail(nothing_found(args.paths) if not follower.stores else "no readable rows")
    groups = group_runs(stores, pattern)
    baseline = args.baseline if args.baseline is not None else settings.get("baseline", next(iter(groups)))
    if (shown := shown_as(groups, baseline)) is None:  # (the closest arms named: a sweep has hundreds)
        err_.write(no_run("compare", baseline, groups, kind="arm"))
        return 2
    baseline = shown
    groups = {baseline: groups[baseline], **{k: v for k, v in groups.items() if k != baseline}}
    try:
        arms = make_arms(groups, x)
        globs = [g.strip() for g in args.metrics.split(",") if g.strip()]
        metrics = pick_metrics(arms, globs)
        metrics = metrics if globs else default_metrics(arms, metrics)  # (the keys asked for: as logged)
        if not metrics:
            return fail(f"--metrics {args.metrics!r} matches no numeric key" if globs else "no metric to compare")
        arms, left = with_metrics(arms, metrics)
        if not arms or arms[0].name != baseline:
            return fail(f"the baseline {baseline!r} logs none of the metrics compared ({', '.join(metrics)})")
        window = choose_window(arms, spec)
        dirs = directions(arms, metrics)
        results = compare(arms, baseline, metrics, window, dirs)
    except CompareError as e:
        return fail(str(e))
    if args.format == "jsonl":
        text = jsonl_report(results)
    elif args.format == "md":
        text = md_report(arms, window, baseline, results, dirs, None if args.all else ARMS_LISTED, left)
    else:
        text = text_report(arms, window, baseline, results, dirs, None if args.all else ARMS_LISTED, left)
    out_.write(text)
    if unread := follower.unreadable():
        return fail(f"could not read {', '.join(unread)}")
    return 0


def summary_comparison(stores: list[Any], near: str) -> list[str]:
    """``summary``'s lines comparing the arms (steptable.compare.brief), seeds grouped as the runs' steptable.toml's
    ``[compare] group`` says, its ``baseline`` first (a file that cannot be used is reported by the schema's own
    checks)."""
    import re

    from steptable.compare.brief import summary_lines
    from steptable.schemafiles.files import compare_settings
    from steptable.schemas.userdoc import SchemaFileError
    from steptable.summary.report import arm_tag

    try:
        settings = compare_settings(near)
    except SchemaFileError:
        settings = {}
    tags = {s.run: arm_tag(i) for i, s in enumerate(stores)}
    group = settings.get("group")
    return summary_lines(stores, tags, re.compile(group) if group else None, settings.get("baseline"))
