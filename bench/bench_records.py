"""Full-ingest time of the same rows as a W&B run file, TensorBoard events and a trackio database, against the
same rows as JSONL (the anchor), measured in the same run.

    python bench/bench_records.py                    # 20k steps x 42 keys (each format written by its library)
    python bench/bench_records.py --steps 100000 --data /tmp/rec100k   # the issue's size (written once, kept)

Each format is written by its own library (wandb offline, torch's SummaryWriter, trackio), then read by
``Follower.scan()`` + ``finish()`` (what ``tail``/``summary`` do, and what ``watch`` does before its first frame) in
a fresh interpreter, best of ``--repeat``. Goal: every format within 2x the JSONL time for the same rows.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

KEYS = [f"grp{g}/metric_{i}" for g in range(6) for i in range(7)]  # 42 keys


def _rows_code(steps: int) -> str:
    return textwrap.dedent(f"""
        import math, random
        rng = random.Random(0)
        KEYS = {KEYS!r}
        def rows():
            for s in range({steps}):
                yield s, {{k: rng.gauss(0, 1) * 10 ** rng.randint(-4, 3) for k in KEYS}}
    """)


def _writer(code: str, env: dict[str, str], steps: int) -> float:
    full = {**os.environ, **env, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "TRACKIO_DISABLE_TELEMETRY": "1"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", _rows_code(steps) + textwrap.dedent(code)], env=full, check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def write_wandb(wandb_dir: Path, steps: int, name: str) -> float:
    """The rows logged by wandb offline (run ``name``) under ``wandb_dir``; returns the seconds it took."""
    return _writer(f"""
        import wandb
        run = wandb.init(project="bench", name={name!r})
        for s, r in rows():
            run.log(r, step=s)
        run.finish()
    """, {"WANDB_DIR": str(wandb_dir)}, steps)


FORMATS = ("jsonl", "wandb", "tensorboard", "trackio")


def generate(root: Path, steps: int, formats: tuple[str, ...] = FORMATS) -> dict[str, Path]:
    """The runs of ``formats`` under ``root``, each written once by its library (a marker file per format, or the
    one ``written`` marker of a folder that holds them all, says it is there)."""
    every = {"jsonl": root / "jsonl" / "metrics.jsonl", "wandb": root / "wb", "tensorboard": root / "tb" / "run",
             "trackio": root / "tk"}
    out = {k: every[k] for k in FORMATS if k in formats}
    done = root / "written"
    if done.exists() and done.read_text() == str(steps):
        return out
    for fmt, p in out.items():
        marker = root / f"written.{fmt}"
        if marker.exists() and marker.read_text() == str(steps):
            continue
        (p.parent if p.suffix else p).mkdir(parents=True, exist_ok=True)
        _WRITE[fmt](p, steps)
        marker.write_text(str(steps))
    return out


def _write_jsonl(path: Path, steps: int) -> None:
    _writer(f"""
        import json
        with open({str(path)!r}, "w") as f:
            for s, r in rows():
                f.write(json.dumps({{"step": s, **r}}) + "\\n")
    """, {}, steps)


def _write_wandb(path: Path, steps: int) -> None:
    t = write_wandb(path, steps, "bench-run")
    print(f"  wandb wrote {steps} steps in {t:.1f} s", file=sys.stderr)


def _write_tensorboard(path: Path, steps: int) -> None:
    _writer(f"""
        from torch.utils.tensorboard import SummaryWriter
        w = SummaryWriter({str(path)!r}, max_queue=10000, flush_secs=3600)
        for s, r in rows():
            for k, v in r.items():
                w.add_scalar(k, v, s)
        w.close()
    """, {}, steps)


def _write_trackio(path: Path, steps: int) -> None:
    _writer("""
        import trackio
        trackio.init(project="bench", name="bench-run")
        for s, r in rows():
            trackio.log(r, step=s)
        trackio.finish()
    """, {"TRACKIO_DIR": str(path)}, steps)


_WRITE = {"jsonl": _write_jsonl, "wandb": _write_wandb, "tensorboard": _write_tensorboard, "trackio": _write_trackio}


#: optional modules a reader uses when installed, with the format whose reader falls back without them (TensorBoard's
#: checksums, the W&B walk in C, an optional extension); and the format's own library, which its reader must never
#: need (W&B, trackio: the same figure without it)
OPTIONAL = {"tensorboard": ("google_crc32c",), "wandb": ("wandb", "steptable.ingest.readers._wandbwalk"),
            "trackio": ("trackio",)}


def measure(path: Path, without: str | None = None, tree: Path | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, rows) of a full ingest of ``path`` in a fresh interpreter; ``without``: a module
    made unimportable there first (the reader's fallback is measured); ``tree``: the steptable imported there
    (default: this one). CPU time is the steadier of the two on a shared machine (waiting for a core is not in it)."""
    block = f"import sys; sys.modules[{without!r}] = None\n" if without else ""
    code = block + textwrap.dedent(f"""
        import time, json
        from steptable.ingest.files.follow import Follower
        t0, c0 = time.perf_counter(), time.process_time()
        f = Follower([{str(path)!r}]); f.scan(); f.finish()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        print(json.dumps([dt, dc, sum(len(s) for s in f.stores.values())]))
    """)
    env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree)}
    # (run in the tree: ``-c`` puts the working directory first on sys.path, before PYTHONPATH)
    got = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env,
                         cwd=tree)
    dt, dc, rows = json.loads(got.stdout.strip().splitlines()[-1])
    return float(dt), float(dc), int(rows)


