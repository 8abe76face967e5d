"""`steptable tail`: a run's table (or normalised rows) on stdout, optionally following the files live.

The same renderer as StepLogger; several runs share one column layout and are printed as labelled blocks.
Bad lines go to stderr as ``path:line: reason``. ``--alerts-only`` prints nothing but alert lines and exits 1
when an error-level alert fired. What is printed is steptable.tailout's Tail; this module is the command.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

from steptable.formatting import sanitize
from steptable.ingest import Follower
from steptable.ingest.discover import nothing_found
from steptable.tailout import DEFAULT_WIDTH, Tail

__all__ = ["DEFAULT_WIDTH", "Tail", "add_parser", "missing_paths", "non_negative", "positive_seconds", "run_tail"]


def add_parser(sub: Any) -> None:
    t = sub.add_parser("tail", help="print runs as the fixed-width table (or jsonl/csv/md), optionally live")
    t.add_argument("paths", nargs="+", help="metrics files or directories (searched recursively)")
    t.add_argument("-f", "--follow", action="store_true", help="keep printing new rows as they are written")
    t.add_argument(
        "-n", "--last", type=non_negative, default=20, help="rows per run to print first (default 20, 0 = all)"
    )
    t.add_argument("--columns", default="", help="comma-separated globs of keys/headers to show (step is kept)")
    t.add_argument(
        "--format",
        choices=("text", "jsonl", "csv", "md"),
        default="text",
        help="the fixed-width table (default), one JSON object a row, CSV (one header: the union of the runs' "
        "columns; under -f a column that appears later adds a header line, said on stderr), or markdown tables. "
        "Alerts (--alerts-only) follow it too",
    )
    t.add_argument("--schema", default=None, help="column set to use instead of the detected one")
    t.add_argument(
        "--width", type=non_negative, default=None,
        help=f"max width of the text table in cells (default: the terminal's, {DEFAULT_WIDTH} in a pipe; 0 = any)",
    )
    t.add_argument("--header-every", type=non_negative, default=20, help="repeat the header every N rows (0 = once)")
    t.add_argument("--alerts-only", action="store_true", help="print only alerts; exit 1 if an error alert fired")
    t.add_argument(
        "--poll", type=positive_seconds, default=None, help="poll files every SECONDS instead of notifications"
    )


def non_negative(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {n}")
    return n


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (x > 0 and math.isfinite(x)):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return x


def missing_paths(paths: Sequence[str]) -> list[str]:
    """The paths given that do not exist: a one-shot command names each and exits 2 after printing the rest (a
    mistyped path beside a good one must not pass a CI gate as "no alerts")."""
    return [str(p) for p in paths if not os.path.exists(p)]


def run_tail(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    follower = Follower(args.paths, poll=args.poll)
    tail = Tail(args, out, err)
    if not args.follow:
        follower.scan()
        follower.finish()  # a file that will not grow: its unterminated last line is a row too
        tail.emit(follower)
        return _one_shot(args, follower, tail, err)
    # systemd, k8s, `timeout`: a TERM ends the watch as Ctrl-C does, and the exit status still says whether an
    # error alert fired
    term = _stop_on_sigterm()
    for p in missing_paths(args.paths):  # followed anyway: a run that has not started yet is picked up when it does
        err.write(f"steptable tail: no such path (yet): {sanitize(p)}\n")
    try:
        follower.scan()
        tail.emit(follower)
        return _follow(args, follower, tail)
    except KeyboardInterrupt:
        return 1 if tail.error_alert else 0
    finally:
        if term is not None:
            signal.signal(signal.SIGTERM, term)


def _one_shot(args: argparse.Namespace, follower: Follower, tail: Tail, err: TextIO) -> int:
    if not follower.stores:  # --alerts-only too: a mistyped path in CI must not pass as "no alerts"
        err.write(f"steptable tail: {sanitize(nothing_found(args.paths))}\n")
        return 2
    paths = ", ".join(sanitize(str(s.path)) for s in follower.stores.values())
    if follower.read_nothing():  # not a quiet success, even for --alerts-only
        err.write(f"steptable tail: no readable rows in {paths}\n")
        return 2
    if not any(len(s) for s in follower.stores.values()) and not args.alerts_only:
        err.write(f"steptable tail: no rows yet in {paths}\n")
    if args.alerts_only:  # a stall still going on (a one-shot check by an agent or CI is when it matters)
        tail.check_stalls(time.time())
    status = 1 if tail.error_alert else 0
    for p in missing_paths(args.paths):  # --alerts-only of some runs must not pass for "no alerts" in all
        err.write(f"steptable tail: no such path: {sanitize(p)}\n")
        status = 2
    if unread := follower.unreadable():
        err.write(f"steptable tail: could not read {sanitize(', '.join(unread))}\n")
        status = 2
    return status


def _follow(args: argparse.Namespace, follower: Follower, tail: Tail) -> int:
    stop = threading.Event()
    lock = threading.Lock()
    broken: list[OSError] = []

    def changed(_runs: set[str]) -> None:
        # Runs in the follower thread: a reader that left (`| head`) must end the command, not kill the thread
        # with a traceback (the follower would first take it for a failed notifier and poll on).
        with lock:
            if stop.is_set():
                return
            try:
                tail.emit(follower)
            except OSError as e:  # a closed pipe, a full disk under stdout: the main thread ends the command
                broken.append(e)
                stop.set()

    worker = threading.Thread(target=follower.run, args=(stop, changed), daemon=True, name="steptable-tail")
    worker.start()
    try:
        while worker.is_alive():
            worker.join(timeout=5.0)
            if args.alerts_only:
                with lock:
                    tail.check_stalls(time.time())
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
    if broken:
        raise broken[0]  # the CLI ends a closed pipe quietly and says a failed stdout in one line (status 2)
    return 1 if tail.error_alert else 0


def _stop_on_sigterm() -> Any:
    """Make SIGTERM raise KeyboardInterrupt in the main thread; returns the handler to put back (None: not set)."""

    def interrupt(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        return signal.signal(signal.SIGTERM, interrupt)
    except (ValueError, OSError):
        return None
