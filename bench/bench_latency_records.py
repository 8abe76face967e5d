"""Append-to-screen latency of the live follower for runs written by their own libraries: W&B (offline), TensorBoard
(torch's SummaryWriter), trackio, and JSONL (the anchor, the same harness), all followed at once.

    python bench/bench_latency_records.py                          # 2 runs per format, 10 rows/s, 20 s
    python bench/bench_latency_records.py --runs 1 --seconds 10 --formats wandb,jsonl

Each run is written by its own process at ``--rate`` rows/s; a row carries ``ts`` (the writer's clock, relative to
the bench's start). A thread of the bench watches each run's file every 2 ms (:class:`Writes`), so a row's latency
splits in two: the library's (from ``ts`` to the write that finished the row: wandb-core's, trackio's and
SummaryWriter's own buffering) and steptable's (from that write to the row reaching the store in
``on_change``, as the watch app gets it). A row is dated by the write that finished it: the final file is parsed
again up to each size seen (a write that held only part of a record does not count), and a trackio row by the
commit that made its id visible. Goal (#26): steptable's p99 <= 150 ms with notifications, every format.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

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
    """When each row became readable, watched from outside steptable every 2 ms (times relative to ``t0``): the
    size of a run's file (JSONL, W&B, TensorBoard: :meth:`complete` parses the final file up to each size seen, so
    a row is dated by the write that finished it, not by one that held only part of its record), and a trackio
    database's last committed id (what a reader can see)."""

    def __init__(self, runs: dict[tuple[str, str], Path], t0: float) -> None:
        self.runs = runs
        self.t0 = t0
        self.seen: dict[tuple[str, str], list[tuple[float, int]]] = {k: [] for k in runs}
        self._files: dict[tuple[str, str], Path] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        import sqlite3

        last_glob = 0.0
        cons: dict[tuple[str, str], sqlite3.Connection] = {}
        while not self.stop.is_set():
            now = time.time()
            if now - last_glob > 0.2:
                last_glob = now
                for key, d in self.runs.items():
                    if key not in self._files:
                        found = sorted(p for p in d.glob(PATTERNS[key[0]][0]))
                        if found:
                            self._files[key] = found[0]
            for key, path in self._files.items():
                try:
                    if key[0] == "trackio":
                        if key not in cons:
                            cons[key] = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=0.01)
                        mark = cons[key].execute("SELECT max(id) FROM metrics").fetchone()[0] or 0
                    else:
                        mark = os.stat(path).st_size
                except (OSError, sqlite3.Error):
                    continue
                seen = self.seen[key]
                if not seen or seen[-1][1] != mark:
                    seen.append((now - self.t0, mark))
            time.sleep(0.002)
        for con in cons.values():
            con.close()

    def complete(self, key: tuple[str, str]) -> dict[int, float]:
        """Step -> the time the row of that step could first be read whole."""
        fmt, path = key[0], self._files.get(key)
        out: dict[int, float] = {}
        if path is None:
            return out
        if fmt == "trackio":
            import sqlite3

            con = sqlite3.connect(path)
            ids = con.execute("SELECT id, step FROM metrics ORDER BY id").fetchall()
            con.close()
            k = 0
            for t, top in self.seen[key]:
                while k < len(ids) and ids[k][0] <= top:
                    out.setdefault(ids[k][1], t)
                    k += 1
            return out
        data = path.read_bytes()
        done = 0
        parser = self._parser(fmt, str(path))
        for t, size in self.seen[key]:
            for step in parser(data[done:size], done):
                out.setdefault(step, t)
            done = max(done, size)
        return out

    @staticmethod
    def _parser(fmt: str, label: str) -> Any:
        """A function (new bytes, their offset) -> the steps of the rows they finish (keeps what is left over)."""
        import json

        from steptable.ingest.readers.tensorboard import EventParser
        from steptable.ingest.readers.wandb import WandbParser

        held = [b""]
        if fmt == "jsonl":
            def lines(new: bytes, _: int) -> list[int]:
                buf = held[0] + new
                cut = buf.rfind(b"\n") + 1
                held[0] = buf[cut:]
                return [json.loads(line)["step"] for line in buf[:cut].splitlines() if line.strip()]
            return lines
        parser = WandbParser(label) if fmt == "wandb" else EventParser(label)

        def records(new: bytes, at: int) -> list[int]:
            buf = held[0] + new
            base = at - len(held[0])
            steps: list[int] = []
            while True:
                used, parsed = parser.parse(buf, base)
                steps.extend(parsed.steps)
                buf, base = buf[used:], base + used
                if not (getattr(parser, "more", False) and used):
                    break
            held[0] = buf
            return steps
        return records


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
        writes = Writes(dirs, t0)
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
                complete = writes.complete(key)
                for i in range(len(store)):
                    step, ts = store.step_at(i), store.value(i, "ts")
                    at, wrote = delivered[key].get(step), complete.get(step)
                    if at is None or wrote is None or not isinstance(ts, float):
                        continue
                    ours.append(max(0.0, at - wrote))
                    lib.append(wrote - ts)
            ours.sort()
            lib.sort()
            print(f"  {fmt:<12} rows {got_rows}/{expected} ({len(ours)} dated)  steptable p50 {q(ours, 0.5):.0f} ms  "
                  f"p90 {q(ours, 0.9):.0f} ms  p99 {q(ours, 0.99):.0f} ms (goal <= 150)  max {q(ours, 1.0):.0f} ms"
                  f"   | library write p50 {q(lib, 0.5):.0f} ms  p99 {q(lib, 0.99):.0f} ms")


def q(xs: list[float], p: float) -> float:
    """The ``p`` quantile of sorted seconds, in ms."""
    return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000 if xs else float("nan")


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
