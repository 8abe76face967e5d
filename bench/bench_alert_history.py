"""Alerts over a long history (issue #30: a 700k-row history in <= 3 s, never delaying the first frame or keys).

    python bench/bench_alert_history.py                 # 700,000 rows
    python bench/bench_alert_history.py --rows 100000 --no-watch --no-summary
    python bench/bench_alert_history.py --summary-of /tmp/big/metrics.jsonl   # only that, in CPU seconds
    python bench/bench_alert_history.py --app-run /tmp/ah1g   # only: the pass over bench_app.py's 1 GB run

Writes a healthy run (bench_alerts.py's drifting family: loss, grad norm, reward, entropy, KL, clip ratio, a clock)
of ROWS rows as JSONL, then measures, in this one run:

- anchor: a stdlib ``json`` script reading the file (``json.loads`` a line, the six cells to floats): CPU seconds;
- the app's alert pass over the history: ``AlertScanner.scan`` over the loaded RunStore, in this thread, without
  the pauses its own thread takes between chunks: CPU seconds, per row, and the ratio to the anchor;
- the whole command: ``steptable summary FILE`` (its alert pass included) against the stdlib script, both as
  subprocesses, wall seconds;
- with ``watch`` (default on): the app on the file, headless (``run_test``); once every row is in and while the
  scanner thread goes through the history, a key pressed and the refresh after it (Home and End: the first row and
  back), against the same keys once the scanner is idle.

CPU seconds are ``time.process_time`` (the machine is shared: wall time counts other people's work); quote the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_alerts import KEYS, healthy

STDLIB = """
import json, sys
cols = {k: [] for k in %r}
with open(sys.argv[1]) as fh:
    for line in fh:
        row = json.loads(line)
        for k, c in cols.items():
            c.append(float(row[k]))
print(len(cols[%r]))
"""


def write_run(path: Path, rows: int) -> None:
    run = healthy("drifting", 0, rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for i in range(rows):
            fh.write(json.dumps({"step": i, "ts": run["_t"][i], **{k: run[k][i] for k in KEYS}}) + "\n")


def anchor(path: Path) -> float:
    """CPU seconds of the stdlib read, in this process."""
    t = time.process_time()
    cols: dict[str, list[float]] = {k: [] for k in KEYS}
    with path.open() as fh:
        for line in fh:
            row = json.loads(line)
            for k, c in cols.items():
                c.append(float(row[k]))
    return time.process_time() - t


def load(path: Path) -> Any:
    from steptable.ingest.parsed import Parsed
    from steptable.ingest.store import RunStore

    store = RunStore("run", path)
    batch: list[dict[str, Any]] = []
    with path.open() as fh:
        for line in fh:
            batch.append(json.loads(line))
            if len(batch) == 10_000:
                store.add(Parsed(steps=[r["step"] for r in batch], rows=batch))
                batch = []
    if batch:
        store.add(Parsed(steps=[r["step"] for r in batch], rows=batch))
    return store


def alert_pass(store: Any) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, alerts) of the app's scanner over the whole store."""
    from steptable.app.alerting import AlertScanner

    scanner = AlertScanner(lambda: {"run": store}, lambda _m: None)
    t, w = time.process_time(), time.perf_counter()
    found = scanner.scan("run", store)
    return time.process_time() - t, time.perf_counter() - w, len(found)


def commands(path: Path) -> tuple[float, float]:
    """Wall seconds of ``steptable summary FILE`` and of the stdlib script, each as users run it."""
    def wall(cmd: list[str]) -> float:
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        return time.perf_counter() - t

    script = STDLIB % (KEYS, KEYS[0])
    return wall([sys.executable, "-m", "steptable", "summary", str(path)]), wall([sys.executable, "-c", script,
                                                                               str(path)])


def summary_cpu(path: Path, repeat: int = 3) -> list[tuple[float, float]]:
    """(CPU seconds of ``steptable summary PATH``, of a stdlib script ``json.loads``-ing each line), as children,
    ``repeat`` times: wall time on a shared VM counts other people's work."""
    import resource

    def cpu(cmd: list[str]) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime

    read = "import json, sys\nfor line in open(sys.argv[1]):\n    json.loads(line)\n"
    return [(cpu([sys.executable, "-m", "steptable", "summary", str(path)]), cpu([sys.executable, "-c", read,
                                                                                   str(path)]))
            for _ in range(repeat)]


