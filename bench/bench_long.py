"""Runs that last days: what a new row costs with a long history, and what the end-of-run and summary steps cost.

    python bench/bench_long.py                  # histories of 1,000 and 200,000 rows x 40 columns
    python bench/bench_long.py --rows 50000     # a shorter long run

Three measurements, each against an anchor taken in the same run:

1. A new row, read and handled as the watch app and ``tail -f --alerts-only`` handle it (the follower's read, the
   app's alert thread, its stall check, tail's emit), after a long history and after a short one: ms per row.
   Goal: the long history costs at most 1.5x the short one (the work is the new row's, not the history's).
2. ``steptable summary`` of the long run, in a fresh interpreter: the peak Python memory it allocates against a
   fresh interpreter that only reads the run into the readers' store (the anchor). Goal: at most 2x (the store,
   and one column's cells at a time beside it).
3. ``StepLogger.close()`` after the long run (console off): seconds, against rendering the same rows from memory
   (what table.txt costs at the least; goal: at most 1.5x), and the peak Python memory close allocates, against
   reading the file into the readers' store (goal: at most 0.5x: table.txt is read back without a store of the
   whole run).

    python bench/bench_long.py --commands                    # only 4.-6., on a 100k-step x 43-key run (~148 MB)
    python bench/bench_long.py --commands --big PATH          # the same on a run already written (bigfile.py's)
    python bench/bench_long.py --commands --big PATH --ab 6   # 6. only, as an interleaved A/B (see interleaved)

4.-6. The commands as users run them, each a fresh ``python -m steptable`` process (byte-compiled, as installed),
   on the 100k-step x 43-key run: wall time and peak resident memory (the child's own rusage), each the worst of
   3, against anchors run in the same bench, also 3 times: a stdlib ``json`` script that streams the ``step`` and
   ``loss`` of every row as JSON lines, and one that only reads every row (``json.loads``).
   4. ``tail -n 0 --format jsonl --columns step,loss``; 5. the same under ``-f``, until its last row is out (then
   TERM); goals: at most 0.5x the streaming script's time, resident memory at most 2x the two columns' numeric
   payload + 50 MB. 6. ``summary``: goal at most 0.5x the reading script's time. Beside it, in wall and CPU
   seconds (the cores this bench may use and the load average printed with them): summary with its read in one
   process (the path before the split read, steptable.ingest.splitread), summary in one process (read not split, no
   alert worker: as on one core, or in the MCP server), summary without its alert pass, its read alone
   (``read_runs`` in a fresh interpreter, with the imports summary makes), split as summary splits it and in one
   process, and ``summary`` of a one-row file
   (the interpreter's start, the imports, the parser): what is left of summary's own part past them is its
   statistics, layout and text.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

COLS = 40


def row(step: int, rng: random.Random) -> dict[str, Any]:
    r: dict[str, Any] = {"step": step, "ts": 1.7e9 + 2 * step, "loss": rng.gauss(1, 0.05), "rew": rng.random(),
                         "gn": abs(rng.gauss(0.4, 0.1)), "tag": rng.choice(["code", "math"])}
    r.update({f"m{j}": rng.random() for j in range(COLS - len(r) + 1)})
    return r


def write_run(path: Path, rows: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for s in range(rows):
            f.write(json.dumps(row(s, rng)) + "\n")


def per_new_row(root: Path, history: int, new: int = 40) -> float:
    """ms per appended row for the follower + the app's alert thread + its stall check + tail -f --alerts-only."""
    from steptable.app.alerting import AlertScanner
    from steptable.app.session import Session
    from steptable.cli.main import _parser
    from steptable.cli.tail import Tail
    from steptable.ingest import Follower

    path = root / f"h{history}" / "metrics.jsonl"
    write_run(path, history)
    f = Follower([path.parent])
    f.scan()
    (rid,) = f.stores
    scanner = AlertScanner(lambda: f.stores, lambda m: None)
    scanner.scan(rid, f.stores[rid])
    session = Session()
    session.update(rid, f.stores[rid])
    tail = Tail(_parser().parse_args(["tail", "-f", "--alerts-only", str(path.parent)]), io.StringIO(), io.StringIO())
    tail.emit(f)
    rng = random.Random(1)
    spent = 0.0
    for s in range(history, history + new):
        with open(path, "a") as fh:
            fh.write(json.dumps(row(s, rng)) + "\n")
        t = time.perf_counter()
        f.scan()
        store = f.stores[rid]
        scanner.scan(rid, store)
        session.update(rid, store)
        session.check_stalls(1.7e9 + 2 * s + 1)
        tail.emit(f)
        spent += time.perf_counter() - t
    return 1000 * spent / new


