"""The HF callback's figures, on the two tiny trainers of tests/integrations (CPU, nothing downloaded):
the transformers.Trainer of a 1-layer GPT-2 (4 keys a step: loss, grad_norm, learning_rate, epoch; an evaluation every
10 steps) and a TRL GRPOTrainer of a 1-layer Llama (TRL's ~23 GRPO keys a step, the post-training case the issue is
about).

1. Console tokens (o200k, counted offline) for 100 logged steps (logging_steps=1): the trainer's stdout with
   StepTableCallback(console=True) against the default output (its dict prints), the two runs of each trainer made in
   the same process one after the other. The tqdm bar (stderr) is left out of both: it is the same bar either way.
   Goal: <= 0.3x.
2. The callback's cost per ``on_log`` (its on_log and the next step's on_step_begin, where the row is written and
   printed) against the tiny step's own time in the same run: the median of the steps timed from the end of the
   callback's on_step_begin to on_step_end (the trainer's own work, the callback's not in it), and, as before,
   train_runtime / steps (which holds the callback's work and the trainer's logging); the mean over all logs (the
   first row's set-up included: schema detection, files made) and the steady state (every log after the first).
   The same CPU median for the default callback (console=False: the JSONL only, the dict prints kept), in the run
   that measures the default output. Goal: < 1%.
3. The whole step (one step's begin to the next's, every callback in it) with StepTableCallback(console=True)
   against a third run of the same trainer with no steptable callback at all (its own dict prints), medians in the
   same process: what adding the callback costs the training loop, net of the dict prints it replaces.
4. The floor of any per-log output in the same trainer (class Floor), measured in the default run: a line printed
   between the bars as the row is, and an os.write of a JSONL row (after the callback's own write: warm).
5. The floor of the default callback's work (class Bare), in a run of its own: a callback that does only what a
   JSONL-only row must do at once, in one function each (the logs merged into their step's row, the row stamped and
   encoded by msgspec, one stat of the path, as the writer checked for a rotation or a deletion at each row until
   2026-11-30, and one os.write), timed as the callback is; and the same without the stat (the writer now checks
   the path on a clock, 4 times a second: steptable.logger.writer.CHECK_S), and without the stat and with the row
   stamped as the logger now stamps it (``time_ns() // 1_000_000 / 1000`` for ``round(time(), 3)``), each in a run
   of its own too.

Run: python bench/bench_integrations.py  (needs: pip install bpe-openai transformers torch trl)
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import transformers
from bpe_openai import get_encoding
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from steptable.integrations.hf import StepTableCallback
from tests.integrations.helpers import tiny_grpo_trainer, tiny_trainer

STEPS = 100


class Timed(StepTableCallback):
    """The callback, with the time of each log's work (its on_log and the next on_step_begin) kept, and the time of
    each training step without it (from the end of its on_step_begin to on_step_end: the trainer's own step)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.costs: list[float] = []
        self.cpu: list[float] = []  # the same, in this thread's CPU time (what the load of a shared machine leaves)
        self.steps: list[float] = []
        self._begun = 0.0

    def on_log(self, *a: Any, **k: Any) -> None:
        t, c = time.perf_counter(), time.thread_time()
        super().on_log(*a, **k)
        self.costs.append(time.perf_counter() - t)
        self.cpu.append(time.thread_time() - c)

    def on_step_begin(self, *a: Any, **k: Any) -> None:
        t, c = time.perf_counter(), time.thread_time()
        super().on_step_begin(*a, **k)
        self._begun = time.perf_counter()
        if self.costs:
            self.costs[-1] += self._begun - t
            self.cpu[-1] += time.thread_time() - c

    def on_step_end(self, *a: Any, **k: Any) -> None:
        self.steps.append(time.perf_counter() - self._begun)
        super().on_step_end(*a, **k)


class Clock(transformers.TrainerCallback):  # type: ignore[misc]
    """The whole step as the trainer sees it, every callback's work in it: from one step's begin to the next's, in
    wall time and in this thread's CPU time."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def on_step_begin(self, *a: Any, **k: Any) -> None:
        self.wall.append(time.perf_counter())
        self.cpu.append(time.thread_time())

    def medians(self) -> tuple[float, float]:
        """Median step (wall, CPU), the first 5 steps (warm-up) left out."""
        def med(ts: list[float]) -> float:
            d = sorted(b - a for a, b in itertools.pairwise(ts[5:]))
            return d[len(d) // 2]
        return med(self.wall), med(self.cpu)


class Floor(transformers.TrainerCallback):  # type: ignore[misc]
    """What any per-log output costs in this trainer, at the start of each step (as the callback's row goes out):
    one ``tqdm.write`` of a line as long as the printed row, on stderr with the trainer's bar live there (cleared
    and redrawn around it, as HF's own dict print does; stderr, so the token count of stdout is not touched), and
    one ``os.write`` of a line as long as a JSONL row to a file in append mode. In CPU time of this thread."""

    def __init__(self, line: int, record: int, path: Path) -> None:
        self.line, self.record = "x" * line, b"y" * record + b"\n"
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self.printed: list[float] = []
        self.written: list[float] = []

    def on_step_begin(self, *a: Any, **k: Any) -> None:
        c = time.thread_time()
        tqdm.write(self.line, file=sys.stderr)
        self.printed.append(time.thread_time() - c)
        c = time.thread_time()
        os.write(self.fd, self.record)
        self.written.append(time.thread_time() - c)

    def medians(self) -> tuple[float, float]:
        os.close(self.fd)
        return tuple(sorted(x[5:])[len(x[5:]) // 2] for x in (self.printed, self.written))  # type: ignore[return-value]


class Bare(transformers.TrainerCallback):  # type: ignore[misc]
    """The floor of a JSONL-only row (see the module, 5.), timed as :class:`Timed` times the callback."""

    def __init__(self, path: Path, stat: bool = True, ns: bool = False) -> None:
        import msgspec

        self.path, self.encode, self.stat, self.ns = str(path), msgspec.json.Encoder().encode, stat, ns
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self.row: dict[str, Any] | None = None
        self.step = 0
        self.cpu: list[float] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **k: Any) -> None:
        c = time.thread_time()
        if self.row is not None and state.global_step != self.step:
            self._out()
        if self.row is None:
            self.row, self.step = {}, state.global_step
        self.row.update(logs or {})
        self.cpu.append(time.thread_time() - c)

    def on_step_begin(self, *a: Any, **k: Any) -> None:
        c = time.thread_time()
        if self.row:
            self._out()
        if self.cpu:
            self.cpu[-1] += time.thread_time() - c

    def _out(self) -> None:
        row, self.row = self.row, None
        ts = time.time_ns() // 1_000_000 / 1000 if self.ns else round(time.time(), 3)
        line = self.encode({"step": self.step, "ts": ts, **(row or {})}) + b"\n"
        if self.stat:
            os.stat(self.path)
        os.write(self.fd, line)

    def median(self) -> float:
        os.close(self.fd)
        return sorted(self.cpu[1:])[len(self.cpu[1:]) // 2]


def run(make: Callable[[Path, list[Any]], Any], out: Path, *callbacks: Any) -> tuple[str, Any]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        result = make(out, list(callbacks)).train()
    return buf.getvalue(), result


def measure(name: str, make: Callable[[Path, list[Any]], Any], enc: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        timed, clock = Timed(console=True), Clock()
        rows, result = run(make, Path(tmp) / "rows", clock, timed)
        jsonl = (Path(tmp) / "rows" / "metrics.jsonl").read_bytes().splitlines()
        widest = max(len(line) for line in rows.splitlines())
        floor = Floor(widest, len(jsonl[len(jsonl) // 2]), Path(tmp) / "floor.jsonl")
        quiet = Timed()  # the default callback: the JSONL only, the trainer's dict prints kept
        plain, _ = run(make, Path(tmp) / "plain", quiet, floor)
        bare = Clock()  # no steptable callback at all: the trainer's own dict prints
        run(make, Path(tmp) / "bare", bare)
        least = Bare(Path(tmp) / "least.jsonl")
        run(make, Path(tmp) / "least", least)
        unstated = Bare(Path(tmp) / "unstated.jsonl", stat=False)
        run(make, Path(tmp) / "unstated", unstated)
        least_now = Bare(Path(tmp) / "least_now.jsonl", stat=False, ns=True)
        run(make, Path(tmp) / "least_now", least_now)
    t_plain, t_rows = len(enc.encode(plain)), len(enc.encode(rows))
    print(f"{name}: console tokens, {STEPS} logged steps")
    print(f"  default output (dict prints):    {t_plain:6d}  ({t_plain / STEPS:.0f} a step)")
    print(f"  StepTableCallback(console=True): {t_rows:6d}  ({t_rows / STEPS:.0f} a step, legend and end-of-run line"
          " included)")
    print(f"  ratio {t_rows / t_plain:.3f}x (goal <= 0.3x)")
    step_s = result.metrics["train_runtime"] / STEPS
    own = sorted(timed.steps[1:])[len(timed.steps[1:]) // 2]  # the trainer's own step, the callback's work not in it
    mean = sum(timed.costs) / len(timed.costs)
    later = sorted(timed.costs[1:])
    median, p99 = later[len(later) // 2], later[min(len(later) - 1, int(len(later) * 0.99))]
    cpu = sorted(timed.cpu[1:])[len(timed.cpu[1:]) // 2]
    print(f"  callback per on_log after the first: median {median * 1e6:.0f} us, p99 {p99 * 1e6:.0f} us (CPU time: "
          f"median {cpu * 1e6:.0f} us)")
    print(f"    against the step's own time (median {own * 1e3:.2f} ms, same run): median {median / own:.2%}, "
          f"p99 {p99 / own:.2%} (goal < 1%)")
    print(f"    against train_runtime / steps ({step_s * 1e3:.1f} ms): median {median / step_s:.2%}, p99 "
          f"{p99 / step_s:.2%}")
    q_own = sorted(quiet.steps[1:])[len(quiet.steps[1:]) // 2]
    q_cpu = sorted(quiet.cpu[1:])[len(quiet.cpu[1:]) // 2]
    print(f"  the default StepTableCallback() (JSONL only): CPU median {q_cpu * 1e6:.0f} us per on_log, "
          f"{q_cpu / q_own:.2%} of its run's own step (median {q_own * 1e3:.2f} ms; goal < 1%)")
    least_cpu = least.median()
    print(f"    the floor of a JSONL-only row (merge, encode, stat, write; class Bare, a run of its own): CPU median "
          f"{least_cpu * 1e6:.0f} us ({least_cpu / q_own:.2%} of the default run's step); the default callback is "
          f"{q_cpu / least_cpu:.2f}x it")
    nostat_cpu = unstated.median()
    print(f"    the same floor without the stat (merge, encode, write; a run of its own): CPU median "
          f"{nostat_cpu * 1e6:.0f} us ({nostat_cpu / q_own:.2%} of the default run's step); the default callback is "
          f"{q_cpu / nostat_cpu:.2f}x it")
    now_cpu = least_now.median()
    print(f"    the same without the stat, the row stamped by time_ns as the logger now stamps it (a run of its own): "
          f"CPU median {now_cpu * 1e6:.0f} us ({now_cpu / q_own:.2%}); the default callback is "
          f"{q_cpu / now_cpu:.2f}x it")
    q_later = quiet.cpu[1:]
    print(f"    the default callback's CPU mean after the first log (the backlog's batches of 64 rows in it): "
          f"{sum(q_later) / len(q_later) * 1e6:.0f} us ({sum(q_later) / len(q_later) / q_own:.2%})")
    printed, written = floor.medians()
    print(f"    the floor, same process (the default run, CPU): a tqdm.write of a {widest}-character line with the "
          f"bar live {printed * 1e6:.0f} us ({printed / own:.2%} of the step), an os.write of a JSONL row "
          f"{written * 1e6:.0f} us; the callback's CPU median is {cpu / printed:.1f}x the printed line")
    (w1, c1), (w0, c0) = clock.medians(), bare.medians()
    print(f"  whole step with StepTableCallback(console=True) against none (the default dict prints), same process: "
          f"median wall {w1 * 1e3:.2f} / {w0 * 1e3:.2f} ms ({w1 / w0 - 1:+.1%}), CPU {c1 * 1e3:.2f} / "
          f"{c0 * 1e3:.2f} ms ({c1 / c0 - 1:+.1%})")
    print(f"  the first log's one-off set-up {timed.costs[0] * 1e3:.0f} ms; the mean over the {STEPS} logs with it "
          f"{mean * 1e6:.0f} us ({mean / step_s:.2%})")


def main() -> None:
    enc = get_encoding("o200k_base")
    measure("transformers.Trainer, 4 keys", lambda out, cbs: tiny_trainer(
        out, cbs, max_steps=STEPS, logging_steps=1, eval_steps=10), enc)
    measure("TRL GRPOTrainer, 23 keys", lambda out, cbs: tiny_grpo_trainer(out, cbs, max_steps=STEPS), enc)


if __name__ == "__main__":
    main()
