"""What reading ``add_scalars`` curves as columns of their run costs, against the same values written with
``add_scalar`` into the run's own files (the anchor), both by torch's SummaryWriter in the same run of this script.

    python bench/bench_tbcurves.py [--steps 20000] [--runs 1000] [--repeat 3]

1. The whole command users run, interpreter start included: ``steptable summary RUN`` on a run whose two losses are
   ``add_scalars("loss", {"train", "val"})`` curves (each merged into the run's rows by step), and on the same run
   with the losses as ``loss/train`` and ``loss/val`` scalars (appended with the rest); wall time, best of
   ``--repeat``, round robin.
2. Discovery of a sweep of ``--runs`` TensorBoard runs named ``lr_3_seed_1`` (each run's first tag is read to tell
   it from a curve), and of the same sweep at its start, every event file without a scalar yet (each may be a
   pending curve: the directories above it are looked in), against the same sweep named ``lr3seed1`` (the anchor):
   ``discover()`` in this process, the first pass and a later one (verdicts kept), best of ``--repeat``.
Needs torch (``pip install torch==2.13.0``) and tensorboard.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_runs(root: Path, steps: int) -> tuple[Path, Path]:
    from torch.utils.tensorboard import SummaryWriter

    curves, flat = SummaryWriter(str(root / "curves")), SummaryWriter(str(root / "flat"))
    for s in range(steps):
        for w in (curves, flat):
            w.add_scalar("train/reward", s * 1e-3, s)
            w.add_scalar("train/kl", 1e-3 + s * 1e-9, s)
            w.add_scalar("lr", 1e-5, s)
        curves.add_scalars("loss", {"train": 1 / (s + 1), "val": 2 / (s + 1)}, s)
        flat.add_scalar("loss/train", 1 / (s + 1), s)
        flat.add_scalar("loss/val", 2 / (s + 1), s)
    curves.close()
    flat.close()
    return root / "curves", root / "flat"


def empty_events(logdir: Path) -> Path:
    """An event file as a SummaryWriter leaves it before its first flush of a scalar (the file_version event)."""
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(logdir))
    w.flush()
    (event,) = logdir.glob("events.out.tfevents.*")
    return event


def command(path: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "steptable", "summary", str(path)], check=True, capture_output=True,
                   cwd=tempfile.gettempdir())
    return time.perf_counter() - t0


def sweep(root: Path, event: Path, runs: int, sep: str) -> Path:
    out = root / f"sweep{sep or 'plain'}"
    for i in range(runs):
        d = out / f"lr{sep}{i}{sep}seed{sep}{i % 3}"
        d.mkdir(parents=True)
        shutil.copy(event, d)
    return out


def discovery(path: Path, repeat: int) -> tuple[float, float]:
    from steptable.ingest.files.discover import discover

    t0 = time.perf_counter()
    discover([path])
    first = time.perf_counter() - t0
    later = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        discover([path])
        later.append(time.perf_counter() - t0)
    return first, min(later)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        curves, flat = write_runs(root, a.steps)
        times: dict[Path, list[float]] = {curves: [], flat: []}
        for _ in range(a.repeat):
            for p in times:
                times[p].append(command(p))
        c, f = min(times[curves]), min(times[flat])
        print(f"steptable summary, {a.steps} steps, 2 of 5 metrics as add_scalars curves: {c:.2f} s;"
              f" the same as scalars (anchor): {f:.2f} s; ratio {c / f:.2f}x")
        (event,) = flat.glob("events.out.tfevents.*")
        small = root / "small"
        with_sep = sweep(small, event, a.runs, "_")
        plain = sweep(small, event, a.runs, "")
        fresh = sweep(root / "fresh", empty_events(root / "empty"), a.runs, "_")
        discovery(curves, 1)  # (the imports and the first tag reader's, paid before any sweep is timed)
        (p1, p2) = discovery(plain, a.repeat)
        print(f"discover(), {a.runs} TensorBoard runs named lrIseedJ (anchor): first pass {p1:.3f} s, later {p2:.3f} s")
        for name, path in (("named lr_I_seed_J", with_sep), ("at their start (no scalar yet)", fresh)):
            c1, c2 = discovery(path, a.repeat)
            print(f"  {name}: first pass {c1:.3f} s, later {c2:.3f} s; ratio first {c1 / p1:.2f}x,"
                  f" later {c2 / p2:.2f}x")


if __name__ == "__main__":
    main()
