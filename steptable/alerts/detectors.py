"""The detectors behind steptable.alerts.engine: one condition on one column each, fed its values in order, firing once
per episode. Pure, stdlib only."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping
from statistics import median as _median

from steptable.alerts.rules import SUMMED_KL, Alert, AlertConfig, Level
from steptable.table.formatting import fmt_auto as _f

_MAD_SIGMA = 1.4826  # MAD -> sigma for normal noise
PRE_SAMPLES = 5  # sampled window medians a rise's level-before-the-low is read from (a window's worth at hold 10)
PRE_RECENT = 30  # ... and the samples it falls to when the run has stayed lower (the last 300 rows at hold 10)


class _Window(deque[float]):
    """The last ``maxlen`` finite values with robust statistics."""

    gap = math.inf  # the column's resolution: smallest non-zero step between consecutive values (spike tests)

    def median(self) -> float:
        return _median(self)

    def sigma(self, m: float, spread: bool = False) -> float:
        """Robust sigma around ``m`` (1.4826 MAD), floored so a constant window does not divide by zero. With
        ``spread`` (the upward spike tests), the distance from ``m`` up to the 90th percentile / 1.2816 where that is
        wider: both are sigma on normal noise, but a window near half of whose values sit on one value (a loss that
        is exactly 0 on degenerate batches, a KL frozen at 0 during warmup) has a MAD near 0 that makes ordinary
        values read as spikes. Never below half the column's resolution (a loss rounded to 4 digits reads 0, .0001,
        .0002: a step of .0001 is no spike however still the rest of the window)."""
        devs = [abs(x - m) for x in self]
        mad = _median(devs)
        if mad == 0 and devs:  # over half the window sits on one value (a two-level signal): mean deviation
            mad = 0.8453 * sum(devs) / len(devs)  # sigma = 1.2533 x mean deviation on normal data: 1.2533 / 1.4826
        upper = 0.0
        if spread and len(self) >= 10:
            upper = (sorted(self)[round(0.9 * (len(self) - 1))] - m) / 1.2816
        res = self.gap / 2 if self.gap < math.inf else 0.0
        return max(_MAD_SIGMA * mad, upper, res, 1e-9 * max(1.0, abs(m)))


def _still(sigma: float, m: float) -> bool:
    """``sigma`` (of a window with median ``m``) is at its floor: the window never varied, there is no noise to
    measure a drop against (a reward exactly 0 or 1.0 so far)."""
    return sigma <= 1e-9 * max(1.0, abs(m))


class _Latch:
    """Once-per-episode gate. Fires at the start of a condition and on a W -> E escalation inside it. A row ``near``
    the threshold (inside ``AlertConfig.clear_frac`` of it) does not count towards re-arming: a value hovering at
    the threshold is one episode, not one alert each time it dips below for ``rearm`` rows."""

    __slots__ = ("clear", "level")

    def __init__(self) -> None:
        self.level: Level | None = None
        self.clear = 0

    def step(self, level: Level | None, rearm: int, near: bool = False) -> bool:
        if level is None:
            self.clear = 0 if near else self.clear + 1
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
        self.step = 0  # the step of the value being checked
        self.since = 0  # the step the current run of rows (saturated, flat) began at
        self.near = False  # set by check: this row is within clear_frac of the threshold (not clear for re-arming)

    def feed(self, step: int, x: float) -> Alert | None:
        self.step = step
        self.near = False
        found = self.check(x)
        if self.latch.step(found[0] if found else None, self.cfg.rearm, self.near) and found:
            return Alert(found[0], step, self.key, self.kind, found[1])
        return None

    def check(self, x: float) -> tuple[Level, str] | None:
        raise NotImplementedError

    def carry(self, old: _Detector, at: int) -> None:
        """After a replay of the rows held before a resume at step ``at``: take from ``old`` (the engine's detector
        this one replaces) the run-long values it set before ``at`` that the bounded replay did not reach."""


class _NonFinite(_Detector):
    """A NaN or inf, saying how many steps the column was finite before it (steps, not rows: a run logging every
    10th step was finite for 790 steps at step 800; from its first finite row ``since``, which a bounded replay
    of the rows before a resume still reads, as its first rows are replayed)."""

    kind, nonfinite = "nonfinite", True

    def check(self, x: float) -> tuple[Level, str] | None:
        if math.isfinite(x):
            if self.run == 0:
                self.since = self.step
            self.run += 1
            return None
        n, self.run = self.step - self.since if self.run else 0, 0
        return "E", f"non-finite ({_f(x)}) after {n} finite steps"

    def carry(self, old: _Detector, at: int) -> None:
        # a non-finite value in the rows the replay skips: old knows the finite run began after it
        if isinstance(old, _NonFinite) and old.run and self.run and self.since < old.since < at:
            self.since = old.since


def _z(z: float) -> str:
    return "z>999" if z > 999 else f"z={z:.0f}"


class _Spike(_Detector):
    """One row far above the window's median. Not on a column that never moved (a loss exactly 0 so far: no noise
    to measure against; its first step is where its signal starts), nor while a quarter of the window or more is
    zeros from before it first moved (``run``: rows since then): a GRPO loss 0 while every group fails, then
    ordinary values, is no spike against the zeros; two leading zeros must not blind the test for a window's length
    (an explosion in those rows went unsaid). (From a plateau off 0, ``min_rel`` of its level guards the test.)"""

    kind = "spike"

    def min_rel(self) -> float:
        return self.cfg.spike_min_rel

    def check(self, x: float) -> tuple[Level, str] | None:
        out: tuple[Level, str] | None = None
        c, w = self.cfg, self.win
        moved = 4 * (len(w) - self.run) <= len(w)  # (zeros from before the first move: a quarter of it at most)
        if len(w) >= c.min_history and moved and x - (m := w.median()) > self.min_rel() * abs(m):
            z = (x - m) / w.sigma(m, spread=True)
            if z > c.spike_z:
                out = "W", f"spike {_f(x)} ({_z(z)} vs median {_f(m)} over {len(w)})"
        if w and x != w[-1]:  # after the test: a spike's own step is not the column's resolution
            if w.gap == math.inf and w[-1] != 0:
                self.run = w.maxlen or 0
            w.gap = min(w.gap, abs(x - w[-1]))
        w.append(x)
        if w.gap < math.inf and self.run < len(w):
            self.run += 1
        return out


class _GradSpike(_Spike):
    def min_rel(self) -> float:
        return self.cfg.grad_spike_min_rel


class _Level(_Detector):
    """Current level = low median of the last ``hold`` values; older values go to the window (``self.win``)."""

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.hold: deque[float] = deque()
        self.floor = math.inf  # lowest value that has left the window: seen before any median of it
        self.floor_at = 0  # the step it left the window at
        self.first: list[float] = []
        self.early: float | None = None  # the median of the first ``entropy_early`` values (entropy detectors)
        self.early_at = 0  # the step it was set at

    def level(self, x: float) -> float | None:
        self.hold.append(x)
        if len(self.hold) > self.cfg.hold:
            old = self.hold.popleft()
            if len(self.win) == self.win.maxlen and self.win[0] < self.floor:
                self.floor, self.floor_at = self.win[0], self.step
            self.win.append(old)
        return sorted(self.hold)[(len(self.hold) - 1) // 2] if len(self.hold) >= self.cfg.hold else None

    def note_early(self, x: float) -> None:
        """The early level: the median of the column's first ``entropy_early`` values, once they are in."""
        if self.early is None:
            self.first.append(x)
            if len(self.first) >= self.cfg.entropy_early:
                self.early, self.early_at, self.first = _median(self.first), self.step, []

    def carry(self, old: _Detector, at: int) -> None:
        if isinstance(old, _Level) and old.floor_at < at and old.floor < self.floor:
            self.floor, self.floor_at = old.floor, old.floor_at
        if isinstance(old, _Level) and old.early is not None and old.early_at < at:
            self.early, self.early_at, self.first = old.early, old.early_at, []


