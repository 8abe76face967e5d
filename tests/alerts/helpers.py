"""Series for the alert tests and what an AlertEngine says of them: rows fed in order (with or without the flat
detector), a resumed engine against one fed straight, noisy rewards, losses and grad norms, a diverged run."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from steptable.alerts.engine import Alert, AlertConfig, AlertEngine
from steptable.alerts.history import replay_spans
from tests.helpers import grpo_row, write_rows

Series = list[tuple[int, float]]
Row = dict[str, Any]


def lines(key: str, xs: Sequence[float], config: AlertConfig | None = None) -> list[str]:
    """The alert lines of ``xs`` fed as ``key`` at steps 0, 1, ... (the flat detector off unless configured)."""
    eng = AlertEngine(config if config is not None else AlertConfig(flat_rows=0))
    return [a.line() for i, x in enumerate(xs) for a in eng.update(i, {key: x})]


def resumed(key: str, crashed: Series, kept: Series, new: Series) -> tuple[list[str], list[str]]:
    """The alert lines after a resume at ``new``'s first step: from an engine that replayed ``kept`` (the rows
    before it, bounded as a live reader does) and took the run-long values of the engine that read ``crashed``
    (kept, then the rows the resume replaced); and from one engine fed ``kept`` then ``new`` straight."""
    at = new[0][0]
    old = AlertEngine(AlertConfig(flat_rows=0))
    for s, x in crashed:
        old.update(s, {key: x})
    eng = AlertEngine(AlertConfig(flat_rows=0))
    for a, b in replay_spans(len(kept), eng.config):
        for s, x in kept[a:b]:
            eng.update(s, {key: x})
    eng.carry(old, at)
    eng.resumed()
    got: list[Alert] = [a for s, x in new for a in eng.update(s, {key: x})]
    ref = AlertEngine(AlertConfig(flat_rows=0))
    want = [a for s, x in kept + new for a in ref.update(s, {key: x}) if a.step >= at]
    return [a.line() for a in got], [a.line() for a in want]


def stream(rows: Iterable[Mapping[str, Any]], config: AlertConfig | None = None) -> list[Alert]:
    """The alerts of ``rows`` fed in order; the flat detector off unless a config is given (the series here are
    constant around the condition each test is about)."""
    eng = AlertEngine(config if config is not None else AlertConfig(flat_rows=0))
    out: list[Alert] = []
    for i, row in enumerate(rows):
        out.extend(eng.update(i, row))
    return out


def series(key: str, values: Sequence[Any]) -> list[Row]:
    """Rows holding ``key`` alone, one value each."""
    return [{key: v} for v in values]


def noise(seed: int, n: int, mu: float, sd: float, f: Callable[[float], float] = lambda x: x) -> list[float]:
    """``n`` seeded draws of N(mu, sd), each passed through ``f``."""
    rng = random.Random(seed)
    return [f(rng.gauss(mu, sd)) for _ in range(n)]


def kinds(alerts: Sequence[Alert]) -> list[tuple[str, int, str, str]]:
    """(level, step, column, kind) of each alert."""
    return [(a.level, a.step, a.column, a.kind) for a in alerts]


class Unfloatable:
    """A cell whose ``float()`` raises."""

    def __float__(self) -> float:
        raise RuntimeError("no")


def fed(rows: Iterable[Mapping[str, Any]], config: AlertConfig | None = None) -> list[Alert]:
    """The alerts of ``rows`` fed in order to an engine with ``config`` (the default one, flat detector on)."""
    eng = AlertEngine(config)
    return [a for i, row in enumerate(rows) for a in eng.update(i, row)]


def grad_norms(seed: int, n: int) -> list[float]:
    """.35 with 15% noise, a routine x3 step every 100 rows."""
    rng = random.Random(seed)
    return [0.35 * (3 if i % 100 == 99 else math.exp(rng.gauss(0, 0.15))) for i in range(n)]


def heavy(seed: int, n: int, mu: float, rel: float) -> list[float]:
    """``n`` seeded values ``mu * (1 + rel * t)``, t Student-t noise with 3 degrees of freedom scaled to unit
    variance, made non-negative: a healthy metric with a heavy tail (one row in a few thousand 10-30 robust sigma
    out)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        t = rng.gauss(0, 1) / math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3) / math.sqrt(3)
        out.append(abs(mu * (1 + rel * t)))
    return out


def diverged(n: int = 300, at: int = 200) -> list[Row]:
    rng = random.Random(0)
    keys = ("actor/pg_loss", "actor/grad_norm", "critic/score/mean", "actor/entropy", "actor/ppo_kl", "actor/kl_loss")
    return [{"step": s, **{k: "nan" if s >= at else 0.5 + rng.gauss(0, 0.01) for k in keys}} for s in range(n)]