# A child interpreter runs SETUP, then times WORK, then (in a second child) the peak of the Python memory WORK
# allocates (tracemalloc, started after the imports and the setup: interpreter and library memory are not the
# measurement's). It prints "seconds peak_bytes".
_CHILD = """\
import sys, time, tracemalloc
sys.path.insert(0, {bench!r})
from bench_long import row, write_run
{setup}
def work():
    {work}
if {trace}:
    tracemalloc.start()
t = time.perf_counter()
kept = work()
secs = time.perf_counter() - t
print(secs, tracemalloc.get_traced_memory()[1] if {trace} else 0)
"""

LOAD = ("from steptable.ingest import Follower",
        "f = Follower([{path!r}]); f.scan(); f.finish(); return f")
SUMMARY = ("import contextlib, io; from steptable.cli.main import main",
           "with contextlib.redirect_stdout(io.StringIO()): main(['summary', {path!r}])")
# The run's rows are in its metrics.jsonl already (write_run: logging 200k rows through StepLogger would take a
# minute of the bench); the logger logs one more and closes, reading all of them back for table.txt.
CLOSE = ("""\
import random
from steptable import StepLogger
from steptable.schemas import auto_col
rng = random.Random(0)
sample = [row(s, rng) for s in range(200)]
cols = [auto_col(k, [r[k] for r in sample]) for k in sample[0] if k != "ts"]
sl = StepLogger(cols, run_dir={run!r}, console=False, alerts=False)
sl.log(row({rows}, rng))""", "sl.close()")


# What table.txt costs at the least: the same rows rendered from dicts in memory with the same columns.
RENDER = ("""\
import random
from steptable import render
from steptable.schemas import auto_col
rng = random.Random(0)
sample = [row(s, rng) for s in range(200)]
cols = tuple(auto_col(k, [r[k] for r in sample]) for k in sample[0] if k != "ts")
rows = [row(s, rng) for s in range({rows})]
fmt = render.compile_row(cols)""", "return [fmt(r) for r in rows]")


def measure(spec: tuple[str, str], **kw: Any) -> tuple[float, float]:
    """(seconds without tracemalloc, peak MB with it) of ``spec``'s work, each in a fresh interpreter."""
    setup, work = (part.format(**kw) for part in spec)
    out = []
    for trace in (False, True):
        code = _CHILD.format(bench=str(Path(__file__).parent), setup=setup, work=work, trace=trace)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        out.append([float(x) for x in done.stdout.split()[-2:]])
    return out[0][0], out[1][1] / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the long history (default 200,000)")
    ap.add_argument("--short", type=int, default=1_000, help="rows of the short history (default 1,000)")
    ap.add_argument("--commands", action="store_true", help="only the commands as users run them (4.-6.)")
    ap.add_argument("--big", metavar="PATH", help="the 100k-step run for 4.-6. (default: written to a temp dir)")
    ap.add_argument("--ab", type=int, metavar="ROUNDS", default=0,
                    help="with --commands: only 6., interleaved rounds, each command started when a core is free")
    a = ap.parse_args()
    if a.commands and a.ab:
        interleaved(a.big, a.ab)
        return
    if a.commands:
        commands(a.big)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        short, long_ = per_new_row(root, a.short), per_new_row(root, a.rows)
        ratio = long_ / short
        print(f"1. a new row (follower, alert thread, stall check, tail -f --alerts-only): {short:.2f} ms after "
              f"{a.short:,} rows, {long_:.2f} ms after {a.rows:,}: {ratio:.2f}x   goal <= 1.5x")

        path = str(root / f"h{a.rows}" / "metrics.jsonl")
        load_s, load_mb = measure(LOAD, path=path)
        sum_s, sum_mb = measure(SUMMARY, path=path)
        print(f"2. summary of {a.rows:,} rows: peak {sum_mb:.0f} MB in {sum_s:.1f} s; reading the run into the store "
              f"(anchor): peak {load_mb:.0f} MB in {load_s:.1f} s: {sum_mb / load_mb:.2f}x memory   goal <= 2x")

        run = root / "logged"
        write_run(run / "metrics.jsonl", a.rows)
        close_s, close_mb = measure(CLOSE, run=str(run), rows=a.rows)
        shown = min(a.rows + 1, 100_000)
        render_s, _ = measure(RENDER, rows=shown)
        print(f"3. close() after {a.rows:,} rows (table.txt of the last {shown:,}): {close_s:.1f} s, peak "
              f"{close_mb:.0f} MB; rendering those rows from memory (time anchor) {render_s:.1f} s: "
              f"{close_s / render_s:.2f}x (goal <= 1.5x); the store's read (memory anchor) {load_mb:.0f} MB: "
              f"{close_mb / load_mb:.2f}x (goal <= 0.5x)")
        if not math.isfinite(ratio):
            sys.exit(1)
    commands(a.big)


