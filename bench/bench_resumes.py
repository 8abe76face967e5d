"""What finding and following trainings resumed in new logger directories costs a follower (steptable.ingest.resumes).

    python bench/bench_resumes.py [--runs 1000] [--resumed 0.25] [--rows 100] [--long 100000] [--repeat 7]

A sweep of ``--runs`` Lightning CSV runs (``run_i/version_0/metrics.csv`` of ``--rows`` rows, written by Lightning's
own CSVLogger), a share ``--resumed`` of them resumed once (``version_1``, its steps going on from the last). Timed,
the median of ``--repeat`` each:

- a follower's pass over the sweep when nothing changed (``tick``, the anchor: what every pass costs already), and
  what the join adds to it (``Joiner.view``: which runs are pieces, each training's run kept up to date);
- the first read of the sweep with the join (``scan``) against the same read without it (every piece a run);
- one training of ``--long`` rows whose resumed piece gains rows: a follower's pass adding 10 rows to it, against
  the same pass over the piece alone (its own store's rows, no joined run to keep);
- ``steptable summary SWEEP`` (the sweep's ranking from its run index: each run's newest rows, and the first rows
  of the runs that share a directory with another), against the same command with no piece looked for.
Printed: each in ms and as ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from steptable.cli.main import main as steptable
from steptable.ingest import resumes
from steptable.ingest.files.follow import Follower
from steptable.ingest.joined import Joiner


def write(dir: Path, steps: range, rewrite: bool = True) -> None:
    """``dir/metrics.csv`` as Lightning's CSVLogger writes it, rows of ``steps`` (appended when not ``rewrite``)."""
    from lightning.fabric.loggers import CSVLogger

    if not rewrite:  # (the logger appends to a file it made: the rows a resumed process logs as it goes)
        with open(dir / "metrics.csv", "a") as f:
            f.writelines(f"{1 + math.sin(s)!r},{s}\n" for s in steps)  # (its header: loss,step)
        return
    logger = CSVLogger(root_dir=dir.parent, name=None, version=dir.name)
    for s in steps:
        logger.log_metrics({"loss": 1 + math.sin(s)}, step=s)
    logger.save()
    logger.finalize("success")


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of ``repeat`` calls."""
    got = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        got.append(time.perf_counter() - t)
    return statistics.median(got)


def no_join(runs: Any, changed: Any = None) -> tuple[Any, dict[str, str], set[str]]:
    return runs, {}, set()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--resumed", type=float, default=0.25)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--long", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sweep"
        resumed = int(a.runs * a.resumed)
        for i in range(a.runs):
            write(root / f"run_{i}" / "version_0", range(a.rows))
            if i < resumed:
                write(root / f"run_{i}" / "version_1", range(a.rows, 2 * a.rows))
        print(f"{a.runs} Lightning CSV runs of {a.rows} rows, {resumed} resumed once; median of {a.repeat}")

        def first_read(join: bool) -> float:
            def once() -> None:
                f = Follower([root])
                f.scan()
            if join:
                return timed(once, a.repeat)
            with mock.patch.object(Joiner, "view", staticmethod(no_join)):
                return timed(once, a.repeat)

        with_join, without = first_read(True), first_read(False)
        print(f"first read (scan): {with_join * 1e3:8.1f} ms, every piece a run {without * 1e3:8.1f} ms,"
              f" ratio {with_join / without:.3f}x")
        f = Follower([root])
        f.scan()
        assert len(f.stores) == a.runs, len(f.stores)
        tick = timed(lambda: f.tick(discover=False), a.repeat)
        with mock.patch.object(Joiner, "view", staticmethod(no_join)):
            bare = timed(lambda: f.tick(discover=False), a.repeat)
        view = timed(lambda: f._joiner.view(f._runs), a.repeat)
        print(f"a pass with nothing new: {tick * 1e3:8.2f} ms, without the join (anchor) {bare * 1e3:8.2f} ms,"
              f" ratio {tick / bare:.3f}x; finding the trainings again (a pass where a run changed)"
              f" {view * 1e3:8.2f} ms, {view / bare:.3f}x the bare pass, {view / a.runs * 1e6:.2f} us a run")

        def summary(join: bool) -> float:
            def once() -> None:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    assert steptable(["summary", str(root)]) == 0
            if join:
                return timed(once, a.repeat)
            with mock.patch.object(resumes, "index_trainings", lambda tails, head: []):
                return timed(once, a.repeat)

        with_join, without = summary(True), summary(False)
        print(f"steptable summary of the sweep: {with_join * 1e3:8.1f} ms, no piece looked for {without * 1e3:8.1f}"
              f" ms, ratio {with_join / without:.3f}x")

        long = Path(tmp) / "long" / "arm"
        write(long / "version_0", range(a.long // 2))
        write(long / "version_1", range(a.long // 2, a.long))
        costs = {}
        at = [a.long]  # (the next step the resumed piece logs, for both followers in turn)

        def grow(g: Follower) -> None:
            write(long / "version_1", range(at[0], at[0] + 10), rewrite=False)
            at[0] += 10
            g.tick(discover=False)

        for name, paths in [("joined", [long]), ("piece alone", [long / "version_1"])]:
            g = Follower(paths)
            g.scan()
            costs[name] = timed(lambda g=g: grow(g), a.repeat * 3)  # type: ignore[misc]
            (st,) = g.stores.values()
            assert st.step_at(len(st) - 1) == at[0] - 1, (name, st.step_at(len(st) - 1), at[0])
        print(f"{a.long}-row training, a pass adding 10 rows: joined {costs['joined'] * 1e3:.2f} ms, the piece"
              f" alone {costs['piece alone'] * 1e3:.2f} ms, ratio {costs['joined'] / costs['piece alone']:.3f}x")


if __name__ == "__main__":
    main()
