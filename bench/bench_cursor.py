"""What the cursor line of `steptable tail --since` costs an agent on every poll (o200k tokens, counted offline).

Runs of 14 keys logged every 10 steps to step ~1200: one run; 3 runs in step; 3 runs at different steps, one with
evaluations merged into older rows (tinker's); 100 runs in step; 100 runs at steps spread over 1000-1200 with some
evaluations merged late. For each: the cursor line of `tail --since 0` (rows) and of `tail --alerts-only --since 0`.
Run: python bench/bench_cursor.py   (needs: pip install bpe-openai)
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
import tempfile
from pathlib import Path

from bpe_openai import get_encoding

from steptable.cli.main import main as cli

KEYS = [f"m{k}" for k in range(12)]


def write_runs(root: Path, n: int, spread: bool, seed: int = 0) -> None:
    rng = random.Random(seed)
    for k in range(n):
        end = 1200 - (rng.randrange(0, 200, 10) if spread else 0)
        lines = [{"step": s, **{key: round(rng.random(), 4) for key in KEYS}} for s in range(0, end + 1, 10)]
        if spread and k % 3 == 0:  # an evaluation of an older step lands late
            lines += [{"step": s, "eval/acc": round(rng.random(), 3)} for s in range(0, end - 20, 100)]
            lines.append({"step": end + 10, **{key: 0.5 for key in KEYS}})
        path = root / f"run{k:03d}" / "metrics.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))


def cursor_line(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        cli(argv)
    return [ln for ln in err.getvalue().splitlines(keepends=True) if ln.startswith("steptable tail: cursor")][-1]


def main() -> None:
    enc = get_encoding("o200k_base")
    cases = [("1 run", 1, False), ("3 runs in step", 3, False), ("3 runs apart, late evals", 3, True),
             ("100 runs in step", 100, False), ("100 runs apart, late evals", 100, True)]
    with tempfile.TemporaryDirectory() as tmp:
        for name, n, spread in cases:
            root = Path(tmp) / name.replace(" ", "_").replace(",", "")
            write_runs(root, n, spread)
            rows = cursor_line(["tail", str(root), "--since", "0", "--format", "jsonl"])
            alerts = cursor_line(["tail", str(root), "--alerts-only", "--since", "0"])
            print(f"{name:28s} rows: {len(enc.encode(rows)):4d} tokens ({len(rows):5d} chars)   alerts: "
                  f"{len(enc.encode(alerts)):4d} tokens")
            if "-v" in sys.argv:
                print("   " + rows.rstrip())


if __name__ == "__main__":
    main()
