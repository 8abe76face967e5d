"""Write a synthetic sweep for the sweep benches: ``runs`` run directories, each with a metrics.jsonl of ``steps``
rows of ``metrics`` keys and a config.json of its hyper-parameters. usage: sweepdata.py ROOT RUNS STEPS [METRICS]"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path


def make_sweep(root: str | Path, runs: int, steps: int, metrics: int = 20, seed: int = 0) -> int:
    """Write the sweep under ``root`` (kept when it is complete already); returns the bytes of its metrics files."""
    root = Path(root)
    done = root / ".complete"
    if done.exists():
        return int(done.read_text())
    rnd = random.Random(seed)
    keys = ["loss", "reward/mean", "kl", "entropy", "grad_norm", "lr"] + [f"m{i}" for i in range(max(0, metrics - 6))]
    total = 0
    for r in range(runs):
        lr = [1e-6, 3e-6, 1e-5, 3e-5][r % 4]
        d = root / f"lr{lr:g}_seed{r // 4}_r{r}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps({"lr": lr, "seed": r // 4, "optim": {"beta1": 0.9}}))
        level = rnd.random()
        with open(d / "metrics.jsonl", "w") as f:
            for s in range(steps):
                row = {"step": s, **{k: rnd.random() + level for k in keys[:metrics]}}
                row["reward/mean"] = level * s / steps + 0.1 * rnd.random()
                f.write(json.dumps(row) + "\n")
        total += os.path.getsize(d / "metrics.jsonl")
    done.write_text(str(total))
    return total


if __name__ == "__main__":
    print(make_sweep(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 20))
