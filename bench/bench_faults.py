"""File faults under a follower: rows a StepLogger's writer wrote that the reader never delivered, per fault kind,
with notifications and with polling.

    python bench/bench_faults.py                # 3,000 rows, a fault every 0.5 s
    python bench/bench_faults.py --rows 1000

A RunWriter writes rows (step, loss) every 1 ms while the file is renamed away (logrotate's rename), and a Follower
follows the directory (``run()`` in a thread, as ``tail -f`` does). Reported: rows written, rows on disk (in all the
files of the directory), rows the follower delivered, rows lost = on disk - delivered. Goal: 0 where the bytes are
on disk. The anchor is the same run without faults (its loss must be 0).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from steptable.ingest import Follower
from steptable.logger.writer import RunWriter


def trial(rows: int, fault: str, poll: float | None) -> tuple[int, int, int]:
    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "run"
        run.mkdir()
        path = run / "metrics.jsonl"
        seen: set[int] = set()
        w = RunWriter(path, lambda _m: None)
        w.write({"step": 0, "loss": 1.0})
        f = Follower([run], poll=poll)
        stop = threading.Event()

        def changed(_runs: object) -> None:
            for store in f.stores.values():
                seen.update(store.steps)

        t = threading.Thread(target=lambda: f.run(stop, changed), daemon=True)
        t.start()
        time.sleep(0.3)
        n = 0
        for s in range(1, rows):
            w.write({"step": s, "loss": 1 / (s + 1)})
            if fault == "rename" and s % 500 == 0 and path.exists():  # (a writer that has not reopened yet: next time)
                n += 1
                os.rename(path, run / f"metrics.jsonl.{n}")
            time.sleep(0.001)
        w.close()
        time.sleep(2.0 if poll is None else 3 * poll + 1)
        stop.set()
        t.join(5)
        changed(None)
        on_disk = sum(p.read_text().count("\n") for p in run.iterdir() if p.name.startswith("metrics.jsonl"))
        return rows, on_disk, len(seen)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3000)
    a = ap.parse_args()
    print(f"{'fault':10} {'mode':10} {'written':>8} {'on disk':>8} {'read':>8} {'lost':>6}")
    for fault in ("none", "rename"):
        for mode, poll in (("notify", None), ("poll 0.5", 0.5)):
            written, disk, read = trial(a.rows, fault, poll)
            print(f"{fault:10} {mode:10} {written:8} {disk:8} {read:8} {disk - read:6}")


if __name__ == "__main__":
    main()
