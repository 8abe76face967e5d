"""Idle cost of a live follower over a logs tree full of text files that are not runs.

    python bench/bench_idle.py                        # 20,000 small .txt files beside one run, 40 s idle
    python bench/bench_idle.py --files 5000 --seconds 5

A researcher's logs directory holds more than metrics: READMEs, prompts, vocabularies, server logs. Each `.txt` /
`.log` / `.out` file might be a console log, so the follower has to look at it; once it has, a file that shows no
metrics line must cost next to nothing while nothing changes. Measured: CPU seconds (user + system, getrusage) the
follower's thread uses over ``--seconds`` of idling (after its first scan and a settling pause), as a share of one
core, over the tree with the text files (candidate) and over the same run alone (anchor), each in a fresh
interpreter; also the one-shot read of the whole tree (`steptable tail`). Goal: the idle follower over the tree
costs at most 2x the anchor's share plus 5 points of a core.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def make_tree(root: Path, files: int) -> None:
    run = root / "run" / "logs"
    run.mkdir(parents=True)
    with open(run / "metrics.jsonl", "w") as f:
        f.writelines(json.dumps({"step": s, "loss": 1 / (s + 1)}) + "\n" for s in range(200))
    for i in range(files):
        d = root / "data" / f"d{i // 100}"
        if i % 100 == 0:
            d.mkdir(parents=True)
        (d / f"f{i % 100}.txt").write_text("some text line\nanother one\n")


def idle(root: str, warm: float, seconds: float) -> None:
    """Child: follow ``root``, let it settle, print the CPU share of a core used while idle."""
    from steptable.ingest import Follower

    follower = Follower([root])
    stop = threading.Event()
    threading.Thread(target=follower.run, args=(stop, lambda changed: None), daemon=True).start()
    time.sleep(warm)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(seconds)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    stop.set()
    used = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    print(json.dumps({"share": used / seconds, "mode": follower.mode, "runs": len(follower.stores)}))


def measure(root: Path, warm: float, seconds: float) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", str(root), "--warm", str(warm), "--seconds",
                          str(seconds)], capture_output=True, text=True, check=True)
    got: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=40.0, help="idle time measured (longer than a re-check)")
    ap.add_argument("--warm", type=float, default=8.0, help="seconds from the follower's start to the measurement")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        idle(args.child, args.warm, args.seconds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        alone, tree = Path(tmp) / "alone", Path(tmp) / "tree"
        make_tree(alone, 0)
        make_tree(tree, args.files)
        anchor = measure(alone, args.warm, args.seconds)
        cand = measure(tree, args.warm, args.seconds)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "steptable", "tail", str(tree), "-n", "1"], capture_output=True,
                       check=True)
        one_shot = time.perf_counter() - t0
    print(f"idle follower, {args.seconds:g} s after {args.warm:g} s of settling ({cand['mode']})")
    print(f"  one run alone (anchor):        {100 * anchor['share']:5.1f}% of a core")
    print(f"  + {args.files:,} small .txt files: {100 * cand['share']:5.1f}% of a core"
          f"   ratio {cand['share'] / max(anchor['share'], 1e-3):.1f}x, +{100 * (cand['share'] - anchor['share']):.1f}"
          f" points   goal <= 2x + 5 points")
    print(f"  runs found: {int(cand['runs'])} (the one run); one-shot `steptable tail` of the tree: {one_shot:.2f} s")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
