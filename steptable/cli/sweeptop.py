"""``steptable summary PATH --top K --by METRIC``: a sweep's best and worst runs from each file's newest rows."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from steptable.ingest.files.discover import Candidate


def run_top(args: argparse.Namespace, out: TextIO, err: TextIO, more_than: int = 0,
            found: Sequence[Candidate] | None = None) -> int | None:
    """Print the ranking (see steptable.summary.toplines); 2 when no run is found or none logs the metric.
    ``more_than``: only for more runs than that; None (nothing printed) for fewer. ``found``: the candidates a
    discovery of ``args.paths`` just gave (not walked again)."""
    from steptable.cli.tail import missing_paths
    from steptable.ingest.copies import Copies, Sample, left_out
    from steptable.ingest.files.discover import nothing_found
    from steptable.ingest.files.runindex import RunIndex, head_of
    from steptable.ingest.resumes import KINDS, index_trainings, newest
    from steptable.summary.sweep import default_keys, digest, direction
    from steptable.summary.toplines import top_text
    from steptable.table.formatting import sanitize

    first: list[Any] = []
    samples: dict[str, Sample] = {}  # each run's newest rows: a copy of another run is ranked once
    tails: dict[str, Any] = {}  # the newest rows of the runs a training resumed in a new directory may be pieces of

    def make(store: Any, cand: Any) -> Any:
        if not first and len(store):
            first.append(store)  # (its schema says which way the metric is better)
        samples[store.run] = Sample(store)
        if store.kind in KINDS:
            tails[store.run] = newest(store)
        return digest(store, store.meta.get("size", 0))

    index = RunIndex(args.paths, make)
    if found is not None:
        index.discover(found)
    index.refresh()
    for line in index.errors:
        err.write(sanitize(line) + "\n")
    # (a training resumed in a new directory is ranked once, by its last piece's rows: steptable.ingest.resumes)
    # (a training resumed in new directories is ranked once: its last piece's newest rows, under its first piece's
    # id as every other command names it; steptable.ingest.resumes)
    pieces = {ids[-1]: ids for ids in index_trainings(tails, lambda t: head_of(t.path, t.kind))}
    earlier = {key for ids in pieces.values() for key in ids[:-1]}
    digests = [replace(e.digest, run=pieces[e.run_id][0]) if e.run_id in pieces else e.digest
               for e in index.runs.values() if e.digest is not None and e.run_id not in earlier]
    names = {ids[0]: ids for ids in pieces.values()}
    copy_of = Copies(args.paths, stay=False).update({d.run: samples[names.get(d.run, [d.run])[-1]] for d in digests
                                                     if names.get(d.run, [d.run])[-1] in samples})
    digests = [d for d in digests if d.run not in copy_of]
    if getattr(args, "run", None):
        digests = [d for d in digests if args.run in (d.run, d.arm, *names.get(d.run, ()))]
    if more_than and len(digests) <= more_than:
        return None
    if copy_of:
        err.write(f"steptable summary: {left_out(len(copy_of))}\n")
    status = 0
    for p in missing_paths(args.paths):
        err.write(f"steptable summary: no such path: {sanitize(p)}\n")
        status = 2
    if not digests:
        err.write(f"steptable summary: {sanitize(nothing_found(args.paths))}\n")
        return 2
    key = args.by or next(iter(default_keys([k for d in digests for k in d.keys])), None)
    if key is None:
        err.write("steptable summary: no numeric metric to rank by\n")
        return 2
    said = direction(first[0], key) if first else None  # (None: the schema does not say, e.g. an RL loss)
    higher = not args.lower and said != "lower"
    text = top_text(digests, key, args.top or 5, args.stat, higher, time.time(), args.lower or said is not None)
    out.write(text + "\n")
    if not any(key in d.last for d in digests):
        return 2
    return 2 if index.errors else status  # (a run that could not be read: the help's promise)
