"""Finding the copies of one training among a sweep's runs (steptable.ingest.copies): what it costs against reading
the same runs (the anchor, measured in the same run).

    python bench/bench_copies.py                        # 300 runs x 2,000 rows x 30 keys, seeds 0-2, worst reported
    python bench/bench_copies.py --runs 1000 --rows 500

Each seed writes a sweep of JSONL runs (a noisy loss and 29 other metrics, a shared learning-rate schedule and
epoch), plus, for one run in ten, a copy of its rows by another logger (a CSV) under transformers' tracker names in
float32 (as a TensorBoard or W&B file of the same training holds them). Timed: the read (a Follower's scan to the
end: the anchor), the first ``Copies.update`` over the stores (what ``compare``, ``summary`` and ``tail`` add), an
update with nothing changed and one after every run grew by a row (what ``tail -f`` and the watch add each poll), and
the whole ``steptable tail -n 0`` command. Checked: every copy found, no seed taken for another's copy.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from steptable.ingest import Follower
from steptable.ingest.copies import Copies


def f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def write(root: Path, runs: int, rows: int, seed: int) -> int:
    """The sweep; returns how many copies it holds."""
    copies = 0
    for r in range(runs):
        rng = random.Random(seed * 100_003 + r)
        lines, tracker = [], []
        for s in range(1, rows + 1):
            row = {"step": s, "loss": 2.0 - s / rows + rng.gauss(0, 0.05), "learning_rate": 1e-4 * min(1.0, s / 50),
                   "epoch": s / rows}
            row.update({f"m{k}": rng.random() for k in range(27)})
            lines.append(json.dumps(row))
            tracker.append({"step": s, **{f"train/{k}": repr(f32(v)) for k, v in row.items() if k != "step"}})
        run = root / f"arm{r % 10}_seed{r // 10}"
        run.mkdir()
        (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
        if r % 10 == 0:
            (run / "tracker").mkdir()
            with (run / "tracker" / "metrics.csv").open("w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(tracker[0]))
                w.writeheader()
                w.writerows(tracker)
            copies += 1
    return copies


def grow(root: Path) -> None:
    """One row more in every run and copy (the copies' as the same values in float32, tracker names)."""
    for path in root.rglob("metrics.jsonl"):
        last = json.loads(path.read_text().rsplit("\n", 2)[-2])
        last["step"] += 1
        with path.open("a") as f:
            f.write(json.dumps(last) + "\n")
        copy = path.parent / "tracker" / "metrics.csv"
        if copy.exists():
            with copy.open("a", newline="") as f:
                csv.writer(f).writerow([last["step"], *(repr(f32(v)) for k, v in last.items() if k != "step")])


def once(runs: int, rows: int, seed: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        expected = write(root, runs, rows, seed)
        t0 = time.perf_counter()
        follower = Follower([root])
        follower.scan()
        follower.finish()
        read = time.perf_counter() - t0
        copies = Copies()
        t0 = time.perf_counter()
        found = copies.update(follower.stores)
        cold = time.perf_counter() - t0
        assert len(found) == expected and all(k.endswith("tracker/metrics.csv") for k in found), found
        t0 = time.perf_counter()
        copies.update(follower.stores)
        still = time.perf_counter() - t0
        grow(root)
        follower.scan()
        t0 = time.perf_counter()
        assert len(copies.update(follower.stores)) == expected
        grown = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "steptable", "tail", "-n", "0", str(root)], check=True,
                       capture_output=True)
        command = time.perf_counter() - t0
        return {"read": read, "cold": cold, "still": still, "grown": grown, "command": command}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args()
    got = [once(a.runs, a.rows, seed) for seed in range(a.seeds)]
    print(f"{a.runs} runs (+ {a.runs // 10} copies) x {a.rows} rows x 30 keys, seeds 0-{a.seeds - 1}, worst:")
    worst = {k: max(g[k] for g in got) for k in got[0]}
    read = min(g["read"] for g in got)
    print(f"  read (anchor)                  {worst['read']:7.3f} s")
    for k, what in (("cold", "first update (compare, tail)"), ("still", "update, nothing new"),
                    ("grown", "update, every run +1 row")):
        ratios = [g[k] / g["read"] for g in got]
        print(f"  {what:30s} {worst[k]:7.3f} s   {max(ratios):.3f}x the read")
    print(f"  steptable tail -n 0 (whole)    {worst['command']:7.3f} s   {worst['command'] / read:.2f}x the read")


if __name__ == "__main__":
    main()
