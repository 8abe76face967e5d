"""Alert detectors over a run's per-step columns: pure, stdlib only, one ASCII line per alert.

The StepLogger and ``steptable tail --alerts-only`` stream rows through :meth:`AlertEngine.update`; the app and the
summary replay a stored run with :func:`scan` (same rows, same alerts).

Each detector fires once per episode: when its condition starts; silent while it holds; re-armed after
``AlertConfig.rearm`` clear rows where the column was present (a row without the key tells a detector nothing).
An episode may escalate once, W -> E. Columns are found by role (:data:`DEFAULT_ROLES`, replaced per role by
``AlertConfig(roles=...)``): a single-key role binds to its first candidate (table order) in the first row having
any; ``kl`` and ``saturation`` watch every candidate present (ref-KL vs PPO-KL, truncation vs token clipping).
Cells: numbers, bools (0/1), numeric strings ("nan"/"inf" too), ``(n, d)`` fractions (tuple, list, "n/d"; d == 0
is no data). None and anything else is absent, never an error.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median as _median
from types import MappingProxyType
from typing import Any, Literal

from steptable.formatting import fmt_auto as _f
from steptable.formatting import sanitize

Level = Literal["W", "E"]

# Role -> candidate keys (exact, case-sensitive). Entropy is the policy's mean token entropy only: not
# train/weight_entropy (an entropy of weights, not of the policy), not exec_surprisal_mean (surprisal of sampled
# tokens, another quantity), not actor/entropy_loss or entropy_coeff (loss terms whose sign and scale vary).
DEFAULT_ROLES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "loss": ("loss", "train/loss", "actor/pg_loss"),
    "grad_norm": ("gn", "grad_norm", "actor/grad_norm", "train/grad_norm", "optim/grad_norm"),
    "reward": ("rew", "reward", "mean_reward", "env/all/reward/total", "critic/score/mean", "train/reward",
               "critic/rewards/mean"),
    "entropy": ("entropy", "actor/entropy", "optim/entropy", "train/entropy"),
    "kl": ("kl", "critic/kl", "actor/ppo_kl", "train/kl", "optim/kl_sample_train_v1", "actor/kl_loss"),
    "saturation": ("response_length/clip_ratio", "completions/clipped_ratio", "train/completions/clipped_ratio",
                   "train/completions/clipped_frac", "max_token_hit_rate", "actor/pg_clipfrac"),
    "hack": ("hack_s",),
    "auroc": ("auroc",),
})
MULTI_ROLES = frozenset({"kl", "saturation"})
_MAD_SIGMA = 1.4826  # MAD -> sigma for normal noise


@dataclass(frozen=True)
class AlertConfig:
    """Thresholds of every detector. Windows count rows where the column is present."""

    roles: Mapping[str, Sequence[str]] = field(default_factory=dict)  # merged over DEFAULT_ROLES; () disables
    rearm: int = 10  # clear rows before a detector can fire again
    window: int = 50  # recent rows for median / MAD
    min_history: int = 20  # rows in the window before spike / collapse / jump tests run
    nan_missing: bool = False  # float NaN cells are absent (stored columns that pad with NaN); "nan" strings count
    spike_z: float = 10.0  # robust z of loss / grad-norm over the window median
    spike_min_rel: float = 0.5  # ... and at least this far above the median, relative to |median|
    hold: int = 10  # reward / entropy: the low median of the last `hold` rows is the current level
    drop_sigma: float = 4.0  # reward / entropy drop below the window median, in robust sigma of the window ...
    reward_rel_drop: float = 0.3  # ... and for reward relative to |window median|
    reward_floor_tol: float = 0.1  # E within this share of the gap to the floor (0, or the lowest value if < 0)
    entropy_early: int = 20  # first rows whose median is the early level
    entropy_frac_early: float = 0.1  # W below this share of the early level
    entropy_frac_recent: float = 0.5  # W below this share of the window median
    kl_warn: float = 1.0  # absolute KL levels (W, E)
    kl_error: float = 10.0
    kl_jump: float = 10.0  # factor over the window median (W, E), with a robust z above spike_z
    kl_jump_error: float = 100.0
    kl_jump_min: float = 0.01  # a jump counts only above this absolute KL
    sat_level: float = 0.9  # saturation: ratio above this ...
    sat_rows: int = 5  # ... for this many consecutive rows
    stall_factor: float = 10.0  # no row for this many median row intervals ...
    stall_min_s: float = 60.0  # ... and at least this many seconds
    stall_min_rows: int = 5  # row intervals seen before the stall test runs
    hack_window: int = 20  # observations of each of hack_s / auroc; halves are compared
    hack_rise: float = 0.1  # pooled hack rate up by this much (absolute) ...
    auroc_drop: float = 0.05  # ... while the mean AUROC falls by this much

    def role_keys(self) -> dict[str, tuple[str, ...]]:
        """The role table in force: DEFAULT_ROLES with this config's roles replacing theirs."""
        out = {r: tuple(k) for r, k in DEFAULT_ROLES.items()}
        out.update({r: tuple(k) for r, k in self.roles.items()})
        return out


