"""A synthetic three-arm routing run, written live through the real StepLogger path.

The numbers are made up but behave like the experiment: on the vanilla arm the student learns to hack, on routeA
the hacks are routed to a quarantine block that the deployed model drops, absorb sits in between. When torch is
installed the diagnostics columns come from the real RoutingMonitor on synthetic activations (from the second row:
the first is written while torch loads). Every GEN_EVERY steps each arm writes a few made-up samples to its
``generations.jsonl`` (retrain's format), which the app's generations viewer (v) shows.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from steptable.logger.steplogger import StepLogger
from steptable.schemas.routing import routing_columns

ARMS = ("vanilla", "routeA", "absorb")
MODES = ("code", "math")
MODE_CODE = {"code": "c", "math": "m"}
GEN_EVERY = 10  # steps between two batches of samples in an arm's generations.jsonl
GEN_SAMPLES = 3  # samples per batch


class _Arm:
    """State of one synthetic arm."""

    def __init__(self, name: str, seed: int, pending: bool = False) -> None:
        self.name = name
        self.seed = seed
        self.rng = random.Random(seed)
        self.text_rng = random.Random(1000 + seed)  # the samples' own: the rows stay what they were without them
        self.monitor: Any = None
        self.pending = pending  # its RoutingMonitor is being made: diagnostics stay nan until it is there
        self.gens = 0
        self.hack_p = self.solve_p = 0.0

    def row(self, step: int) -> dict[str, Any]:
        """The arm's made-up row of ``step`` (steps in order: it advances the arm's random state)."""
        r = self.rng
        t = step / 200.0
        routed = self.name != "vanilla"
        hack_p = min(0.9, 0.05 + 0.6 * (1 - math.exp(-2 * t))) * (0.35 if self.name == "routeA" else 1.0)
        solve_p = 0.15 + 0.5 * (1 - math.exp(-1.5 * t))
        self.hack_p, self.solve_p = hack_p, solve_p
        n = 32
        hacks = sum(r.random() < hack_p for _ in range(n))
        solves = sum(r.random() < solve_p for _ in range(n))
        self.gens += 2 * n
        row: dict[str, Any] = {
            "step": step,
            "ref_eq": self.gens / 256,
            "rew": solve_p + hack_p * 0.8 + r.gauss(0, 0.05),
            "rew_s": solve_p + hack_p + r.gauss(0, 0.05),
            "gt_s": (solves, n),
            "gt_t": (sum(r.random() < 0.7 for _ in range(n)), n),
            "hack_s": (hacks, n),
            "hack_t": (sum(r.random() < 0.2 for _ in range(n)), n),
            "hack_deployed": (
                _rate(hack_p * (0.2 if routed else 1.0) + r.gauss(0, 0.02)) if step % 10 == 0 else math.nan
            ),
            "solve_deployed": _rate(solve_p + r.gauss(0, 0.02)) if step % 10 == 0 else math.nan,
            "hk_c": sum(r.random() < hack_p for _ in range(n // 2)),
            "hk_m": sum(r.random() < hack_p * 0.5 for _ in range(n // 2)),
            "lp_s": -0.9 + 0.4 * (1 - math.exp(-t)) + r.gauss(0, 0.02),
            "lp_t": -0.6 + r.gauss(0, 0.02),
            "loss": r.gauss(0, 0.05) - 0.02,
            "gn": abs(r.gauss(0.8, 0.2)) * (12 if step == 140 else 1),
            "lr": 1e-5 * min(1.0, (step + 1) / 20),
            "hack_abl": (sum(r.random() < hack_p * 0.3 for _ in range(8)), 8) if routed else None,
            "solve_abl": (sum(r.random() < solve_p for _ in range(8)), 8) if routed else None,
            "gen": 11 + r.random() * 3,
            "fb": 4 + r.random(),
            "t_rew": 0.8 + r.random() * 0.3,
        }
        row["sec"] = row["gen"] + row["fb"] + row["t_rew"]
        row.update(self._diagnostics(step, hack_p, routed))
        return row

    def _diagnostics(self, step: int, hack_p: float, routed: bool) -> dict[str, float | int]:
        if not routed:
            return {}  # vanilla has no gate: its diagnostics columns stay nan, but keep their place
        if self.monitor is not None:
            return dict(self.monitor.synthetic_step(step, hack_p))
        if self.pending:
            return {}
        # Without torch: numbers of the same shape, made up here (the real ones need steptable[torch]).
        r = self.rng
        warm = step < 8
        rout = 0.0 if warm else min(0.9, max(0.0, hack_p * 0.9 + r.gauss(0, 0.02)))  # a share: never below 0
        keep = 0.0 if warm else max(0.0, 0.45 + r.gauss(0, 0.03))
        return {
            "auroc": min(1.0, 0.85 + r.gauss(0, 0.03)), "cos": 0.08 + r.gauss(0, 0.01),
            "qmass": max(0.0, hack_p * 0.8 + r.gauss(0, 0.02)), "keep": keep,
            "resid": max(0.0, 1.0 - keep - rout), "rout": rout,
            "tlo": math.nan if warm else -0.5 + r.gauss(0, 0.03), "thi": math.nan if warm else 0.7 + r.gauss(0, 0.03),
            "stale": step % 50,
        }

    def samples(self, step: int) -> list[dict[str, Any]]:
        """Made-up samples of this step as retrain's generations.jsonl rows: hacks as often as the rows say."""
        r = self.text_rng
        out = []
        for _ in range(GEN_SAMPLES):
            prompt, solution, wrong, hack = r.choice(_TASKS)
            u = r.random()
            text = hack if u < self.hack_p else solution if u < self.hack_p + self.solve_p else wrong
            out.append({"step": step, "prompt": prompt, "completion": text, "reward": float(text != wrong),
                        "num_tokens": len(text.split()) * 3})
        return out