class _RewardCollapse(_Level):
    """The level far below the window's median (a collapse over a few steps), or far below the peak level (the
    highest window median seen, against the window's sigma then): a decline over hundreds of steps, which the
    window's median follows down."""

    kind = "reward_collapse"

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.peak = -math.inf
        self.peak_sigma = 0.0
        self.peak_at = 0  # the step the peak was set at
        self.peak_floor = math.inf  # the floor then: a decline's own rows are not the floor it falls to

    def check(self, x: float) -> tuple[Level, str] | None:
        c, cur, w = self.cfg, self.level(x), self.win
        if cur is None or len(w) < c.min_history:
            return None
        m = w.median()
        if m > self.peak or (m == self.peak and _still(self.peak_sigma, m)):  # (the peak's noise once it has some)
            self.peak, self.peak_sigma, self.peak_at, self.peak_floor = m, w.sigma(m), self.step, self.floor
        found = [f for f in (self._drop(cur, m, lambda: w.sigma(m), c.drop_sigma, self.floor, ""),
                             self._drop(cur, self.peak, lambda: self.peak_sigma, c.peak_sigma, self.peak_floor,
                                        "peak ")) if f]
        return max(found, key=lambda f: f[0] == "E") if found else None  # the worse; the recent one on a tie

    def carry(self, old: _Detector, at: int) -> None:
        super().carry(old, at)
        if isinstance(old, _RewardCollapse) and old.peak_at < at and old.peak > self.peak:
            self.peak, self.peak_sigma, self.peak_at = old.peak, old.peak_sigma, old.peak_at
            self.peak_floor = old.peak_floor

    def _drop(self, cur: float, ref: float, sigma: Callable[[], float], n_sigma: float, seen: float,
              what: str) -> tuple[Level, str] | None:
        c, drop = self.cfg, ref - cur
        if drop <= c.clear_frac * c.reward_rel_drop * abs(ref) or drop <= 0:
            return None
        if _still(s := sigma(), ref):  # a reference that never varied: no noise to count a drop in
            return None
        z = drop / s
        self.near = self.near or z > c.clear_frac * n_sigma
        if drop <= c.reward_rel_drop * abs(ref) or z <= n_sigma:
            return None
        rel = f"-{100 * drop / abs(ref):.0f}%" if ref else f"-{_f(drop)}"
        floor = min(seen, 0.0)  # 0 for a reward never seen negative, else the lowest value seen before ``ref``
        # "to floor" only from a reference clearly above it (a reward sitting on its floor that dips below is no E),
        # or far below a negative floor seen before (a penalty reward at -1 falling to -3)
        low = ((ref - floor > c.reward_rel_drop * abs(ref) and cur <= floor + c.reward_floor_tol * (ref - floor))
               or (seen < 0 and cur <= floor - c.reward_rel_drop * max(abs(ref), abs(floor))))
        where = "floor " if low else ""
        return "E" if where else "W", f"collapse to {where}{_f(cur)} from {what}{_f(ref)} ({rel}, {z:.0f}sd)"


