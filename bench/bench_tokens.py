"""Console tokens per step (o200k, counted offline) for a 20-metric RL step.

What StepLogger prints to a piped stdout for 100 steps (each row with its 1-character level icon, the header at its
default cadence and whenever a column widens, the legend once), per step, against an HF-Trainer-style dict print of
the same step measured in the same run.
Ten runs of random values (seeds 0-9): one draw moves the figure by up to 0.3, so the mean is the figure and the range
and seed 0 (the one run measured before 2026-11-26) are printed beside it. Goal: <= 60 tokens per step.
The headline is what a user writes without thinking about widths: ``Col(k, max(len(k), 5), k)`` for each key, the
automatic format (at most 3 significant digits). Beside it: the widths left out (``Col(k)``: fitted as rows arrive,
widening only, the header printed again when one widens), and the columns declared as a schema would declare them
(short headers, whole seconds for timings, whole tokens for lengths and throughput), at fixed 5/6-cell widths and at
widths fitted over the same rows beforehand (a look-ahead a live logger cannot do).
Run: python bench/bench_tokens.py  (needs: pip install bpe-openai). ``--steps N`` measures longer runs of the same
draws (the headline, and the goal, are 100 steps).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import tempfile
from statistics import mean
from typing import Any

from bpe_openai import get_encoding

from steptable import StepLogger, setup_logging
from steptable.logger.consolecols import ConsoleLayout
from steptable.schemas import auto_col
from steptable.table.columns import Col

COLS = [
    Col("step", 5, "step", "d", "optimizer step"),
    Col("loss", 6, "loss", None, "policy-gradient loss"),
    Col("grad_norm", 5, "gn", None, "gradient norm before clipping"),
    Col("learning_rate", 6, "lr", ".0e", "learning rate"),
    Col("reward", 5, "rew", None, "mean reward", "higher"),
    Col("reward_std", 5, "rstd", None, "reward std within groups"),
    Col("kl", 5, "kl", None, "KL to the reference policy"),
    Col("entropy", 5, "ent", None, "mean token entropy"),
    Col("clip_ratio", 5, "clip", None, "share of tokens clipped"),
    Col("completion_len", 5, "len", ".0f", "mean completion length (tokens)"),
    Col("completion_len_max", 5, "lmax", ".0f", "longest completion"),
    Col("accuracy", 5, "acc", None, "share of correct answers", "higher"),
    Col("format_ok", 5, "fmt", None, "share with valid format", "higher"),
    Col("advantage", 5, "adv", None, "mean advantage"),
    Col("is_ratio", 5, "isr", None, "mean importance ratio"),
    Col("throughput", 5, "tps", ".0f", "tokens per second"),
    Col("mfu", 5, "mfu", None, "model flops utilisation"),
    Col("t_gen", 5, "tgen", ".0f", "seconds generating"),
    Col("t_update", 5, "tupd", ".0f", "seconds updating"),
    Col("t_step", 5, "tstep", ".0f", "seconds per step"),
]


def step_values(step: int, rng: random.Random) -> dict[str, Any]:
    return {
        "step": step, "loss": rng.gauss(0, 0.05), "grad_norm": abs(rng.gauss(0.4, 0.1)),
        "learning_rate": 1e-6 * min(1.0, step / 50), "reward": rng.uniform(0.2, 0.8),
        "reward_std": rng.uniform(0.1, 0.4),
        "kl": abs(rng.gauss(0.002, 0.001)), "entropy": rng.uniform(0.3, 0.9), "clip_ratio": rng.uniform(0, 0.02),
        "completion_len": rng.uniform(300, 900), "completion_len_max": float(rng.randint(900, 2048)),
        "accuracy": rng.uniform(0.3, 0.7), "format_ok": rng.uniform(0.9, 1.0), "advantage": rng.gauss(0, 0.01),
        "is_ratio": rng.uniform(0.98, 1.02), "throughput": rng.uniform(2000, 4000), "mfu": rng.uniform(0.3, 0.5),
        "t_gen": rng.uniform(20, 40), "t_update": rng.uniform(5, 10), "t_step": rng.uniform(30, 55),
    }


def hf_style(values: dict[str, Any]) -> str:
    """What HF Trainer's console logging prints: a Python dict, loss rounded to 4 places, floats as repr."""
    shown = {k: (round(v, 4) if k == "loss" else v) for k, v in values.items() if k != "step"}
    shown["epoch"] = round(values["step"] / 1000, 2)
    return repr(shown)