# ------------------------------------------------------------------------------------------- 4.-6. the commands
BIG_ROWS = 100_000
# The anchors: what a user's own stdlib script costs on the same file.
STREAM = """\
import json, sys
w = sys.stdout.write
with open(sys.argv[1]) as f:
    for line in f:
        d = json.loads(line)
        w(json.dumps({"step": d.get("step"), "loss": d.get("loss")}) + "\\n")
"""
# summary with its alert pass left out (steptable.alerts' own figure is bench_alert_history.py): the rest of it
NO_ALERTS = """\
import sys
import steptable.summary.alertpass as alertpass
class NoAlerts(dict):
    def __init__(self, stores, now):
        super().__init__()
    def close(self):
        pass
alertpass.AlertsAhead = NoAlerts
from steptable.cli.main import main
sys.exit(main(["summary", *sys.argv[1:]]))
"""
# summary in one process: its read not split, its alert pass with no worker (as on one core, or where forking is
# not safe)
ONE_PROCESS = """\
import sys
import steptable.summary.alertpass as alertpass
from steptable.ingest import splitread
alertpass.workers_for = lambda cells: 0
splitread.MIN_BYTES = 1 << 62
from steptable.cli.main import main
sys.exit(main(["summary", *sys.argv[1:]]))
"""
# summary with its read in one process, its alert workers as they are (the path before the split read)
READ_NOT_SPLIT = """\
import sys
from steptable.ingest import splitread
splitread.MIN_BYTES = 1 << 62
from steptable.cli.main import main
sys.exit(main(["summary", *sys.argv[1:]]))
"""
# summary's read alone: its imports, then the runs read into stores as summary reads them (split: as summary reads
# them, across two processes where that pays; else in one process)
READ_ONLY = """\
import io, sys
import steptable.cli.summary
from steptable.alerts.replaced import read_replaced
from steptable.cli.reading import read_runs
read_runs(sys.argv[2:], io.StringIO(), read_replaced, split=sys.argv[1] == "split")
"""
READ = """\
import json, sys
with open(sys.argv[1]) as f:
    for line in f:
        json.loads(line)
"""


def write_big(path: Path, rows: int = BIG_ROWS) -> None:
    """The 100k-step run of /work/shared/tools/bigfile.py: ``step`` and 42 metrics of random floats (~148 MB)."""
    rnd = random.Random(0)
    keys = ["loss", "reward/mean", "reward/std", "kl", "entropy", "grad_norm", "lr", "response_length/mean",
            "clip_ratio", "timing_s/gen", "timing_s/update_actor", "timing_s/step"]
    keys += [f"env/all/m{i}" for i in range(30)]
    with open(path, "w") as f:
        for s in range(rows):
            d: dict[str, Any] = {"step": s}
            d.update({k: rnd.random() for k in keys})
            f.write(json.dumps(d) + "\n")


def _env() -> dict[str, str]:
    """The children's environment: byte-compiled modules kept (an installed package has them), this checkout first."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_child(argv: list[str], rows_out: int | None = None) -> tuple[float, float, float]:
    """(seconds, peak resident MB, CPU seconds: user + system) of one process. With ``rows_out`` (a
    ``tail -f``): the time until that many lines were out, then it is sent TERM (its peak memory and CPU count to
    its end)."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE if rows_out else subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=_env())
    if rows_out:
        assert p.stdout is not None
        n = 0
        for _ in p.stdout:
            n += 1
            if n >= rows_out:
                break
        secs = time.perf_counter() - t
        p.send_signal(signal.SIGTERM)
        p.stdout.close()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if not rows_out:
        secs = time.perf_counter() - t
        if p.returncode != 0:
            raise SystemExit(f"{argv}: exit status {p.returncode}")
    elif n < rows_out:
        raise SystemExit(f"{argv}: {n} of {rows_out} rows out")
    return secs, usage.ru_maxrss / 1024 * (1 if sys.platform != "darwin" else 1 / 1024), usage.ru_utime + usage.ru_stime