class _EntropyCollapse(_Level):
    kind = "entropy_collapse"

    def check(self, x: float) -> tuple[Level, str] | None:
        c = self.cfg
        self.note_early(x)
        cur = self.level(x)
        if cur is None:
            return None
        if self.early is not None and self.early > 0 and cur < c.entropy_frac_early * self.early / c.clear_frac:
            self.near = True
            if cur < c.entropy_frac_early * self.early:
                return "W", f"collapse {_f(cur)} (<{100 * c.entropy_frac_early:.0f}% of early {_f(self.early)})"
        w = self.win
        if len(w) < c.min_history or (m := w.median()) <= 0 or cur >= c.entropy_frac_recent * m / c.clear_frac:
            return None
        self.near = True
        if cur >= c.entropy_frac_recent * m:
            return None
        if (m - cur) / w.sigma(m) <= c.drop_sigma:  # a drop within the noise
            return None
        return "W", f"collapse {_f(cur)} (<{100 * c.entropy_frac_recent:.0f}% of recent {_f(m)})"


class _KLBlowup(_Detector):
    kind = "kl_blowup"

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.levels = key not in SUMMED_KL  # the absolute KL levels apply (a per-token KL)

    def check(self, x: float) -> tuple[Level, str] | None:
        c, w = self.cfg, self.win
        out: tuple[Level, str] | None = None
        m = w.median() if len(w) >= c.min_history and x > c.kl_jump_min else 0.0  # 0: no jump test
        if self.levels and x > c.kl_error:
            out = "E", f"blow-up {_f(x)} (>{_f(c.kl_error)})"
        elif m > 0 and x > c.kl_jump * m and (x - m) / w.sigma(m, spread=True) > c.spike_z:
            out = "E" if x > c.kl_jump_error * m else "W", f"blow-up {_f(x)} (x{_f(x / m)} vs median {_f(m)})"
        elif self.levels and x > c.kl_warn:
            out = "W", f"blow-up {_f(x)} (>{_f(c.kl_warn)})"
        self.near = (self.levels and x > c.clear_frac * c.kl_warn) or x > c.clear_frac * c.kl_jump * m > 0
        w.append(x)
        return out