@dataclass(frozen=True)
class Alert:
    level: Level  # "W" warning, "E" error
    step: int
    column: str  # the key; "" for run-level alerts (stall)
    kind: str  # nonfinite, spike, reward_collapse, entropy_collapse, kl_blowup, saturation, stall, hack_auroc
    message: str

    def line(self) -> str:
        """One ASCII line: ``E step 812 loss non-finite (nan) after 811 finite steps``."""
        return f"{self.level} {self.message_line()}"

    def message_line(self) -> str:
        """The line without the level letter (for loggers that show the level themselves)."""
        col = f" {self.column}" if self.column else ""
        return sanitize(f"step {self.step}{col} {self.message}")


def cell_float(v: Any) -> float | None:
    """Numeric view of one cell; None when absent or not numeric. NaN / inf are returned as such."""
    if v is None or isinstance(v, float):
        return v
    if isinstance(v, (str, tuple, list)):
        fr = cell_frac(v)
        if fr is not None:
            return fr[0] / fr[1]
        if not isinstance(v, str):
            return None
    try:  # ints, bools, numeric strings, numpy / torch scalars
        return float(v)
    except OverflowError:  # an int beyond float range
        return (math.inf if v > 0 else -math.inf) if isinstance(v, int) else None
    except Exception:
        return None


def cell_frac(v: Any) -> tuple[float, float] | None:
    """``(n, d)`` of a fraction cell (tuple, list or "n/d" string) with finite n and d > 0, else None."""
    if isinstance(v, str):
        v = v.split("/")
    if not isinstance(v, (tuple, list)) or len(v) != 2:
        return None
    try:
        n, d = float(v[0]), float(v[1])
    except Exception:
        return None
    return (n, d) if math.isfinite(n) and math.isfinite(d) and d > 0 else None


class _Window(deque[float]):
    """The last ``maxlen`` finite values with robust statistics."""

    def median(self) -> float:
        return _median(self)

    def sigma(self, m: float, spread: bool = False) -> float:
        """Robust sigma around ``m`` (1.4826 MAD), floored so a constant window does not divide by zero. With
        ``spread`` (the upward spike tests), the distance from ``m`` up to the 90th percentile / 1.2816 where that is
        wider: both are sigma on normal noise, but a window near half of whose values sit on one value (a loss that
        is exactly 0 on degenerate batches, a KL frozen at 0 during warmup) has a MAD near 0 that makes ordinary
        values read as spikes."""
        devs = [abs(x - m) for x in self]
        mad = _median(devs)
        if mad == 0 and devs:  # over half the window sits on one value (a two-level signal): mean deviation
            mad = 0.8453 * sum(devs) / len(devs)  # sigma = 1.2533 x mean deviation on normal data: 1.2533 / 1.4826
        upper = 0.0
        if spread and len(self) >= 10:
            upper = (sorted(self)[round(0.9 * (len(self) - 1))] - m) / 1.2816
        return max(_MAD_SIGMA * mad, upper, 1e-9 * max(1.0, abs(m)))


class _Latch:
    """Once-per-episode gate. Fires at the start of a condition and on a W -> E escalation inside it."""

    __slots__ = ("clear", "level")

    def __init__(self) -> None:
        self.level: Level | None = None
        self.clear = 0

    def step(self, level: Level | None, rearm: int) -> bool:
        if level is None:
            self.clear += 1
            self.level = None if self.clear >= rearm else self.level
            return False
        fire = self.level is None or (level == "E" and self.level == "W")
        self.clear, self.level = 0, level if fire else self.level
        return fire


