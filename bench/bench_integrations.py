"""The HF callback's figures, on the tiny Trainer of tests/integrations (a 1-layer GPT-2 from a config, CPU).

1. Console tokens (o200k, counted offline) for 100 logged steps (logging_steps=1, an evaluation every 10 steps):
   the trainer's stdout with StepTableCallback(console=True) against the default HF output (its dict prints),
   the two runs made in the same process one after the other. The tqdm bar (stderr) is left out of both: it is
   the same bar either way. Goal: <= 0.3x.
2. The callback's cost per ``on_log`` (its on_log and the next step's on_step_begin, where the row is written and
   printed) against the tiny step's own time (train_runtime / steps) in the same run. Goal: < 1%.

Run: python bench/bench_integrations.py  (needs: pip install bpe-openai transformers torch)
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bpe_openai import get_encoding

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from steptable.integrations.hf import StepTableCallback
from tests.integrations.helpers import tiny_trainer

STEPS = 100


class Timed(StepTableCallback):
    """The callback, with the time spent in its per-log work summed."""

    spent = 0.0
    calls = 0

    def on_log(self, *a: Any, **k: Any) -> None:
        t = time.perf_counter()
        super().on_log(*a, **k)
        Timed.spent += time.perf_counter() - t
        Timed.calls += 1

    def on_step_begin(self, *a: Any, **k: Any) -> None:
        t = time.perf_counter()
        super().on_step_begin(*a, **k)
        Timed.spent += time.perf_counter() - t


def run(out: Path, callback: StepTableCallback) -> tuple[str, Any]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        trainer = tiny_trainer(out, [callback], max_steps=STEPS, logging_steps=1, eval_steps=10)
        result = trainer.train()
    return buf.getvalue(), result


def main() -> None:
    enc = get_encoding("o200k_base")
    with tempfile.TemporaryDirectory() as tmp:
        plain, _ = run(Path(tmp) / "plain", StepTableCallback())
        rows, result = run(Path(tmp) / "rows", Timed(console=True))
    t_plain, t_rows = len(enc.encode(plain)), len(enc.encode(rows))
    print(f"console tokens, {STEPS} logged steps (10 with an evaluation):")
    print(f"  default HF output (dict prints): {t_plain:6d}  ({t_plain / STEPS:.0f} a step)")
    print(f"  StepTableCallback(console=True): {t_rows:6d}  ({t_rows / STEPS:.0f} a step, legend and dump included)")
    print(f"  ratio {t_rows / t_plain:.2f}x (goal <= 0.3x)")
    step_s = result.metrics["train_runtime"] / STEPS
    per_log = Timed.spent / max(Timed.calls, 1)
    print(f"callback per on_log: {per_log * 1e6:.0f} us; the tiny step: {step_s * 1e3:.2f} ms; "
          f"ratio {per_log / step_s:.2%} (goal < 1%)")


if __name__ == "__main__":
    main()