def worst(argv: list[str], rows_out: int | None = None, repeat: int = 3, label: str = "") -> tuple[float, float]:
    """The worst time and the worst peak memory of ``repeat`` runs (with a ``label``, the worst CPU time is noted in
    ``CPU``: on a shared machine it moves less than the wall time)."""
    runs = [run_child(argv, rows_out) for _ in range(repeat)]
    if label:
        CPU[label] = max(r[2] for r in runs)
        WALL[label] = max(r[0] for r in runs)
        RUNS[label] = [(r[0], r[2]) for r in runs]
    return max(r[0] for r in runs), max(r[1] for r in runs)


CPU: dict[str, float] = {}  # a command's label -> its worst CPU seconds
WALL: dict[str, float] = {}  # a command's label -> its worst wall seconds
RUNS: dict[str, list[tuple[float, float]]] = {}  # a command's label -> (wall, CPU) of each of its runs


def cores() -> int:
    """The cores this process (and so the commands it starts) may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def commands(big: str | None) -> None:
    """4.-6.: tail one-shot, tail -f and summary of the 100k-step run, against the stdlib scripts, same run."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(big) if big else Path(tmp) / "big" / "metrics.jsonl"
        if not big:
            path.parent.mkdir(parents=True)
            write_big(path)
        rows = sum(1 for _ in open(path, "rb"))
        load0 = os.getloadavg()[0]
        st = [sys.executable, "-m", "steptable"]
        small = Path(tmp) / "small" / "metrics.jsonl"
        small.parent.mkdir(parents=True)
        small.write_bytes(b"".join(open(path, "rb").readlines(100_000)))
        for cmd in ("tail", "summary"):  # the modules byte-compiled once, as an installed package has them
            subprocess.run([*st, cmd, str(small)], capture_output=True, env=_env())
        anchor_s, anchor_mb = worst([sys.executable, "-c", STREAM, str(path)], label="the streaming script")
        read_s, _ = worst([sys.executable, "-c", READ, str(path)], label="the reading script")
        one = ["tail", "-n", "0", "--format", "jsonl", "--columns", "step,loss", str(path)]
        tail_s, tail_mb = worst([*st, *one], label="4. tail")
        follow_s, follow_mb = worst([*st, "tail", "-f", *one[1:]], rows_out=rows, label="5. tail -f (to its end)")
        sum_s, sum_mb = worst([*st, "summary", str(path)], label="6. summary")
        worst([sys.executable, "-c", READ_NOT_SPLIT, str(path)],
              label="   summary, its read in one process (alert workers as they are)")
        worst([sys.executable, "-c", ONE_PROCESS, str(path)],
              label="   summary in one process (read not split, no alert worker)")
        rest_s, _ = worst([sys.executable, "-c", NO_ALERTS, str(path)], label="   summary without its alert pass")
        worst([sys.executable, "-c", READ_ONLY, "split", str(path)],
              label="   summary's read alone (start, imports, read), split as summary splits it")
        worst([sys.executable, "-c", READ_ONLY, "one", str(path)],
              label="   summary's read alone (start, imports, read) in one process")
        first = Path(tmp) / "one" / "metrics.jsonl"  # the floor: the interpreter and what tail imports, one row
        first.parent.mkdir(parents=True)
        first.write_bytes(open(path, "rb").readline())
        worst([*st, "summary", str(first)], label="   summary of a one-row file (start, imports)")
        _, floor_mb = worst([*st, *one[:-1], str(first)])
        _, bare_mb = worst([sys.executable, "-c", "pass"])
        payload = rows * 2 * 8 / 2**20
        goal_mb = 2 * payload + 50
        size = path.stat().st_size / 1e6
        print(f"anchors ({rows:,} rows, {size:.0f} MB; worst of 3): the stdlib script streaming step,loss "
              f"{anchor_s:.2f} s, {anchor_mb:.0f} MB; reading every row {read_s:.2f} s")
        for label, secs, mb in (("4. tail -n 0 --format jsonl --columns step,loss", tail_s, tail_mb),
                                ("5. the same with -f, to its last row", follow_s, follow_mb)):
            print(f"{label}: {secs:.2f} s: {secs / anchor_s:.2f}x the streaming script (goal <= 0.5x); peak "
                  f"{mb:.0f} MB (goal <= {goal_mb:.0f} MB: 2x the {payload:.1f} MB of step,loss + 50 MB)")
        print(f"   the floor: the same tail of a one-row file peaks at {floor_mb:.1f} MB (a bare interpreter "
              f"{bare_mb:.1f} MB)")
        print(f"6. summary: {sum_s:.3f} s, peak {sum_mb:.0f} MB: {sum_s / read_s:.3f}x the reading script "
              f"(goal <= 0.5x), {sum_s / anchor_s:.2f}x the streaming one")
        print(f"   summary without its alert pass: {rest_s:.2f} s: {rest_s / read_s:.2f}x the reading script (its "
              "share of the goal: <= 0.3x)")
        read_cpu, read_wall = CPU["the reading script"], WALL["the reading script"]
        print(f"load average (1 min) at the start {load0:.2f}, at the end {os.getloadavg()[0]:.2f}")
        print(f"wall and CPU seconds (CPU: user + system of the process and the workers it waited for; each the "
              f"worst of 3), against the reading script's {read_wall:.2f} s wall, {read_cpu:.2f} s CPU; "
              f"{cores()} cores this process may use (summary's alert workers: one fewer than those no other process "
              f"runs on, as it works too):")
        print("     wall  ratio     CPU  ratio  CPU/wall")
        for label, cpu in CPU.items():
            wall = WALL[label]
            print(f"   {wall:6.2f} {wall / read_wall:5.2f}x  {cpu:6.2f} {cpu / read_cpu:5.2f}x  {cpu / wall:5.2f}  "
                  f"{label}")
        # (a worker starts only on a core no other process runs on: on a shared machine one run of three may have
        # none, and the worst of 3 is then that run's)
        each = ", ".join(f"{w:.3f} s ({w / read_wall:.3f}x, CPU/wall {c / w:.2f})" for w, c in RUNS["6. summary"])
        print(f"   6. summary, each run: {each}")