def reward_rows(steps: range, reward: float, seed: int) -> list[dict[str, Any]]:
    """Rows of a reward around ``reward`` (sd .02) and a loss around 1 (seeded)."""
    rng = random.Random(seed)
    return [{"step": s, "rew": reward + rng.gauss(0, 0.02), "loss": 1.0 + rng.gauss(0, 0.05)} for s in steps]


def loss_rows(steps: range, rng: random.Random, nan_from: float = math.inf) -> list[dict[str, Any]]:
    """Rows of a loss around .1 (NaN from step ``nan_from`` on) and a grad norm around .5."""
    return [{"step": s, "loss": math.nan if s >= nan_from else 0.1 + rng.gauss(0, 0.01),
             "grad_norm": 0.5 + rng.gauss(0, 0.05)} for s in steps]


def clocked_rows(rng: random.Random, steps: range, t0: float) -> list[dict[str, Any]]:
    """Healthy GRPO rows about 10 s apart from ``t0``, each with its clock (``ts``)."""
    return [{**grpo_row(rng, s), "ts": t0 + 10.0 * (s - steps[0]) + rng.uniform(0, 1)} for s in steps]


def spike(step: int) -> Alert:
    """A routine grad-norm spike warning at ``step``."""
    return Alert("W", step, "actor/grad_norm", "spike", f"spike 1.{step % 97} (z=11 vs median .354 over 50)")


def write_finished_run(root: Path) -> Path:
    """routeA's metrics file holding a finished run of 160 steps, its rewards near .85."""
    path = root / "routeA" / "metrics.jsonl"
    write_rows(path, reward_rows(range(160), 0.85, 1))  # the finished run: rewards near .85
    return path


Columns = dict[str, list[Any]]


def noisy(n: int, level: float, rel: float, seed: int) -> list[float]:
    """``n`` seeded values around ``level`` (relative noise ``rel``), rounded to 6 places."""
    rnd = random.Random(seed)
    return [round(level * (1 + rel * rnd.gauss(0, 1)), 6) for _ in range(n)]


def base(n: int = 1500) -> Columns:
    """A healthy run's six watched columns, ``n`` rows."""
    return {"loss": noisy(n, 0.5, 0.1, 1), "grad_norm": noisy(n, 1.0, 0.2, 2), "reward": noisy(n, 0.5, 0.1, 3),
            "entropy": noisy(n, 1.0, 0.05, 4), "kl": noisy(n, 0.05, 0.3, 5),
            "response_length/clip_ratio": [abs(x) for x in noisy(n, 0.05, 0.3, 6)]}


def put(cols: Columns, key: str, at: int, values: Sequence[Any]) -> Columns:
    """A copy of ``cols`` with ``key``'s cells from row ``at`` replaced by ``values``."""
    out = {k: list(v) for k, v in cols.items()}
    out[key][at:at + len(values)] = list(values)
    return out


def eval_rows(cols: Columns, every: int = 37) -> Columns:
    """Every ``every``-th row an evaluation row: none of the training keys (as HF's Trainer logs them)."""
    return {k: [None if i % every == every - 1 else v for i, v in enumerate(c)] for k, c in cols.items()}


#: columns that test the bulk paths: every kind of cell, episode and gap
HOSTILE: dict[str, Callable[[], Columns]] = {
    "eval rows among the training rows": lambda: eval_rows(put(base(), "loss", 900, [9.0])),
    "nan in a quiet stretch": lambda: put(base(), "loss", 700, [math.nan]),
    "inf and -inf": lambda: put(put(base(), "kl", 600, [math.inf]), "reward", 900, [-math.inf]),
    "a nan run": lambda: put(base(), "grad_norm", 500, [math.nan] * 80),
    "constant column": lambda: {**base(), "reward": [0.25] * 1500},
    "constant from the middle": lambda: put(base(), "grad_norm", 700, [1.0] * 300),
    "loss flat, grad norm flat too": lambda: put(put(base(), "loss", 600, [0.3] * 200), "grad_norm", 620,
                                                  [0.0] * 200),
    "loss flat, grad norm moving": lambda: put(base(), "loss", 600, [0.3] * 200),
    "zeros and negative zeros": lambda: put(base(), "loss", 400, [0.0, -0.0] * 100),
    "ints": lambda: {**base(), "reward": [random.Random(7).randrange(0, 5) for _ in range(1500)]},
    "numeric strings": lambda: {**base(), "loss": [str(x) for x in noisy(1500, 0.5, 0.1, 8)]},
    "fractions": lambda: put(base(), "response_length/clip_ratio", 300, [(9, 10)] * 40 + ["1/2"] * 40),
    "gaps (None cells)": lambda: put(base(), "entropy", 300, [None] * 120),
    "bools": lambda: {**base(), "response_length/clip_ratio": [i % 7 == 0 for i in range(1500)]},
    "a cell whose float() raises": lambda: put(base(), "reward", 640, [Unfloatable()]),
    "huge values": lambda: put(base(), "kl", 800, [1e308, 1e308, -1e308]),
    "a short column": lambda: {**base(), "entropy": noisy(730, 1.0, 0.05, 9)},
    "a spike and a collapse": lambda: put(put(base(), "loss", 800, [9.0]), "reward", 1000, [0.01] * 60),
    "an entropy collapse and rise": lambda: put(put(base(), "entropy", 500, [0.05] * 100), "entropy", 900,
                                                 [4.0] * 200),
    "a KL that crosses its test's floor": lambda: {**base(), "kl": noisy(1500, 0.011, 0.3, 10)},
    "a saturated stretch": lambda: put(base(), "response_length/clip_ratio", 600, [0.95] * 30),
    "a negative reward": lambda: {**base(), "reward": noisy(1500, -0.5, 0.1, 11)},
    "a KL past its error level all run": lambda: {**base(), "kl": noisy(1500, 15.0, 0.1, 12)},
    "a KL between its levels all run": lambda: {**base(), "kl": noisy(1500, 3.0, 0.1, 13)},
    "a KL past its levels that jumps": lambda: put(put({**base(), "kl": noisy(1500, 3.0, 0.05, 14)}, "kl", 700,
                                                         [40.0]), "kl", 1100, [12.0] * 3 + [600.0]),
    "a ratio past its saturation level all run": lambda: {**base(), "response_length/clip_ratio":
                                                          noisy(1500, 8.0, 0.1, 17)},
    "a saturation that ends and comes back": lambda: put({**base(), "response_length/clip_ratio": noisy(
        1500, 8.0, 0.1, 18)}, "response_length/clip_ratio", 600, [abs(x) for x in noisy(300, 0.05, 0.3, 19)]),
    "a KL that leaves its levels and comes back": lambda: put({**base(), "kl": noisy(1500, 15.0, 0.1, 15)}, "kl",
                                                               500, noisy(400, 0.05, 0.3, 16)),
}


