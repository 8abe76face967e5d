"""What finding one run's generations in a trackio project costs as the project's other traces grow, against the
same questions asked by run name (the anchor: a scan of the ``traces`` table, as trackio indexes traces by run id).

    python bench/bench_trackio_traces.py [--runs 4] [--steps 1000] [--every 5] [--per 32] [--repeat 5] [--cold]

trackio itself writes the project (``--runs`` runs of ``--steps`` steps; each but the last logs ``--per``
``trackio.Trace``s of about 2 kB every ``--every`` steps, as verl's validation generations do; 176 MB at the
defaults). For the first run, best of ``--repeat``, warm page cache:
1. the viewer's question when ``v`` is pressed (``has_traces``, asked for each trackio run on the UI thread), for a
   run with traces and for the run without;
2. the index of the run's steps (``trace_steps``) and the samples of its last step as the generations screen shows
   them (``build_index`` + ``samples``: the traces read, decoded and made samples);
each against the same SQL by ``run_name`` in the same run of this script. ``--cold`` drops the OS page cache before
each timing (Linux, as root): a project bigger than memory, or not read for a while, where each name query reads the
whole table from disk and the indexed reads a few pages.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from steptable.app.sidefiles import build_index
from steptable.ingest.readers.trackiotraces import has_traces, trace_steps

WRITE = """
import trackio
body = "lorem ipsum dolor " * 110
for r in range({runs}):
    trackio.init(project="p", name=f"run{{r}}")
    for s in range({steps}):
        row = {{"loss": 1.0 / (s + 1)}}
        if r < {runs} - 1 and s % {every} == 0:
            row["val/generations"] = [trackio.Trace(messages=[{{"role": "user", "content": f"q{{i}}"}},
                                                              {{"role": "assistant", "content": body}}],
                                                    metadata={{"score": i}}) for i in range({per})]
        trackio.log(row, step=s)
    trackio.finish()
"""


def best(f: Callable[[], object], repeat: int, cold: bool) -> float:
    times = []
    for _ in range(repeat):
        if cold:
            os.sync()
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def by_name(db: Path, sql: str, *args: object) -> list[object]:
    con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--per", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold", action="store_true", help="drop the page cache before each timing (Linux, root)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TRACKIO_DIR": tmp, "TRACKIO_DISABLE_TELEMETRY": "1"}
        code = WRITE.format(runs=a.runs, steps=a.steps, every=a.every, per=a.per)
        subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, check=True, capture_output=True)
        db = Path(tmp) / "p.db"
        steps = trace_steps(db, "run0")
        last, none = steps[-1], f"run{a.runs - 1}"
        cache = "cold" if a.cold else "warm"
        print(f"trackio project: {a.runs} runs x {a.steps} steps, {len(steps)} steps of {a.per} traces in each of"
              f" {a.runs - 1} runs, {db.stat().st_size / 1e6:.0f} MB; best of {a.repeat}, {cache} cache")

        def shown() -> None:
            idx = build_index([], traces=(db, "run0"))
            assert len(idx.samples(last)) == a.per

        cases = [
            ("has_traces, a run with traces", lambda: has_traces(db, "run0"),
             lambda: by_name(db, "SELECT 1 FROM traces WHERE run_name = ? LIMIT 1", "run0")),
            ("has_traces, the run without", lambda: has_traces(db, none),
             lambda: by_name(db, "SELECT 1 FROM traces WHERE run_name = ? LIMIT 1", none)),
            ("trace_steps of a run", lambda: trace_steps(db, "run0"),
             lambda: by_name(db, "SELECT DISTINCT step FROM traces WHERE run_name = ? ORDER BY step", "run0")),
            ("a step's samples (index + samples)", shown,
             lambda: (by_name(db, "SELECT DISTINCT step FROM traces WHERE run_name = ? ORDER BY step", "run0"),
                      by_name(db, "SELECT key, trace_index, messages, metadata FROM traces WHERE run_name = ?"
                              " AND step = ?", "run0", last))),
        ]
        for name, ours, anchor in cases:
            t, t0 = best(ours, a.repeat, a.cold), best(anchor, a.repeat, a.cold)
            print(f"{name:36s}: {t * 1e3:8.2f} ms   by name (anchor) {t0 * 1e3:8.2f} ms   ratio {t / t0:.3f}x")


if __name__ == "__main__":
    main()