def _free_core(wait: float = 50.0) -> bool:
    """Wait (up to ``wait`` s) until no other process is runnable (a core free besides the bench's): summary's
    workers and its split read start only then, and a shared machine has such moments."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        with open("/proc/loadavg") as f:
            if int(f.read().split()[3].split("/")[0]) <= 1:
                return True
        time.sleep(0.5)
    return False


def interleaved(big: str | None, rounds: int) -> None:
    """6. as an A/B: rounds of the reading script, summary as users run it, summary with its read in one process,
    and the read alone split and in one process, interleaved, each started once a core is free; medians, wall and
    CPU against the reading script's; the two summaries' texts compared."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(big) if big else Path(tmp) / "big" / "metrics.jsonl"
        if not big:
            path.parent.mkdir(parents=True)
            write_big(path)
        st = [sys.executable, "-m", "steptable", "summary", str(path)]
        runs = {"the reading script": [sys.executable, "-c", READ, str(path)], "summary": st,
                "summary, its read in one process": [sys.executable, "-c", READ_NOT_SPLIT, str(path)],
                "its read alone, split": [sys.executable, "-c", READ_ONLY, "split", str(path)],
                "its read alone, in one process": [sys.executable, "-c", READ_ONLY, "one", str(path)]}
        subprocess.run(st, capture_output=True, env=_env())  # (byte-compiled once)
        got: dict[str, list[tuple[float, float, bool]]] = {k: [] for k in runs}
        texts: dict[str, set[bytes]] = {}
        for _ in range(rounds):
            for label, argv in runs.items():
                free = _free_core()
                t = time.perf_counter()
                p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env())
                assert p.stdout is not None
                out = p.stdout.read()
                _, _, usage = os.wait4(p.pid, 0)
                got[label].append((time.perf_counter() - t, usage.ru_utime + usage.ru_stime, free))
                if label.startswith("summary"):
                    texts.setdefault("summary", set()).add(out)
        med = {k: (sorted(w for w, _, _ in v)[len(v) // 2], sorted(c for _, c, _ in v)[len(v) // 2])
               for k, v in got.items()}
        read_wall, read_cpu = med["the reading script"]
        print(f"6. summary, {rounds} interleaved rounds (medians; each started with a core free: "
              f"{sum(f for v in got.values() for _, _, f in v)} of {rounds * len(runs)}); the same text every time: "
              f"{len(texts['summary']) == 1}")
        print("     wall  ratio     CPU  ratio  CPU/wall")
        for label, (wall, cpu) in med.items():
            print(f"   {wall:6.3f} {wall / read_wall:5.2f}x  {cpu:6.3f} {cpu / read_cpu:5.2f}x  {cpu / wall:5.2f}  "
                  f"{label}")


if __name__ == "__main__":
    main()