def command_cpu(path: Path, tree: Path | None = None) -> float:
    """CPU seconds of the whole command as users run it, ``steptable tail -n 0 --format jsonl PATH`` (a fresh
    process: imports, the read and every row printed, to /dev/null), measured as the child's CPU time."""
    root = tree or Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "steptable", "tail", "-n", "0", "--format", "jsonl", str(path)], env=env,
                   cwd=root, check=True, stdout=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, help="write the runs here once and reuse them (default: a temporary dir)")
    ap.add_argument("--formats", default=",".join(FORMATS),
                    help="the formats to write and read, comma-separated (JSONL, the anchor, always); e.g. "
                         "`jsonl,wandb` for the issue's 100k-step W&B run without writing the others")
    ap.add_argument("--command", action="store_true",
                    help="also the whole command `steptable tail -n 0 --format jsonl PATH` on each format (child CPU)")
    ap.add_argument("--against", type=Path, metavar="DIR",
                    help="a folder holding another steptable package (an older commit: `git archive REV steptable | "
                         "tar -x -C DIR`), measured in the same round robin")
    args = ap.parse_args()
    random.seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        formats = tuple(dict.fromkeys(["jsonl", *args.formats.split(",")]))
        unknown = set(formats) - set(FORMATS)
        if unknown:
            ap.error(f"unknown formats: {', '.join(sorted(unknown))} (known: {', '.join(FORMATS)})")
        paths = generate(args.data or Path(tmp), args.steps, formats)
        sizes = {k: sum(f.stat().st_size for f in (p.rglob("*") if p.is_dir() else [p]) if f.is_file())
                 for k, p in paths.items()}
        # round robin (every format once, then again): a load that comes and goes on a shared machine falls on
        # all of them alike; the best of --repeat each
        names = [*paths, *(f"{n}/{m}" for n in paths for m in OPTIONAL.get(n, ()))]
        trees: list[Path | None] = [None] if args.against is None else [None, args.against]
        runs: dict[tuple[Path | None, str], list[tuple[float, float, int]]] = {(t, n): [] for t in trees
                                                                                 for n in names}
        for _ in range(args.repeat):
            for tree in trees:
                for name in names:
                    fmt, _, without = name.partition("/")
                    runs[tree, name].append(measure(paths[fmt], without or None, tree))
        best = {key: min(dt for dt, _, _ in got) for key, got in runs.items()}
        cpu = {key: min(dc for _, dc, _ in got) for key, got in runs.items()}
        for tree in trees:
            if args.against is not None:
                print("this tree:" if tree is None else f"{tree}:")
            for name in names:
                fmt, _, without = name.partition("/")
                label = (f"{fmt:12s} without {without}" if without
                         else f"{fmt:12s} {sizes[fmt] / 1e6:7.1f} MB  {runs[tree, name][0][2]:7d} rows")
                dt, anchor = best[tree, name], best[tree, "jsonl"]
                dc, cpu_anchor = cpu[tree, name], cpu[tree, "jsonl"]
                ratio = "" if name == "jsonl" else f" = {dt / anchor:5.2f}x JSONL"
                cpu_ratio = "" if name == "jsonl" else f" = {dc / cpu_anchor:5.2f}x JSONL"
                print(f"{label}  ingest {dt:6.3f} s{ratio}   CPU {dc:6.3f} s{cpu_ratio}")
                counts = sorted({rows for _, _, rows in runs[tree, name]})
                if counts != [runs[tree, "jsonl"][0][2]]:  # (a read that took fewer rows is no figure)
                    print(f"  ^ rows read: {counts}, not the JSONL run's {runs[tree, 'jsonl'][0][2]}: not a figure")
            assert not math.isnan(best[tree, "jsonl"])
        if args.command:
            cmd: dict[tuple[Path | None, str], float] = {}
            for _ in range(args.repeat):
                for tree in trees:
                    for fmt in paths:
                        got = command_cpu(paths[fmt], tree)
                        cmd[tree, fmt] = min(cmd.get((tree, fmt), math.inf), got)
            print(f"whole command `steptable tail -n 0 --format jsonl PATH`, CPU of the child, best of {args.repeat}:")
            for tree in trees:
                where = "this tree" if tree is None else str(tree)
                cells = [f"{fmt} {cmd[tree, fmt]:.3f} s" if fmt == "jsonl" else
                         f"{fmt} {cmd[tree, fmt]:.3f} s = {cmd[tree, fmt] / cmd[tree, 'jsonl']:.2f}x" for fmt in paths]
                print(f"  {where}: " + ",  ".join(cells))


if __name__ == "__main__":
    main()
