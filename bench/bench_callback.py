"""The HF callback's own work per ``on_log``, in CPU time, against the dict print it replaces, in the same run.

What StepTableCallback(console=True) does per log of a TRL GRPO run (23 keys): RunLog.add (each value read) and
RunLog.flush (StepLogger.log: the JSONL row, the columns fitted, the row rendered and printed through
setup_logging's sinks with its verbose file, the alerts engine), stdout to /dev/null. The anchor is what
transformers' ProgressCallback does per log by default (each float as ``f"{v:.4g}"``, the dict printed with
``tqdm.write``), on the same logs. CPU time of this process (``time.process_time``), best of 5 interleaved rounds
of 2000 logs; seeds 0-2 of the random values, the worst printed last. Then the same again with a tqdm bar live on
stderr, as a trainer has one: both sides clear and redraw it around each line. The whole trainer:
bench_integrations.py.

Run: python bench/bench_callback.py
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from steptable.integrations.rows import RunLog

#: the keys TRL's GRPOTrainer logs each step (trl 0.2x, one reward function)
KEYS = ["loss", "grad_norm", "learning_rate", "num_tokens", "completions/mean_length", "completions/min_length",
        "completions/max_length", "completions/clipped_ratio", "completions/mean_terminated_length",
        "completions/min_terminated_length", "completions/max_terminated_length", "rewards/length_reward/mean",
        "rewards/length_reward/std", "reward", "reward_std", "frac_reward_zero_std", "entropy", "clip_ratio/low_mean",
        "clip_ratio/low_min", "clip_ratio/high_mean", "clip_ratio/high_max", "clip_ratio/region_mean", "epoch"]
LOGS = 2000


def make_logs(seed: int, n: int) -> list[dict[str, Any]]:
    """GRPO-like logs: a decaying learning rate, a growing epoch and token count, whole-number lengths, rewards and
    ratios around zero."""
    rng = random.Random(seed)
    out = []
    for step in range(n):
        d: dict[str, Any] = {}
        for k in KEYS:
            if k == "learning_rate":
                d[k] = 1e-6 * (1 - step / (2 * n))
            elif k == "epoch":
                d[k] = step / 1000
            elif k == "num_tokens":
                d[k] = float(step * 512)
            elif "length" in k:
                d[k] = float(rng.randint(4, 64))
            else:
                d[k] = rng.uniform(-1, 1) * 0.5
        out.append(d)
    return out


def hf_print(logs: dict[str, Any]) -> None:
    """transformers' ProgressCallback.on_log, the default console output of a Trainer."""
    shallow = {k: f"{v:.4g}" if isinstance(v, float) else v for k, v in logs.items()}
    shallow.pop("total_flos", None)
    tqdm.write(str(shallow))


def cpu_per_log(fn: Callable[[int, dict[str, Any]], None], logs: list[dict[str, Any]], start: int) -> float:
    t = time.process_time()
    for i, d in enumerate(logs):
        fn(start + i, d)
    return (time.process_time() - t) / len(logs) * 1e6


def main() -> None:
    for bar in (False, True):
        worst = 0.0
        with open(os.devnull, "w") as null, tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(null), \
                contextlib.redirect_stderr(null):
            live = tqdm(total=10**9, file=sys.stderr) if bar else None  # (as a trainer's bar: on stderr, drawn)
            if live is not None:
                live.update(1)
            for seed in range(3):
                run = RunLog(Path(tmp) / f"run{seed}", "arm", console=True, expect=("eval_loss",))
                warm = make_logs(seed + 100, 50)
                for i, d in enumerate(warm):  # the first row's one-off set-up (columns, files, sinks) left out
                    run.add(d, i)
                    run.flush()

                def ours(step: int, d: dict[str, Any], run: RunLog = run) -> None:
                    run.add(d, step)
                    run.flush()

                best_ours = best_hf = float("inf")
                step = len(warm)
                for _ in range(5):
                    logs = make_logs(seed, LOGS)
                    best_ours = min(best_ours, cpu_per_log(ours, logs, step))
                    step += LOGS
                    best_hf = min(best_hf, cpu_per_log(lambda _s, d: hf_print(d), logs, 0))
                run.close()
                worst = max(worst, best_ours / best_hf)
                print(f"{'bar live, ' if bar else ''}seed {seed}: StepTableCallback work {best_ours:6.1f} us CPU a "
                      f"log; the dict print (anchor) {best_hf:5.1f} us; ratio {best_ours / best_hf:.2f}x",
                      file=sys.__stdout__)
            if live is not None:
                live.close()
        print(f"{'with a tqdm bar live on stderr (as in a trainer), ' if bar else ''}worst ratio {worst:.2f}x the dict "
              "print (1% of the quiet tiny GRPO step, 12 ms: 120 us)", file=sys.__stdout__)


if __name__ == "__main__":
    main()
