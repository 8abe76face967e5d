"""`steptable runs PATH...`: one line per run found (its id, arm, rows, steps, age of its last row, whether it
ended, where it was resumed): the names ``tail --run`` and ``summary --run`` take, and what the MCP server's
``runs`` tool returns."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from steptable.cli.reading import non_negative


def add_parser(sub: Any) -> None:
    r = sub.add_parser("runs", help="list the runs found under paths: id, arm, rows, steps, age, end",
                       epilog="Exit status: 0 when runs were found (with or without rows); 2 when none was, a path "
                              "is missing or a run could not be read (its line says so; the others are listed).")
    r.add_argument("paths", nargs="+", help="metrics files or directories (searched recursively)")
    r.add_argument("--limit", type=non_negative, default=0, metavar="N",
                   help="the first N runs by id, and how many more (default 0: all)")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Exit status: 0 when runs were found (with or without rows), 2 when none was, a path is missing or a run
    could not be read."""
    from steptable.alerts.engine import fmt_age
    from steptable.cli.reading import read_runs
    from steptable.ingest.copies import Copies
    from steptable.ingest.files.discover import missing_paths, nothing_found
    from steptable.summary.report import resumed_words
    from steptable.table import runinfo
    from steptable.table.formatting import sanitize

    out, err = out or sys.stdout, err or sys.stderr
    follower, _ = read_runs(args.paths, err, keep_copies=True)
    if not follower.stores:
        err.write(f"steptable runs: {sanitize(nothing_found(args.paths))}\n")
        return 2
    now = time.time()
    copy_of = Copies(args.paths).update(follower.stores)
    keys = sorted(follower.stores)
    limit = getattr(args, "limit", 0) or len(keys)
    unread = set(follower.unreadable())
    for key in keys[:limit]:
        s = follower.stores[key]
        with s.lock:
            n = len(s)
            steps = (f"steps {s.step_at(0)}-{s.step_at(n - 1)}" if n
                     else "could not be read" if str(s.path) in unread else "no rows yet")
            info, updated, resumes = s.meta.get("runinfo"), s.last_update, list(s.resumes)
        parts = [sanitize(s.run)]
        if s.arm:
            parts.append(f"arm {sanitize(s.arm)}")
        parts += [f"{n} rows", steps]
        if updated is not None:
            parts.append(f"last {fmt_age(now - updated)} ago")
        if runinfo.closed_at(info) is not None:
            end = runinfo.ended_by(info)
            parts.append("ended" if end is None else runinfo.end_words(end))
        if resumes:
            parts.append(resumed_words(resumes))
        if isinstance(pieces := s.meta.get("pieces"), list) and len(pieces) > 1:  # (steptable.ingest.resumes)
            parts.append("pieces " + " + ".join(sanitize(Path(p).parent.name) for p in pieces[:4])
                         + (f" + {len(pieces) - 4} more" if len(pieces) > 4 else ""))
        if key in copy_of:
            parts.append(f"same rows as {sanitize(copy_of[key])}: left out")
        out.write("  ".join(parts) + "\n")
    if len(keys) > limit:
        out.write(f"({len(keys) - limit} more runs: --limit 0 lists all)\n")
    status = 2 if unread else 0
    for p in missing_paths(args.paths):
        err.write(f"steptable runs: no such path: {sanitize(p)}\n")
        status = 2
    return status