def watch_keys(path: Path, rows: int) -> dict[str, Any]:
    """Key actions in the app while its scanner goes through the history and after (ms, medians of 5)."""
    from bench_app import SIZE, _after_refresh

    from steptable.app import make_app
    from steptable.app.widgets.grid import StepGrid

    async def keys(app: Any, grid: Any, pilot: Any) -> list[float]:
        out = []
        for _ in range(5):
            t = time.perf_counter()
            await pilot.press("home")
            await _after_refresh(app)
            assert grid.scroll_y == 0
            await pilot.press("end")
            await _after_refresh(app)
            out.append(1000 * (time.perf_counter() - t) / 2)
        return out

    async def main() -> dict[str, Any]:
        app = make_app([str(path)])
        res: dict[str, Any] = {}
        async with app.run_test(size=SIZE) as pilot:
            while not (grids := list(app.query(StepGrid))) or not grids[0].rows:
                await asyncio.sleep(0.002)
            grid = grids[0]
            grid.focus()
            while grid.rows < rows:
                await asyncio.sleep(0.01)
            scanner = app.feed.scanner
            t = time.perf_counter()
            while scanner.idle.is_set() and time.perf_counter() - t < 60:  # (the scan starts with the rows)
                await asyncio.sleep(0.01)
            res["scanning"] = not scanner.idle.is_set()
            res["during_ms"] = await keys(app, grid, pilot)
            res["still_scanning"] = not scanner.idle.is_set()
            t = time.perf_counter()
            while not scanner.idle.is_set():
                await asyncio.sleep(0.02)
            res["scan_left_s"] = time.perf_counter() - t
            res["after_ms"] = await keys(app, grid, pilot)
        return res

    return asyncio.run(main())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=700_000)
    ap.add_argument("--no-watch", action="store_true")
    ap.add_argument("--no-summary", action="store_true")
    ap.add_argument("--summary-of", metavar="PATH", help="only: CPU seconds of `steptable summary PATH` against a "
                    "stdlib read of it (3 times; e.g. the 148 MB run of bench_long.py)")
    ap.add_argument("--app-run", metavar="DIR", help="only: the alert pass (CPU, twice) over bench_app.py's 1 GB run "
                    "(704,000 rows x 43 keys, the run the issue's first figure was taken on), written into DIR "
                    "once and kept")
    a = ap.parse_args()
    if a.app_run:
        from bench_app import generate

        path = Path(a.app_run) / "metrics.jsonl"
        if not path.exists():
            generate(path, 1_000_000_000)
        store = load(path)
        for _ in range(2):
            cpu, wall, n = alert_pass(store)
            print(f"{path}: {len(store):,} rows, alert pass {cpu:.2f} s CPU ({wall:.2f} s wall), "
                  f"{1e6 * cpu / len(store):.1f} us/row, {n} alerts (goal <= 3 s)", flush=True)
        return
    if a.summary_of:
        for summ, read in summary_cpu(Path(a.summary_of)):
            print(f"steptable summary {a.summary_of}: {summ:.2f} s CPU, stdlib read {read:.2f} s: ratio "
                  f"{summ / read:.2f}x", flush=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run" / "metrics.jsonl"
        write_run(path, a.rows)
        print(f"run: {a.rows:,} rows x {len(KEYS)} watched columns, {path.stat().st_size / 1e6:.0f} MB", flush=True)
        base = anchor(path)
        store = load(path)
        cpu, wall, n = alert_pass(store)
        print(f"alert pass (AlertScanner.scan, the whole history): {cpu:.2f} s CPU ({wall:.2f} s wall), "
              f"{1e6 * cpu / a.rows:.1f} us/row, {n} alerts; stdlib json read of the file {base:.2f} s CPU: "
              f"ratio {cpu / base:.2f}x", flush=True)
        del store
        if not a.no_summary:
            summ, script = commands(path)
            print(f"steptable summary FILE {summ:.1f} s wall, stdlib script {script:.1f} s: ratio "
                  f"{summ / script:.2f}x", flush=True)
        if not a.no_watch:
            w = watch_keys(path, a.rows)
            during, after = statistics.median(w["during_ms"]), statistics.median(w["after_ms"])
            print(f"watch: a key (jump to the first row, or back) {during:.0f} ms while the scanner goes through the "
                  f"history (scanning at the start: {w['scanning']}, at the end: {w['still_scanning']}; "
                  f"{w['scan_left_s']:.1f} s of it left), {after:.0f} ms once it is idle; ratio "
                  f"{during / after:.2f}x", flush=True)


if __name__ == "__main__":
    main()