def fitted(cols: list[Col], rows: list[dict[str, Any]]) -> list[Col]:
    """The same columns with widths from the data (what the generic schema's auto_col does): no padding to pay."""
    out = []
    for c in cols:
        auto = auto_col(c.key, [r[c.key] for r in rows], header=c.header, desc=c.desc, fmt=c.fmt)
        out.append(c.with_(width=auto.width))
    return out


def printed(cols: list[Col], rows: list[dict[str, Any]]) -> str:
    """What a training script's stdout gets: setup_logging's sink (a pipe, so no colour) and StepLogger's defaults
    (legend once, the header at its default cadence), up to the end-of-run dump, which is not per-step output."""
    out = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(out):
        setup_logging("bench", log_dir=tmp)
        log = StepLogger(cols)
        for r in rows:
            log.log(r)
        text = out.getvalue()
        log.close()
    assert "\x1b" not in text and len(text.splitlines()) > len(rows)
    return text


def count(enc: Any, cols: list[Col], rows: list[dict[str, Any]]) -> tuple[float, float, str]:
    lines = printed(cols, rows).splitlines()
    total = sum(len(enc.encode(line + "\n")) for line in lines)
    # the printed rows themselves (as the logger widened them): lines whose first cell is the step number
    rows_printed = [ln for ln in lines if ln.split()[1:2] and ln.split()[1].isdigit()]
    row_only = sum(len(enc.encode(line + "\n")) for line in rows_printed)
    return total / len(rows), row_only / len(rows), lines[-1]


def hindsight(enc: Any, cols: list[Col], rows: list[dict[str, Any]]) -> float:
    """Tokens a row costs printed in the layout the run ends with (widths and notations as if every value were known
    from the first row, which no live logger can know), with its icon: what the live rows are measured against."""
    layout = ConsoleLayout(cols)
    for r in rows:
        layout.update(r)
    layout.settle()
    return sum(len(enc.encode(f"I {layout.row(r)}\n")) for r in rows) / len(rows)


def main() -> None:
    os.environ["NO_COLOR"] = "1"  # run from a terminal, the sink would colour the icons
    enc = get_encoding("o200k_base")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100, help="steps a run (default 100, the headline's)")
    # one seed's draw moves the figure by +-0.2: report the mean, the range, seed 0
    steps, seeds = ap.parse_args().steps, range(10)
    runs = [_draw(seed, steps) for seed in seeds]
    hf = [sum(len(enc.encode(hf_style(r) + "\n")) for r in rows) / steps for rows in runs]
    print(f"20-metric RL step, {steps} steps x {len(runs)} seeds, o200k tokens; the header at StepLogger's default"
          " cadence and the legend once, amortised")
    print(f"HF-Trainer dict print (anchor): {mean(hf):6.1f} tokens/step")
    declared = [Col(c.key, max(len(c.key), 5), c.key) for c in COLS]
    omitted = [Col(c.key) for c in COLS]
    cases = {
        "declared Col(k, max(len(k), 5), k)": lambda rows: declared,
        "widths left out, Col(k)": lambda rows: omitted,
        "schema-like, fixed 5/6 cells": lambda rows: COLS,
        "schema-like, look-ahead fit": lambda rows: fitted(COLS, rows),
    }
    for name, make in cases.items():
        got = [count(enc, make(rows), rows) for rows in runs]
        per_step = [g[0] for g in got]
        lo, hi = min(per_step), max(per_step)
        print(f"steptable, {name:35s}: {mean(per_step):5.2f} tokens/step (seeds {lo:.2f}-{hi:.2f},"
              f" seed 0 {per_step[0]:.2f}; row alone {mean(g[1] for g in got):4.1f})"
              f"   ratio {mean(per_step) / mean(hf):.3f}x anchor   goal <= 60")
        print(f"  per seed: {' '.join(f'{x:.2f}' for x in per_step)}; worst {hi:.2f}")
        print(f"  sample: {got[0][2]}")
        if name.startswith("declared"):
            after = mean(hindsight(enc, make(rows), rows) for rows in runs)
            print(f"  row alone: live {mean(g[1] for g in got):.2f}; in the run's final layout (hindsight, which no"
                  f" live logger has) {after:.2f}")


def _draw(seed: int, steps: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [step_values(s, rng) for s in range(1, steps + 1)]


if __name__ == "__main__":
    main()