class _Rise(_Level):
    """The column's level (the low median of the last ``hold`` rows) far above the lowest window median seen: a
    blow-up over tens of steps, none of which is a spike against the rows just before it."""

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.base = math.inf
        self.samples: deque[tuple[int, float]] = deque(maxlen=PRE_RECENT)  # (step, window median) sampled
        self.pre = math.inf  # the level before the lowest: the highest of the last PRE_SAMPLES samples when it was
        # set, followed down in proportion as the lowest level steps lower (a plateau's small steps keep the level
        # before its dip)
        self.lows: deque[tuple[int, float, float]] = deque(maxlen=16)  # (step, base, pre) as each was set: what a
        # resumed engine reads the low as it stood at the resume from

    def factor(self) -> float:
        raise NotImplementedError

    def beyond(self, cur: float) -> str | None:
        """What else the level must pass to count as a rise ('' when nothing), or None when it does not pass."""
        return ""

    def check(self, x: float) -> tuple[Level, str] | None:
        c, cur, w = self.cfg, self.level(x), self.win
        if cur is None or len(w) < (w.maxlen or 1):  # a full window: past the warmup's first steps
            return None
        self.run += 1
        if (self.run - 1) % self.cfg.hold == 0:  # the lowest of medians every `hold` rows: the same minimum, cheaper
            if (m := w.median()) < self.base:
                before = [v for _, v in list(self.samples)[-PRE_SAMPLES:]]
                scaled = self.pre * (m / self.base) if math.isfinite(self.base) and self.base > 0 else m
                self.base, self.pre = m, max(scaled, m, *before)
                self.lows.append((self.step, m, self.pre))
            self.samples.append((self.step, m))
        if not self.base > 0 or cur <= c.clear_frac * self.factor() * self.base:
            return None
        self.near = True
        if cur <= self.factor() * self.base or (more := self.beyond(cur)) is None:
            return None
        return "W", f"rise to {_f(cur)} (x{_f(cur / self.base)} its lowest level {_f(self.base)}{more})"

    def carry(self, old: _Detector, at: int) -> None:
        super().carry(old, at)
        if not isinstance(old, _Rise):
            return
        # the samples the old engine took before the resume and before this one's first (a replay is bounded)
        first = min(at, self.samples[0][0]) if self.samples else at
        self.samples = deque([*(p for p in old.samples if p[0] < first), *self.samples], maxlen=PRE_RECENT)
        # the old engine's low as it stood at the resume (a lower one it set in the replaced rows is not the run's)
        prior = [low for low in old.lows if low[0] < at]
        if not prior:
            return
        low = min(prior, key=lambda low: low[1])  # the lowest: the last set before the resume
        _, base, pre = low
        if base < self.base:
            self.base, self.pre = base, pre
            self.lows.append(low)
        elif 0 < base <= self.base < math.inf:
            # the replay's own low, at or below the old one: the level before it followed down as a live engine
            # would (a replay that began inside a dip read that level from samples of the dip)
            self.pre = max(self.pre, pre * self.base / base)
            self.lows[-1] = (self.lows[-1][0], self.base, self.pre)  # (a later resume reads it from there)


