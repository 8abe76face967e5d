"""Hostile shapes against the commands as users run them: rows of many keys in changing orders, and a key of a
megabyte among ordinary metrics.

    python bench/bench_bounds.py                 # seeds 0 1 2, 6 rows of 50 000 keys, 1,990-key rows x 500
    python bench/bench_bounds.py --seeds 0 --keys 20000

wide rows: ``steptable tail -n 1`` (a subprocess, as users run it) and the JSONL parser alone (the internal piece) on
a file whose rows hold the same keys, shuffled in every row, against the anchor: the same rows with the keys in one
order, in the same run. Reported per seed and the worst: seconds and the ratio shuffled / ordered.

new keys: rows of 20 keys never seen before, one row a chunk through the parser (as ``tail -f`` meets them), against
the same rows with one set of keys.

long key: ``steptable compare`` and ``steptable legend`` (text) on two arms of 30 metrics beside one key of
``--key-mb`` MB (a hiding rule describes the key in the legend); the anchor: the same runs with a short key. The
output's bytes past the anchor's, in copies of the key: the key's own line (and its description) should be all;
padding every line to the key made it (metrics x arms) copies.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from steptable.ingest.readers.jsonl import JsonlParser  # noqa: E402
from steptable.ingest.store import RunStore  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def wide_file(path: Path, n_keys: int, rows: int, seed: int | None) -> None:
    """``rows`` rows of ``n_keys`` keys each; shuffled per row with ``seed``, in one order with None."""
    rng = random.Random(seed)
    keys = [f"tag/{j}" for j in range(n_keys)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for s in range(rows):
            if seed is not None:
                rng.shuffle(keys)
            f.write(json.dumps({"step": s, "loss": 1 / (s + 1), **{k: s * 0.5 for k in keys}}) + "\n")


def command(argv: list[str], timeout: float = 600) -> tuple[float, int]:
    """Seconds ``steptable *argv`` took and the bytes it printed on stdout."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "steptable", *argv], capture_output=True, env=ENV, timeout=timeout,
                         check=True).stdout
    return time.perf_counter() - t0, len(out)


def parse_only(path: Path) -> float:
    """Seconds the JSONL parser and a RunStore take over the file (1 MB chunks of whole lines)."""
    data = path.read_bytes()
    t0 = time.perf_counter()
    store, parser, start, lineno = RunStore("r", str(path)), JsonlParser(str(path)), 0, 1
    while start < len(data):
        end = data.rfind(b"\n", start, start + (1 << 20)) + 1 or data.index(b"\n", start) + 1
        chunk = data[start:end]
        store.add(parser.parse(chunk, lineno))
        lineno += chunk.count(b"\n")
        start = end
    return time.perf_counter() - t0


def wide(base: Path, seeds: list[int], n_keys: int, rows: int) -> None:
    print(f"wide rows: {rows} rows x {n_keys} keys")
    print("| seed | tail ordered s | tail shuffled s | ratio | parse ordered s | parse shuffled s | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    worst = (0.0, 0.0)
    for seed in seeds:
        ordered, shuffled = base / f"o{n_keys}_{seed}" / "metrics.jsonl", base / f"s{n_keys}_{seed}" / "metrics.jsonl"
        wide_file(ordered, n_keys, rows, None)
        wide_file(shuffled, n_keys, rows, seed)
        t_o, _ = command(["tail", "-n", "1", str(ordered)])
        t_s, _ = command(["tail", "-n", "1", str(shuffled)])
        p_o, p_s = parse_only(ordered), parse_only(shuffled)
        worst = (max(worst[0], t_s / t_o), max(worst[1], p_s / p_o))
        print(f"| {seed} | {t_o:.2f} | {t_s:.2f} | {t_s / t_o:.2f} | {p_o:.2f} | {p_s:.2f} | {p_s / p_o:.2f} |")
    print(f"worst ratio: tail {worst[0]:.2f}, parse {worst[1]:.2f}\n")


def one_row_chunks(rows: list[bytes]) -> float:
    """Seconds the JSONL parser and a RunStore take over ``rows`` given one a chunk (as ``tail -f`` meets them)."""
    store, parser = RunStore("r", "r.jsonl"), JsonlParser("r.jsonl")
    t0 = time.perf_counter()
    for i, line in enumerate(rows):
        store.add(parser.parse(line, i + 1))
    return time.perf_counter() - t0


def new_keys(rows: int) -> None:
    """Every row 20 keys never seen before (per-sample metrics), one row a chunk; the anchor: the same 20 keys in every
    row. Past 2,000 keys a run stores no more (MAX_KEYS): the rest of the cost is the parse."""
    def dump(fresh: bool) -> list[bytes]:
        return [json.dumps({"step": i, "loss": 1 / (i + 1), **{f"k{i if fresh else 0}_{j}": j for j in range(20)}})
                .encode() + b"\n" for i in range(rows)]
    anchor, fresh = one_row_chunks(dump(False)), one_row_chunks(dump(True))
    print(f"new keys every row, {rows} one-row chunks: anchor {anchor:.2f} s, new keys {fresh:.2f} s, "
          f"ratio {fresh / anchor:.1f}\n")


def _arms(root: Path, key: str) -> None:
    """Two arms of 30 metrics and ``key`` under ``root``, and a schema file whose rule describes the key."""
    for arm, lift in (("a", 0.0), ("b", 0.1)):
        (root / arm).mkdir(parents=True)
        with open(root / arm / "metrics.jsonl", "w") as f:
            for s in range(50):
                f.write(json.dumps({"step": s, "loss": 1 / (s + 1) + lift, key: s * 0.5,
                                    **{f"t/m{j}": j + s * 0.01 for j in range(30)}}) + "\n")
    (root / "steptable.toml").write_text('[schema]\nname = "mine"\n[match]\nkeys = ["loss"]\n'
                                         '[[rules]]\npattern = "t/*"\ndesc = "timing ({key})"\nhide = true\n')


def long_key(base: Path, key_mb: float) -> None:
    huge, short = "t/" + "k" * int(key_mb * (1 << 20)), "t/k"
    _arms(base / "longkey", huge)
    _arms(base / "shortkey", short)
    print(f"long key: {len(huge):,} characters; anchor: the same runs with the key {short!r}")
    print("| command | s | output bytes | anchor bytes | copies of the key: (output - anchor) / key |")
    print("|---|---:|---:|---:|---:|")
    for argv in (["compare", "--baseline", "a"], ["legend"]):
        t, n = command([*argv, str(base / "longkey")])
        _, n0 = command([*argv, str(base / "shortkey")])
        print(f"| {argv[0]} | {t:.2f} | {n:,} | {n0:,} | {(n - n0) / (len(huge) - len(short)):.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--keys", type=int, default=50_000)
    ap.add_argument("--rows", type=int, default=6)
    ap.add_argument("--key-mb", type=float, default=1.0)
    ap.add_argument("--new-key-rows", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        wide(base, args.seeds, args.keys, args.rows)
        wide(base, args.seeds, 1990, 500)
        new_keys(args.new_key_rows)
        long_key(base, args.key_mb)


if __name__ == "__main__":
    main()
