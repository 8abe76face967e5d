"""What an agent pays (o200k tokens, counted offline) to follow a run.

1. `steptable summary` of a 20-column, 10k-step run, ten draws of its values (seeds 0-9; goal <= 300 tokens for
   every seed: one draw moves the figure by tens of tokens, so each seed is printed with the mean and the worst).
2. A day of training (86,400 s at one step per 30 s = 2,880 steps, 20 metrics) with three injected incidents
   (a non-finite loss, a gradient-norm spike, a reward collapse), read three ways, all measured in this run:
   HF-Trainer-style dict prints, `steptable tail` (the full table), `steptable tail --alerts-only`.
Run: python bench/bench_agent.py   (needs: pip install bpe-openai)
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from bpe_openai import get_encoding

sys.path.insert(0, str(Path(__file__).parent))
from bench_tokens import hf_style

from steptable.cli.main import main as cli

KEYS = ["loss", "grad_norm", "learning_rate", "reward", "reward_std", "kl", "entropy", "clip_ratio",
        "completion_len", "completion_len_max", "accuracy", "format_ok", "advantage", "is_ratio", "throughput",
        "mfu", "t_gen", "t_update", "t_step"]


def write_run(path: Path, steps: int, incidents: bool, t0: float = 1.8e9, seed: int = 1) -> None:
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for s in range(steps):
            r: dict[str, Any] = {
                "step": s, "ts": t0 + 30 * s, "loss": rng.gauss(0, 0.05), "grad_norm": abs(rng.gauss(0.4, 0.05)),
                "learning_rate": 1e-6, "reward": 0.3 + 0.4 * s / steps + rng.gauss(0, 0.03),
                "reward_std": rng.uniform(0.1, 0.4), "kl": abs(rng.gauss(0.002, 0.0005)),
                "entropy": 0.6 + rng.gauss(0, 0.02), "clip_ratio": rng.uniform(0, 0.02),
                "completion_len": rng.uniform(300, 900), "completion_len_max": rng.randint(900, 2048),
                "accuracy": rng.uniform(0.3, 0.7), "format_ok": rng.uniform(0.9, 1.0),
                "advantage": rng.gauss(0, 0.01), "is_ratio": rng.uniform(0.98, 1.02),
                "throughput": rng.uniform(2000, 4000), "mfu": rng.uniform(0.3, 0.5),
                "t_gen": rng.uniform(20, 25), "t_update": rng.uniform(5, 6), "t_step": rng.uniform(29, 31),
            }
            if incidents:
                if s == 700:
                    r["loss"] = math.nan  # 1: a non-finite loss
                if s == 1500:
                    r["grad_norm"] = 40.0  # 2: a gradient-norm spike
                if s >= 2300:
                    r["reward"] = 0.02 + rng.gauss(0, 0.005)  # 3: the reward collapses and stays down
            f.write(json.dumps(r) + "\n")


def run_cli(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli(argv)
    return rc, out.getvalue()


def main() -> None:
    enc = get_encoding("o200k_base")

    def tokens(text: str) -> int:  # line by line: the tokenizer caps one call at 200k tokens
        return sum(len(enc.encode(line)) for line in text.splitlines(keepends=True))

    with tempfile.TemporaryDirectory() as tmp:
        per_seed = []
        for seed in range(10):
            run = Path(tmp) / f"long{seed}" / "metrics.jsonl"
            write_run(run, 10_000, incidents=False, seed=seed)
            _, summary = run_cli(["summary", str(run.parent)])
            per_seed.append(tokens(summary))
        over = sum(t > 300 for t in per_seed)
        print(f"summary, 20 columns x 10k steps, seeds 0-9: mean {sum(per_seed) / len(per_seed):.1f}, worst "
              f"{max(per_seed)} tokens; {over} of {len(per_seed)} seeds over 300 (goal <= 300 for every seed)")
        print(f"  per seed: {per_seed}")

        day = Path(tmp) / "day" / "metrics.jsonl"
        write_run(day, 2880, incidents=True)
        rows = [json.loads(line) for line in day.read_text().splitlines()]
        hf = sum(tokens(hf_style({k: v for k, v in r.items() if k != "ts"}) + "\n") for r in rows)
        _, table = run_cli(["tail", "-n", "0", "--width", "0", str(day.parent)])
        rc, alerts = run_cli(["tail", "--alerts-only", str(day.parent)])
        print("a day of training (2,880 steps, 20 metrics, 3 incidents):")
        print(f"  HF-Trainer dict prints (anchor): {hf:8d} tokens")
        print(f"  steptable tail:                  {tokens(table):8d} tokens  ({tokens(table) / hf:.2f}x anchor)")
        print(f"  steptable tail --alerts-only:    {tokens(alerts):8d} tokens  ({tokens(alerts) / hf:.4f}x anchor), "
              f"exit status {rc}")
        print("  alert lines:")
        for line in alerts.splitlines():
            print("    " + line)


if __name__ == "__main__":
    main()
