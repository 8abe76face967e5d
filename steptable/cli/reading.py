"""What the commands share: argparse types for their numbers, and one read of the runs under the paths given."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Collection, Sequence
from typing import Any, TextIO

from steptable.table.cells import first_few
from steptable.table.formatting import sanitize


def _integer(text: str, least: int, what: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < least:
        raise argparse.ArgumentTypeError(f"must be {what}, got {n}")
    return n


def non_negative(text: str) -> int:
    """argparse type: an integer >= 0."""
    return _integer(text, 0, "0 or more")


def positive(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _integer(text, 1, "1 or more")


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (x > 0 and math.isfinite(x)):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return x


#: runs an unknown name's error lists (a sweep of hundreds listed all of them: 7,318 characters to an agent)
NAMED_RUNS = 10


def no_run(cmd: str, name: str, runs: Collection[str], kind: str = "run") -> str:
    """The line for a ``--run`` that names none of ``runs`` (``kind`` "arm": a ``--baseline`` none of the arms
    ``runs``): the names closest to it, else the first few, and how many there are (all of them where they are
    few)."""
    import difflib

    ordered = sorted(runs)
    close = difflib.get_close_matches(name, ordered, n=3, cutoff=0.6)
    if len(ordered) <= NAMED_RUNS:
        listed = f"{kind}s: {', '.join(sanitize(k) for k in ordered)}"
    elif close:
        listed = (f"closest: {', '.join(sanitize(k) for k in close)}; {len(ordered)} {kind}s (steptable runs lists "
                  "them)")
    else:
        listed = f"{kind}s: {first_few([sanitize(k) for k in ordered], NAMED_RUNS)} (steptable runs lists them)"
    return f"steptable {cmd}: no {kind} {sanitize(name)!r} ({listed})\n"


def named(stores: Collection[Any], name: str) -> list[Any]:
    """The runs of ``stores`` that ``name`` names (``--run``): those it is the id or arm of
    (steptable.ingest.resumes.goes_by); where none, those whose id or arm the commands show as ``name`` (a name
    holding a control character or a bidi override is listed without it: the name listed must name the run)."""
    from steptable.ingest.resumes import goes_by

    exact = [s for s in stores if goes_by(s, name)]
    return exact or [s for s in stores if name in (sanitize(s.run), sanitize(s.arm))]


def shown_as(names: Collection[str], name: str) -> str | None:
    """The one of ``names`` (arms) that is ``name`` or is shown as it (sanitized); None where none or several."""
    if name in names:
        return name
    alike = [n for n in names if sanitize(n) == name]
    return alike[0] if len(alike) == 1 else None


#: files whose bad lines a command tells line by line; the other files' are counted on one line
BAD_FILES_TOLD = 3


def tell_problems(problems: Sequence[tuple[str, str]], err: TextIO, runs: Sequence[Any] | None = None) -> None:
    """Tell ``problems`` (``Follower.problems_after``: (file, text)) on ``err``, a line each: the follower's own
    always; of files, only those of ``runs`` where given (a command about one run: the others' damage is not its
    answer; a run's file, or one in a TensorBoard run's directory), the first :data:`BAD_FILES_TOLD` files' line by
    line and one line counting the rest (a sweep of 300 runs with a torn line each was 300 lines on every poll)."""
    # (a TensorBoard run is its directory: each of its event files is the run's)
    mine = None if runs is None else {p for r in runs for p in (str(r.path), *(
        [os.path.dirname(str(r.path))] if getattr(r, "kind", None) == "tensorboard" else []))}
    told: list[str] = []
    more: dict[str, int] = {}
    for path, text in problems:
        if path != "steptable" and mine is not None and path not in mine and os.path.dirname(path) not in mine:
            continue
        if path == "steptable" or path in told or len(told) < BAD_FILES_TOLD:
            if path != "steptable" and path not in told:
                told.append(path)
            err.write(sanitize(text) + "\n")
        else:
            more[path] = more.get(path, 0) + 1
    if more:
        names = first_few([sanitize(p) for p in more], 2)
        err.write(f"steptable: bad lines in {len(more)} more file(s) too: {names} ({sum(more.values())} lines "
                  "not told; summary counts each run's: bad N)\n")


def read_runs(paths: Sequence[str], err: TextIO, on_resume: Callable[..., Any] | None = None,
              split: bool = False, keep_copies: bool = False, keep: Collection[str] = ()) -> tuple[Any, list[Any]]:
    """Read every run under ``paths`` once (a Follower's scan to the end of each file); the follower's problems go
    to ``err``, a line each. ``split``: a big JSONL read in two processes where that is safe and pays
    (steptable.ingest.splitread: the same stores). Returns the follower and its stores in name order, the copies of
    another run left out unless ``keep_copies`` (steptable.ingest.copies: one training through several loggers; said
    on ``err``); runs whose id is in ``keep`` (asked for by name) are kept over their copies."""
    from steptable.ingest import Follower
    from steptable.ingest.copies import Copies, left_out

    follower = Follower(paths, on_resume=on_resume)
    follower.split = split
    follower.scan()
    follower.finish()
    tell_problems(follower.problems_after(0)[1], err)
    stores = follower.stores if keep_copies else Copies(paths).distinct(follower.stores, keep)
    if left := len(follower.stores) - len(stores):
        err.write(f"steptable: {left_out(left)}\n")
    return follower, [stores[k] for k in sorted(stores)]
