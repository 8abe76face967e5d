"""File faults under a follower: rows a StepLogger's writer wrote that the reader never delivered, per fault kind,
with notifications and with polling.

    python bench/bench_faults.py                # 3,000 rows, a fault every 500 rows
    python bench/bench_faults.py --rows 1000

A RunWriter writes rows (step, loss) every 1 ms (``mixed``: without pauses) and every 500 rows the file meets a fault:

- rename: logrotate's rename (metrics.jsonl -> metrics.jsonl.N; the writer reopens the path on its next row);
- copytruncate: logrotate's copytruncate (copied to metrics.jsonl.N, then truncated in place; the writer appends on);
- delete: the file unlinked (the writer makes it again on its next row);
- mixed: rename, copytruncate and delete in turn, the writer never pausing.

A Follower follows the directory (``run()`` in a thread, as ``tail -f`` does). Reported: rows written, rows on disk
(in all the files of the directory at the end), rows the follower delivered, rows lost = steps on disk the follower
never delivered (goal 0: the bytes are there), gone = rows written that no file holds (a deletion, or rows written
between copytruncate's copy and its truncation: nothing can recover them; the follower may still have read some).
The anchor is the same run without faults (its loss must be 0).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from steptable.ingest import Follower
from steptable.logger.writer import RunWriter

FAULTS = ("none", "rename", "copytruncate", "delete", "mixed")


def fault_at(path: Path, kind: str, n: int) -> None:
    """Do fault ``kind`` to the file at ``path`` (the ``n``-th fault); nothing when the writer has not made it again."""
    if not path.exists():
        return
    if kind == "rename":
        os.rename(path, path.with_name(f"metrics.jsonl.{n}"))
    elif kind == "copytruncate":
        shutil.copyfile(path, path.with_name(f"metrics.jsonl.{n}"))
        os.truncate(path, 0)
    elif kind == "delete":
        path.unlink()


def trial(rows: int, fault: str, poll: float | None) -> tuple[int, int, int, int]:
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
            if fault != "none" and s % 500 == 0:
                n += 1
                fault_at(path, FAULTS[1 + n % 3] if fault == "mixed" else fault, n)
            if fault != "mixed":
                time.sleep(0.001)
        w.close()
        time.sleep(2.0 if poll is None else 3 * poll + 1)
        stop.set()
        t.join(5)
        changed(None)
        on_disk = {json.loads(line)["step"] for p in run.iterdir() if p.name.startswith("metrics.jsonl")
                   for line in p.read_text().splitlines() if line}
        return rows, len(on_disk), len(on_disk - seen), rows - len(on_disk)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--faults", default=",".join(FAULTS), help="comma-separated subset of " + ", ".join(FAULTS))
    a = ap.parse_args()
    print(f"{'fault':13} {'mode':10} {'written':>8} {'on disk':>8} {'lost':>6} {'gone':>6}")
    for fault in a.faults.split(","):
        for mode, poll in (("notify", None), ("poll 0.5", 0.5)):
            written, disk, lost, gone = trial(a.rows, fault, poll)
            print(f"{fault:13} {mode:10} {written:8} {disk:8} {lost:6} {gone:6}", flush=True)


if __name__ == "__main__":
    main()
