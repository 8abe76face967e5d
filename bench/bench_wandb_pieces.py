"""What finding a resumed W&B run's pieces costs a discovery pass over a sweep of W&B runs in one ``wandb/``.

    python bench/bench_wandb_pieces.py [--runs 1000] [--resumed 0.1] [--repeat 7]

A sweep of ``--runs`` run directories (``offline-run-<time>-<id>/run-<id>.wandb``), a share ``--resumed`` of them
resumed once (a second directory of the same id), each file a copy of one run written by wandb offline at the start
(needs wandb). Timed, the median of ``--repeat`` passes each: ``discover()`` as the product runs it; the same with the
pieces not looked for (every run file a run of its own, as before resumed runs were one run); and the anchor, a walk
of the same tree with ``os.walk`` that lists every file and does nothing else (the floor of any discovery). Printed:
each in ms and as a ratio to the anchor, and what looking for pieces adds per run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any
from unittest import mock

from steptable.ingest.files import discover as discover_mod
from steptable.ingest.files.discover import discover


def one_run(root: Path) -> bytes:
    """The bytes of a 100-step offline W&B run written by wandb itself."""
    code = textwrap.dedent("""
        import wandb
        run = wandb.init(project="p", name="r", mode="offline")
        for s in range(100):
            run.log({"loss": 1.0 / (s + 1), "reward": 0.01 * s}, step=s)
        run.finish()
    """)
    env = {**os.environ, "WANDB_DIR": str(root), "WANDB_SILENT": "true", "WANDB_MODE": "offline"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300, capture_output=True)
    (path,) = root.glob("wandb/offline-run-*/run-*.wandb")
    return path.read_bytes()


def make_sweep(root: Path, data: bytes, runs: int, resumed: float) -> None:
    every = round(1 / resumed) if resumed > 0 else 0
    for i in range(runs):
        for piece in range(2 if every and i % every == 0 else 1):
            d = root / "wandb" / f"offline-run-20261130_{i % 240000:06d}-{piece}id{i:05d}"
            if piece:  # (the resume's directory: the same id, a later time)
                d = root / "wandb" / f"offline-run-20261201_{i % 240000:06d}-0id{i:05d}"
            d.mkdir(parents=True)
            (d / f"run-0id{i:05d}.wandb").write_bytes(data)


def timed(fn: Any, repeat: int) -> float:
    fn()  # (warm: the directory entries cached, the modules imported)
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--resumed", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = one_run(Path(tmp) / "one")
        root = Path(tmp) / "sweep"
        make_sweep(root, data, args.runs, args.resumed)
        found = discover([root])
        n_files = sum(1 for _ in root.glob("wandb/*/run-*.wandb"))

        def walk() -> None:
            for _ in os.walk(root):
                pass

        anchor = timed(walk, args.repeat)
        ours = timed(lambda: discover([root]), args.repeat)
        with mock.patch.object(discover_mod, "pieces", lambda p: [p]):
            alone = timed(lambda: discover([root]), args.repeat)
        shutil.rmtree(root)
    print(f"{args.runs} W&B runs in one wandb/ ({n_files} run files, {len(found)} runs found), median of "
          f"{args.repeat} passes")
    print(f"  anchor, os.walk of the tree      : {anchor * 1e3:7.1f} ms   1.00x")
    print(f"  discover(), pieces looked for    : {ours * 1e3:7.1f} ms   {ours / anchor:.2f}x anchor")
    print(f"  discover(), each file a run      : {alone * 1e3:7.1f} ms   {alone / anchor:.2f}x anchor")
    print(f"  looking for pieces adds {(ours - alone) / args.runs * 1e6:.1f} us a run "
          f"({(ours / alone - 1) * 100:+.0f}% of a discovery pass)")


if __name__ == "__main__":
    main()
