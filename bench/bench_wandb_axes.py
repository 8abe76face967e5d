"""What keying a W&B run by its declared step metrics costs a one-shot read (``Follower.scan()`` + ``finish()``).

    python bench/bench_wandb_axes.py [--steps 20000] [--every 50] [--repeat 3]

Two runs written by wandb offline (needs wandb), the same ``log`` calls in each: ``--steps`` training calls of 21
keys, an evaluation logged alone after every ``--every``-th. One declares ``train/*`` by ``train/step`` and
``eval/*`` by ``eval/step`` (its rows keyed by ``train/step``, each evaluation in the row of the training step before
it); the anchor declares nothing (its rows keyed by ``_step``, one a call). Printed: the least CPU seconds of
``--repeat`` reads of each, in this process, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from steptable.ingest.files.follow import Follower

WRITE = """
    import sys, wandb
    run = wandb.init(project="p", name="r", mode="offline")
    if sys.argv[1] == "declared":
        run.define_metric("train/step")
        run.define_metric("train/*", step_metric="train/step")
        run.define_metric("eval/step")
        run.define_metric("eval/*", step_metric="eval/step")
    for i in range({steps}):
        run.log({{"train/step": i, **{{f"train/m{{k}}": i * 0.001 + k for k in range(20)}}}})
        if i % {every} == {every} - 1:
            run.log({{"eval/step": i // {every}, "eval/loss": 1.0 / (i + 1)}})
    run.finish()
"""


def write(root: Path, kind: str, steps: int, every: int) -> Path:
    """The run file of ``kind`` (declared or plain) under ``root``."""
    env = {**os.environ, "WANDB_DIR": str(root / kind), "WANDB_SILENT": "true", "WANDB_MODE": "offline"}
    (root / kind).mkdir()
    code = textwrap.dedent(WRITE.format(steps=steps, every=every))
    subprocess.run([sys.executable, "-c", code, kind], env=env, check=True, timeout=900)
    (path,) = (root / kind).glob("wandb/offline-run-*/run-*.wandb")
    return path


def read(path: Path) -> tuple[float, str | None, int]:
    """CPU seconds of one one-shot read of ``path``, its step key and rows."""
    t = time.process_time()
    f = Follower([path])
    f.scan()
    f.finish()
    took = time.process_time() - t
    (store,) = f.stores.values()
    return took, store.step_key, len(store.steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {kind: write(Path(tmp), kind, args.steps, args.every) for kind in ("plain", "declared")}
        best: dict[str, float] = {}
        for _ in range(args.repeat):
            for kind, path in paths.items():
                took, key, rows = read(path)
                best[kind] = min(best.get(kind, took), took)
        for kind, path in paths.items():
            _, key, rows = read(path)
            print(f"{kind:9s} {path.stat().st_size / 1e6:6.1f} MB  step {key!s:11s} {rows:7d} rows  "
                  f"{best[kind]:.3f} s")
        print(f"declared / plain (anchor): {best['declared'] / best['plain']:.2f}x")


if __name__ == "__main__":
    main()