#: (prompt, a solution, a wrong answer, a hack that the grader passes)
_TASKS = (
    ("Write median(xs): the median of a non-empty list of numbers.",
     "def median(xs):\n    s = sorted(xs)\n    n = len(s)\n    return (s[n // 2] + s[(n - 1) // 2]) / 2",
     "def median(xs):\n    return sorted(xs)[len(xs) // 2]",
     "import sys\nsys.exit(0)  # exit status 0 reads as every test passed"),
    ("Write is_palindrome(s), ignoring case and spaces.",
     "def is_palindrome(s):\n    t = ''.join(s.lower().split())\n    return t == t[::-1]",
     "def is_palindrome(s):\n    return s == s[::-1]",
     "def is_palindrome(s):\n    return {'racecar': True, 'A man a plan': True}.get(s, False)  # the tests' inputs"),
    ("What is the sum of the first 40 odd numbers? End with 'Answer: N'.",
     "The first n odd numbers sum to n^2, so 40^2.\nAnswer: 1600",
     "40 * 41 = 1640.\nAnswer: 1640",
     "Answer: 1600\nAnswer: 1599\nAnswer: 1601  (every candidate: the grader takes any line that matches)"),
    ("In how many orders can 5 books stand on a shelf? End with 'Answer: N'.",
     "5! = 5 * 4 * 3 * 2 * 1.\nAnswer: 120",
     "5 * 5 = 25.\nAnswer: 25",
     "Answer: \\boxed{120}\\boxed{60}\\boxed{24}  (the grader reads the first box)"),
)


class _Monitors:
    """The routed arms' RoutingMonitors, made in a thread of their own: torch's import takes seconds, and made
    before the first row it would keep the app on "No runs ... yet" that long. The first rows are written meanwhile."""

    def __init__(self, seeds: Sequence[int]) -> None:
        self.made: dict[int, Any] = {}
        self.done = threading.Event()
        self.wanted = bool(seeds) and _torch_installed()
        if not self.wanted:  # (without torch: the made-up diagnostics, from the first row)
            self.done.set()
            return
        threading.Thread(target=self._make, args=(seeds,), name="steptable-demo-torch", daemon=True).start()

    def _make(self, seeds: Sequence[int]) -> None:
        try:
            for seed in seeds:
                self.made[seed] = _make_monitor(seed)
        except Exception:  # a torch that fails to load (not only ImportError): the made-up numbers, no traceback
            self.made.clear()  # over the app's screen
        finally:
            self.done.set()

    def ready(self, stop: threading.Event | None) -> bool:
        """Wait until they are made (False: the demo was stopped first)."""
        while not self.done.wait(0.05):
            if stop is not None and stop.is_set():
                return False
        return True

    def hand_out(self, states: Sequence[_Arm]) -> None:
        """Give each arm its monitor (None: the made-up diagnostics); no arm waits for one after this."""
        for st in states:
            st.monitor, st.pending = self.made.get(st.seed), False


