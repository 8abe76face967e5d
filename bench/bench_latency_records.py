"""Append-to-screen latency of the live follower for runs written by their own libraries: W&B (offline), TensorBoard
(torch's SummaryWriter), trackio, and JSONL (the anchor, the same harness), all followed at once.

    python bench/bench_latency_records.py                          # 2 runs per format, 10 rows/s, 20 s
    python bench/bench_latency_records.py --runs 1 --seconds 10 --formats wandb,jsonl

Each run is written by its own process at ``--rate`` rows/s; a row carries ``ts`` (the writer's clock, relative to
the bench's start). A thread of the bench stats each run's files every 2 ms and keeps the times their size changed,
so a row's latency splits in two: the library's (from ``ts`` to the first write seen after it: wandb-core's,
trackio's and SummaryWriter's own buffering) and steptable's (from that write to the row reaching the store in
``on_change``, as the watch app gets it). steptable's share is an upper bound: a write seen after ``ts`` may hold
an earlier record only. Goal (#26): steptable's p99 <= 150 ms with notifications, every format.
"""

from __future__ import annotations

import argparse
import bisect
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

FORMATS = ("jsonl", "wandb", "tensorboard", "trackio")
#: writer code per format: ``rows(name)`` yields (step, row) at the rate given, ``row`` holding ``ts``
WRITERS = {
    "jsonl": """
        import json, os
        os.makedirs(os.path.join(root, name), exist_ok=True)
        with open(os.path.join(root, name, "metrics.jsonl"), "a") as f:
            for s, r in rows():
                f.write(json.dumps({"step": s, **r}) + "\\n")
                f.flush()
    """,
    "wandb": """
        import os, wandb
        os.environ["WANDB_DIR"] = os.path.join(root, name)
        os.makedirs(os.environ["WANDB_DIR"], exist_ok=True)
        run = wandb.init(project="lat", name=name)
        for s, r in rows():
            run.log(r, step=s)
        run.finish()
    """,
    "tensorboard": """
        import os
        from torch.utils.tensorboard import SummaryWriter
        w = SummaryWriter(os.path.join(root, name))
        for s, r in rows():
            for k, v in r.items():
                w.add_scalar(k, v, s)
            w.flush()
        w.close()
    """,
    "trackio": """
        import os
        os.environ["TRACKIO_DIR"] = os.path.join(root, name)
        import trackio
        trackio.init(project="lat", name=name)
        for s, r in rows():
            trackio.log(r, step=s)
        trackio.finish()
    """,
}
#: the files of a run whose growth is a write of its rows
PATTERNS = {"jsonl": ["metrics.jsonl"], "wandb": ["wandb/*/run-*.wandb"], "tensorboard": ["events.out.tfevents.*"],
            "trackio": ["*.db", "*.db-wal"]}


def writer_code(fmt: str, root: Path, name: str, rate: float, seconds: float, t0: float) -> str:
    """A writer that, once its library is set up (at the first row asked for), says so and waits for the go."""
    return textwrap.dedent(f"""
        import os, random, time
        root, name, T0 = {str(root / fmt)!r}, {name!r}, {t0!r}
        def rows():
            rng = random.Random(0)
            open({str(root / f"{fmt}-{name}.ready")!r}, "w").close()
            while not os.path.exists({str(root / "go")!r}):
                time.sleep(0.005)
            start = float(open({str(root / "go")!r}).read())
            for s in range(int({rate * seconds!r})):
                due = start + s / {rate!r}
                if due > time.time():
                    time.sleep(due - time.time())
                yield s, {{"ts": time.time() - T0, "loss": rng.random()}}
    """) + textwrap.dedent(WRITERS[fmt])


class Writes:
    """Times each run's files changed size, seen by stat every 2 ms (relative to ``t0``)."""

    def __init__(self, root: Path, runs: dict[tuple[str, str], Path], t0: float) -> None:
        self.runs = runs
        self.t0 = t0
        self.seen: dict[tuple[str, str], list[float]] = {k: [] for k in runs}
        self._sizes: dict[tuple[str, str], int] = {}
        self._files: dict[tuple[str, str], list[Path]] = {k: [] for k in runs}
        self.stop = threading.Event()

    def run(self) -> None:
        last_glob = 0.0
        while not self.stop.is_set():
            now = time.time()
            if now - last_glob > 0.2:
                last_glob = now
                for (fmt, name), d in self.runs.items():
                    self._files[fmt, name] = [p for pat in PATTERNS[fmt] for p in d.glob(pat)]
            for key, files in self._files.items():
                size = 0
                for p in files:
                    try:
                        size += os.stat(p).st_size
                    except OSError:
                        pass
                if size != self._sizes.get(key, 0):
                    self._sizes[key] = size
                    self.seen[key].append(now - self.t0)
            time.sleep(0.002)

    def first_after(self, key: tuple[str, str], ts: float) -> float | None:
        times = self.seen[key]
        i = bisect.bisect_left(times, ts)
        return times[i] if i < len(times) else None