class _Detector:
    """One condition on one key. ``check`` sees every finite value in order (non-finite too if ``nonfinite``)."""

    kind = ""
    nonfinite = False

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        self.cfg, self.key, self.latch = cfg, key, _Latch()
        self.win = _Window(maxlen=max(1, cfg.window))
        self.run = 0

    def feed(self, step: int, x: float) -> Alert | None:
        found = self.check(x)
        if self.latch.step(found[0] if found else None, self.cfg.rearm) and found:
            return Alert(found[0], step, self.key, self.kind, found[1])
        return None

    def check(self, x: float) -> tuple[Level, str] | None:
        raise NotImplementedError


class _NonFinite(_Detector):
    kind, nonfinite = "nonfinite", True

    def check(self, x: float) -> tuple[Level, str] | None:
        if math.isfinite(x):
            self.run += 1
            return None
        n, self.run = self.run, 0
        return "E", f"non-finite ({_f(x)}) after {n} finite steps"


class _Spike(_Detector):
    kind = "spike"

    def check(self, x: float) -> tuple[Level, str] | None:
        out: tuple[Level, str] | None = None
        c, w = self.cfg, self.win
        if len(w) >= c.min_history and x - (m := w.median()) > c.spike_min_rel * abs(m):
            z = (x - m) / w.sigma(m, spread=True)
            if z > c.spike_z:
                out = "W", f"spike {_f(x)} (z={z:.0f} vs median {_f(m)} over {len(w)})"
        w.append(x)
        return out