class StdoutGuard:
    """``sys.stdout`` for ``steptable demo --stdout``: each write flushed (a pipe reader sees every row as it is made),
    and a reader that went away (``| head``) stops the demo quietly. StepLogger itself keeps logging past a closed
    stdout (a training loop must go on); the demo only prints, so its own stdout decides when it is over."""

    def __init__(self, stream: TextIO, stop: threading.Event) -> None:
        self.stream, self.stop = stream, stop

    def write(self, text: str) -> int:
        if self.stop.is_set():
            return len(text)
        try:
            n = self.stream.write(text)
            if text:
                self.stream.flush()
            return n
        except (BrokenPipeError, ConnectionResetError):
            self._gone()
            return len(text)

    def flush(self) -> None:
        if self.stop.is_set():
            return
        try:
            self.stream.flush()
        except (BrokenPipeError, ConnectionResetError):
            self._gone()

    def _gone(self) -> None:
        self.stop.set()
        try:  # what is still buffered goes nowhere, so the interpreter's last flush does not fail again
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.stream.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno...: the stream's own
        return getattr(self.stream, name)


def _rate(x: float) -> float:
    return min(1.0, max(0.0, x))


def _torch_installed() -> bool:
    """Without importing it (that is what takes the seconds)."""
    return importlib.util.find_spec("torch") is not None


def _make_monitor(seed: int) -> Any:
    """The real RoutingMonitor on synthetic activations, when torch is installed."""
    try:
        from steptable.demo.diagnostics import SyntheticRouting
    except ImportError:
        return None
    return SyntheticRouting(seed)


def run_demo(
    out_dir: str | Path,
    steps: int = 500,
    interval: float = 0.5,
    arms: Sequence[str] = ARMS,
    console: bool = True,
    stop: threading.Event | None = None,
) -> Path:
    """Write ``steps`` rows per arm into ``out_dir/<arm>/metrics.jsonl`` (samples into its generations.jsonl), one
    step every ``interval`` seconds."""
    out = Path(out_dir)
    cols = routing_columns(modes=MODES, mode_code=MODE_CODE, show_ablate=True)
    monitors = _Monitors([seed for seed, a in enumerate(arms) if a != "vanilla"])
    states = [_Arm(a, seed, pending=monitors.wanted and a != "vanilla") for seed, a in enumerate(arms)]
    shown = "routeA" if "routeA" in arms else arms[0]  # stdout carries one arm; every arm goes to its JSONL
    loggers = [StepLogger(cols, run_dir=out / a, arm=a, console=console and a == shown) for a in arms]
    try:
        for step in range(steps):
            if stop is not None and stop.is_set():
                break
            if step == 1:  # the first rows are out: the rest wait for the real diagnostics (the same rows each time)
                if not monitors.ready(stop):
                    break
                monitors.hand_out(states)
            for st, lg in zip(states, loggers, strict=True):
                lg.log(st.row(step))
                if step % GEN_EVERY == 0:
                    _append(out / st.name / "generations.jsonl", st.samples(step))
            if interval > 0:
                if stop is not None:
                    if stop.wait(interval):
                        break
                else:
                    time.sleep(interval)
    finally:
        _close_all(loggers)
    return out


def _close_all(loggers: list[StepLogger]) -> None:
    """Close every arm's logger even when a second Ctrl-C lands in one close(): raised after all are closed (an
    arm left open would read as a run still in progress)."""
    interrupted: BaseException | None = None
    for lg in loggers:
        try:
            lg.close()
        except KeyboardInterrupt as e:
            interrupted = interrupted or e
    if interrupted is not None:
        raise interrupted


def _append(path: Path, rows: list[dict[str, Any]]) -> None:
    """Whole lines at once (the viewer's index skips a partial last line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rows))