def measure(formats: list[str], runs: int, rate: float, seconds: float) -> None:
    from steptable.ingest import Follower

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = [f"r{i}" for i in range(runs)]
        dirs = {(fmt, n): root / fmt / n for fmt in formats for n in names}
        for d in dirs.values():
            d.mkdir(parents=True)
        t0 = time.time()
        env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "TRACKIO_DISABLE_TELEMETRY": "1"}
        procs = [subprocess.Popen([sys.executable, "-c", writer_code(fmt, root, n, rate, seconds, t0)],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for (fmt, n) in dirs]
        writes = Writes(root, dirs, t0)
        follower = Follower([root], recheck=2.0)
        delivered: dict[tuple[str, str], dict[int, float]] = {k: {} for k in dirs}
        stores: dict[str, tuple[str, str]] = {}

        def on_change(ids: set[str]) -> None:
            now = time.time() - t0
            for rid in ids:
                store = follower.stores[rid]
                key = stores.get(rid)
                if key is None:
                    path = Path(store.path).resolve()
                    key = next((k for k, d in dirs.items() if d.resolve() in (path, *path.parents)), None)
                    if key is None:
                        continue
                    stores[rid] = key
                got = delivered[key]
                for i in range(len(got), len(store)):
                    ts = store.value(i, "ts")
                    if isinstance(ts, float):
                        got.setdefault(store.step_at(i), now)

        stop = threading.Event()
        watcher = threading.Thread(target=writes.run, daemon=True)
        thread = threading.Thread(target=follower.run, args=(stop, on_change), daemon=True)
        watcher.start()
        thread.start()
        # every writer's imports and library start-up done (wandb-core takes seconds) before the first row
        while not all((root / f"{fmt}-{n}.ready").exists() for fmt, n in dirs):
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.05)
        time.sleep(1.0)
        (root / "go.tmp").write_text(repr(time.time() + 0.5))
        (root / "go.tmp").rename(root / "go")
        for p in procs:
            _, err = p.communicate(timeout=seconds + 120)
            if p.returncode != 0:
                raise RuntimeError(f"a writer failed:\n{err.decode()[-2000:]}")
        time.sleep(3.0)  # let the last rows arrive
        stop.set()
        writes.stop.set()
        thread.join(10)
        print(f"{runs} runs per format x {rate:g} rows/s for {seconds:g} s, notify mode: {follower.mode}")
        for fmt in formats:
            ours: list[float] = []
            lib: list[float] = []
            expected = got_rows = 0
            for n in names:
                key = (fmt, n)
                expected += int(rate * seconds)
                store = next((follower.stores[r] for r, k in stores.items() if k == key), None)
                if store is None:
                    continue
                got_rows += len(delivered[key])
                for i in range(len(store)):
                    step, ts = store.step_at(i), store.value(i, "ts")
                    at = delivered[key].get(step)
                    wrote = writes.first_after(key, ts) if isinstance(ts, float) else None
                    if at is None or wrote is None:
                        continue
                    ours.append(max(0.0, at - max(wrote, ts)))
                    lib.append(wrote - ts)
            ours.sort()
            lib.sort()
            q = (lambda xs, p: xs[min(len(xs) - 1, int(p * len(xs)))] * 1000 if xs else float("nan"))  # noqa: E731
            print(f"  {fmt:<12} rows {got_rows}/{expected}  steptable p50 {q(ours, 0.5):.0f} ms  p90 "
                  f"{q(ours, 0.9):.0f} ms  p99 {q(ours, 0.99):.0f} ms (goal <= 150)  max {q(ours, 1.0):.0f} ms"
                  f"   | library write p50 {q(lib, 0.5):.0f} ms  p99 {q(lib, 0.99):.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=2, help="runs per format")
    ap.add_argument("--rate", type=float, default=10.0, help="rows per second per run")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--formats", default=",".join(FORMATS))
    args = ap.parse_args()
    measure(args.formats.split(","), args.runs, args.rate, args.seconds)


if __name__ == "__main__":
    main()