#: the shapes of :func:`random_history`'s columns
SHAPES = ("noisy", "flat", "stepwise", "collapse and rise", "drift", "spiky")
#: the keys it draws from: every role's, two candidates of one role, and one no role watches
KEYS = ("loss", "grad_norm", "reward", "entropy", "actor/entropy", "kl", "critic/kl", "response_length/clip_ratio",
        "hack_s", "auroc", "other")


def _shaped(rng: random.Random, n: int, shape: str, level: float) -> list[Any]:
    """A column of ``shape`` about ``level``, with NaN, inf and None cells sprinkled in."""
    period = rng.choice([20, 60, 150])
    trend = rng.choice([-0.9, 3.0])
    sd = rng.choice([0.01, 0.1, 0.5])
    out: list[Any] = []
    for i in range(n):
        if shape == "noisy":
            v = level * (1 + rng.gauss(0, sd))
        elif shape == "flat":
            v = level
        elif shape == "stepwise":
            v = level * (1 + (i // period) % 3)
        elif shape == "collapse and rise":  # (an entropy's: down to 2% of its level, then up to 5 times it)
            v = level * (1 if i < n // 3 else 0.02 if i < 2 * n // 3 else 5) * (1 + rng.gauss(0, 0.02))
        elif shape == "drift":
            v = level * (1 + i / n * trend)
        else:
            v = level * (1 + rng.gauss(0, 0.05)) * (30 if rng.random() < 0.01 else 1)
        r = rng.random()
        out.append(rng.choice([math.nan, math.inf, -math.inf]) if r < 0.01 else None if r < 0.02 else v)
    return out


def random_history(seed: int, steps_go_back: bool = False) -> tuple[list[int], dict[str, list[Any]], list[float]]:
    """A run's steps, watched columns (some of :data:`KEYS`, each of a random shape; one may start late; every one
    may turn NaN at once: a divergence) and wall clock (with pauses past the stall threshold); with
    ``steps_go_back``, the steps may restart lower (resumes) or repeat."""
    rng = random.Random(seed)
    n = rng.choice([30, 120, 400, 900, 3000])
    step, steps = 0, []
    for _ in range(n):
        steps.append(step)
        back = steps_go_back and rng.random() < 0.005
        step = max(0, step - rng.choice([0, 5, 200])) if back else step + rng.choice([1, 1, 1, 2, 10])
    keys = rng.sample(KEYS, rng.randint(1, 8))
    cols = {k: _shaped(rng, n, rng.choice(SHAPES), rng.choice([1.0, 0.05, 3.0])) for k in keys}
    if rng.random() < 0.2:
        late, at = rng.choice(keys), rng.randrange(n)
        cols[late][:at] = [None] * at
    if rng.random() < 0.15:
        at = rng.randrange(n)
        for k in keys:
            cols[k][at:] = [math.nan] * (n - at)
    t, walls = 1.7e9, []
    for _ in range(n):
        t += rng.choice([12.0, 5000.0]) if rng.random() < 0.02 else 10.0
        walls.append(t)
    return steps, cols, walls