class _Level(_Detector):
    """Current level = low median of the last ``hold`` values; older values go to the window (``self.win``)."""

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.hold: deque[float] = deque()
        self.floor = math.inf  # lowest value that has left the hold
        self.first: list[float] = []
        self.early: float | None = None

    def level(self, x: float) -> float | None:
        self.hold.append(x)
        if len(self.hold) > self.cfg.hold:
            old = self.hold.popleft()
            self.win.append(old)
            self.floor = min(self.floor, old)
        return sorted(self.hold)[(len(self.hold) - 1) // 2] if len(self.hold) >= self.cfg.hold else None


class _RewardCollapse(_Level):
    kind = "reward_collapse"

    def check(self, x: float) -> tuple[Level, str] | None:
        c, cur, w = self.cfg, self.level(x), self.win
        if cur is None or len(w) < c.min_history:
            return None
        m = w.median()
        drop = m - cur
        if drop <= 0 or drop <= c.reward_rel_drop * abs(m) or (z := drop / w.sigma(m)) <= c.drop_sigma:
            return None
        rel = f"-{100 * drop / abs(m):.0f}%" if m else f"-{_f(drop)}"
        floor = min(self.floor, 0.0)  # 0 for a reward never seen negative, else the lowest earlier value
        if cur <= floor + c.reward_floor_tol * (m - floor):
            return "E", f"collapse to floor {_f(cur)} from {_f(m)} ({rel}, {z:.0f}sd)"
        return "W", f"collapse to {_f(cur)} from {_f(m)} ({rel}, {z:.0f}sd)"


class _EntropyCollapse(_Level):
    kind = "entropy_collapse"

    def check(self, x: float) -> tuple[Level, str] | None:
        c = self.cfg
        if self.early is None:
            self.first.append(x)
            if len(self.first) >= c.entropy_early:
                self.early = _median(self.first)
        cur = self.level(x)
        if cur is None:
            return None
        if self.early is not None and self.early > 0 and cur < c.entropy_frac_early * self.early:
            return "W", f"collapse {_f(cur)} (<{100 * c.entropy_frac_early:.0f}% of early {_f(self.early)})"
        w = self.win
        if len(w) < c.min_history or (m := w.median()) <= 0 or cur >= c.entropy_frac_recent * m:
            return None
        if (m - cur) / w.sigma(m) <= c.drop_sigma:  # a drop within the noise
            return None
        return "W", f"collapse {_f(cur)} (<{100 * c.entropy_frac_recent:.0f}% of recent {_f(m)})"


class _KLBlowup(_Detector):
    kind = "kl_blowup"

    def check(self, x: float) -> tuple[Level, str] | None:
        c, w = self.cfg, self.win
        out: tuple[Level, str] | None = None
        if x > c.kl_error:
            out = "E", f"blow-up {_f(x)} (>{_f(c.kl_error)})"
        elif (len(w) >= c.min_history and x > c.kl_jump_min and (m := w.median()) > 0 and x > c.kl_jump * m
              and (x - m) / w.sigma(m, spread=True) > c.spike_z):
            out = "E" if x > c.kl_jump_error * m else "W", f"blow-up {_f(x)} (x{_f(x / m)} vs median {_f(m)})"
        elif x > c.kl_warn:
            out = "W", f"blow-up {_f(x)} (>{_f(c.kl_warn)})"
        w.append(x)
        return out


class _Saturation(_Detector):
    kind = "saturation"

    def check(self, x: float) -> tuple[Level, str] | None:
        self.run = self.run + 1 if x > self.cfg.sat_level else 0
        if self.run >= self.cfg.sat_rows:
            return "W", f"saturated {_f(x)} (>{_f(self.cfg.sat_level)} for {self.run} rows)"
        return None


# Every quantity a step computes from the batch is broken when it is NaN or inf: a reward function that returned
# NaN, a KL past float range, an entropy of NaN logits. (Saturation ratios are counts, never non-finite.)
_DETECTORS: Mapping[str, tuple[type[_Detector], ...]] = {
    "loss": (_NonFinite, _Spike),
    "grad_norm": (_NonFinite, _Spike),
    "reward": (_NonFinite, _RewardCollapse),
    "entropy": (_NonFinite, _EntropyCollapse),
    "kl": (_NonFinite, _KLBlowup),
    "saturation": (_Saturation,),
}


class AlertEngine:
    """Streaming detectors: feed rows in order with :meth:`update`; poll :meth:`check_stall` while waiting."""

    def __init__(self, config: AlertConfig | None = None) -> None:
        self.config = config or AlertConfig()
        self.roles = self.config.role_keys()
        self._bound: dict[str, str] = {}
        self._dets: dict[tuple[str, str], tuple[_Detector, ...]] = {}
        self._last_step = 0
        self._last_wall: float | None = None
        self._dts = _Window(maxlen=max(1, self.config.window))
        self._pauses: deque[float] = deque(maxlen=64)  # gaps past the stall threshold the run came back from
        self._stalled = False
        self._hack: deque[tuple[float, float]] = deque(maxlen=max(2, self.config.hack_window))
        self._auroc: deque[float] = deque(maxlen=max(2, self.config.hack_window))
        self._hack_latch = _Latch()

    def _value(self, row: Mapping[str, Any], key: str) -> float | None:
        v = cell_float(row.get(key))
        if v is not None and self.config.nan_missing and v != v and isinstance(row.get(key), float):
            return None
        return v

    def _keys(self, role: str, row: Mapping[str, Any]) -> list[str]:
        cands = self.roles.get(role, ())
        if role in MULTI_ROLES:
            return [k for k in cands if k in row]
        key = self._bound.get(role)
        if key is None:
            for k in cands:
                if row.get(k) is not None:
                    self._bound[role] = key = k
                    break
        return [key] if key is not None else []

    def update(self, step: int, row: Mapping[str, Any], wall_time: float | None = None) -> list[Alert]:
        """Feed one row (raw cells by key); returns the alerts that start at this row."""
        out: list[Alert] = []
        self._last_step = step
        self._wall(wall_time)
        for role, classes in _DETECTORS.items():
            for key in self._keys(role, row):
                x = self._value(row, key)
                if x is None:
                    continue
                dets = self._dets.get((role, key))
                if dets is None:
                    dets = self._dets[(role, key)] = tuple(c(self.config, key) for c in classes)
                finite = math.isfinite(x)
                for d in dets:
                    if finite or d.nonfinite:
                        if (a := d.feed(step, x)) is not None:
                            out.append(a)
        if (a := self._hack_update(step, row)) is not None:
            out.append(a)
        return out

    def _wall(self, wall_time: float | None) -> None:
        t = cell_float(wall_time)
        if t is None or not math.isfinite(t):
            return
        self._stalled = False
        if self._last_wall is not None and t > self._last_wall:
            gap = t - self._last_wall
            if len(self._dts) >= self.config.stall_min_rows and gap > self._stall_after():
                self._pauses.append(gap)
            self._dts.append(gap)
        self._last_wall = t if self._last_wall is None else max(t, self._last_wall)

    def _stall_after(self) -> float:
        return max(self.config.stall_factor * self._dts.median(), self.config.stall_min_s)

    def check_stall(self, now: float) -> list[Alert]:
        """W once when no row came for ``stall_factor`` x the median row interval (at least ``stall_min_s``), unless
        the run came back from two pauses at least two thirds as long: an evaluation every 50 steps or a checkpoint
        save is the run's rhythm, said at its first two pauses, not at every one."""
        c = self.config
        if self._stalled or self._last_wall is None or len(self._dts) < c.stall_min_rows:
            return []
        med = self._dts.median()
        gap = now - self._last_wall
        if not gap > self._stall_after() or sum(1 for p in self._pauses if p * 1.5 >= gap) >= 2:
            return []
        self._stalled = True
        msg = f"stalled: no row for {fmt_age(gap)} ({gap / med:.0f}x median {_f(med)}s/row)"
        return [Alert("W", self._last_step, "", "stall", msg)]

    def _hack_update(self, step: int, row: Mapping[str, Any]) -> Alert | None:
        """W when the pooled hack rate rises while AUROC falls, comparing the two halves of the window."""
        hk, au, got = self._keys("hack", row), self._keys("auroc", row), False
        if hk:
            raw = row.get(hk[0])
            fr = cell_frac(raw)
            if fr is None and (x := cell_float(raw)) is not None and math.isfinite(x):
                fr = (x, 1.0)
            if fr is not None:
                self._hack.append(fr)
                got = True
        if au and (x := self._value(row, au[0])) is not None and math.isfinite(x):
            self._auroc.append(x)
            got = True
        c, h, a = self.config, list(self._hack), list(self._auroc)
        if not got or len(h) < (self._hack.maxlen or 0) or len(a) < (self._auroc.maxlen or 0):
            return None
        hh, ah = len(h) // 2, len(a) // 2
        h0 = sum(n for n, _ in h[:hh]) / sum(d for _, d in h[:hh])
        h1 = sum(n for n, _ in h[hh:]) / sum(d for _, d in h[hh:])
        a0, a1 = sum(a[:ah]) / ah, sum(a[ah:]) / (len(a) - ah)
        bad = h1 - h0 >= c.hack_rise and a0 - a1 >= c.auroc_drop
        if not self._hack_latch.step("W" if bad else None, c.rearm):
            return None
        msg = f"rising {_f(h0)}->{_f(h1)} while {au[0]} {_f(a0)}->{_f(a1)} (last {len(h)})"
        return Alert("W", step, hk[0], "hack_auroc", msg)


def fmt_age(seconds: float) -> str:
    """Compact duration: 42s, 7.5m, 3.2h, 2.5d."""
    s = max(0.0, seconds) if seconds == seconds else 0.0
    for unit, size, below in (("s", 1, 100), ("m", 60, 6000), ("h", 3600, 172800)):
        if s < below:
            return f"{s:.0f}s" if unit == "s" else f"{_f(s / size)}{unit}"
    return f"{_f(s / 86400)}d"


def scan(
    steps: Sequence[int],
    columns: Mapping[str, Sequence[Any]],
    wall_times: Sequence[float] | None = None,
    config: AlertConfig | None = None,
    now: float | None = None,
) -> list[Alert]:
    """Replay a stored run: the alerts that streaming :meth:`AlertEngine.update` gives for the same rows.

    With ``wall_times`` each row is preceded by ``check_stall(wall_times[i])``, so stalls the run recovered from
    show up at the row after the gap; with ``now`` too, a stall still going on shows up after the last row. None
    cells are absent (and float NaN too with ``config.nan_missing``).
    """
    eng = AlertEngine(config)
    wanted = {k for keys in eng.roles.values() for k in keys}
    cols = [(k, col) for k, col in columns.items() if k in wanted]
    out: list[Alert] = []
    for i, step in enumerate(steps):
        row = {k: col[i] for k, col in cols if i < len(col) and col[i] is not None}
        wt = cell_float(wall_times[i]) if wall_times is not None and i < len(wall_times) else None
        if wt is not None and math.isfinite(wt):
            out.extend(eng.check_stall(wt))
        out.extend(eng.update(step, row, wt))
    if now is not None:
        out.extend(eng.check_stall(now))
    return out