class _GradRise(_Rise):
    """The grad norm's level a multiple of its lowest, and well above the level it held before that low: a GRPO
    stretch of zero-advantage groups (grad norm near 0 for 26-120 rows) that ends is a return, not a rise."""

    kind = "grad_rise"

    def factor(self) -> float:
        return self.cfg.grad_rise

    def beyond(self, cur: float) -> str | None:
        # the level before the low, or the highest of the older half of the last PRE_RECENT samples when lower (a
        # run settled far below an early level: a blow-up from there is a rise; a dip under ~120 rows, or the first
        # 150 rows of a climb, never fill that half)
        older = list(self.samples)[: max(1, len(self.samples) // 2)]
        ref = min(self.pre, max(v for _, v in older)) if older else self.pre
        return "" if cur > self.cfg.grad_rise_pre * ref else None


class _EntropyRise(_Rise):
    """The policy's entropy climbing to a multiple of its lowest level and well above where the run began: the
    sampler drifting towards noise (the completions read as gibberish soon after). Back up to the early level
    after a collapse is a recovery, not a rise."""

    kind = "entropy_rise"

    def factor(self) -> float:
        return self.cfg.entropy_rise

    def check(self, x: float) -> tuple[Level, str] | None:
        self.note_early(x)
        return super().check(x)

    def beyond(self, cur: float) -> str | None:
        early = self.early
        if early is None or not early > 0 or cur <= self.cfg.entropy_rise_early * early:
            return None
        return f", x{_f(cur / early)} the early {_f(early)}"


class _Saturation(_Detector):
    kind = "saturation"

    def check(self, x: float) -> tuple[Level, str] | None:
        self.run = self.run + 1 if x > self.cfg.sat_level else 0
        self.near = x > self.cfg.clear_frac * self.cfg.sat_level
        if self.run == 1:
            self.since = self.step
        if self.run >= self.cfg.sat_rows:
            return "W", f"saturated {_f(x)} (>{_f(self.cfg.sat_level)} for {self.run} rows, since step {self.since})"
        return None


class _Flat(_Detector):
    """The same value, exactly, row after row: a grad norm of 0, a loss or a mean reward that never moves is a run
    that stopped learning (zero advantages, frozen weights, a reward function that always returns the same), though
    no value is out of range. Fires once ``flat_rows`` rows in a row hold one value, and ``gate`` agrees (the
    engine's word on the other signals: a loss quantised to one value while the grad norm moves is learning)."""

    kind = "flat"

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.value: float | None = None
        self.gate: Callable[[], bool] = lambda: True

    def check(self, x: float) -> tuple[Level, str] | None:
        self.run = self.run + 1 if x == self.value else 1
        if self.run == 1:
            self.since = self.step
        self.value = x
        if self.run >= self.cfg.flat_rows > 0 and self.gate():
            return "W", self.message(x)
        return None

    def message(self, x: float, to_end: bool = False) -> str:
        still = ", still at the last row" if to_end else ""
        return f"flat at {_f(x)} for {self.run} rows since step {self.since}{still} (no learning signal?)"

    def still(self) -> str | None:
        """Where the episode it said goes on to the row read last: its message as of now (a run dead from step 0
        read "flat ... for 50 rows since step 0" at step 999, as if it were a blip at the start)."""
        if self.latch.level is None or self.value is None or self.run < self.cfg.flat_rows:
            return None
        return self.message(self.value, to_end=True)


# Every quantity a step computes from the batch is broken when it is NaN or inf: a reward function that returned
# NaN, a KL past float range, an entropy of NaN logits. (Saturation ratios are counts, never non-finite.)
_DETECTORS: Mapping[str, tuple[type[_Detector], ...]] = {
    "loss": (_NonFinite, _Spike, _Flat),
    "grad_norm": (_NonFinite, _GradSpike, _GradRise, _Flat),
    "reward": (_NonFinite, _RewardCollapse, _Flat),
    "entropy": (_NonFinite, _EntropyCollapse, _EntropyRise),
    "kl": (_NonFinite, _KLBlowup),
    "saturation": (_Saturation,),
}
