"""The detectors behind steptable.alerts: one condition on one column each, fed its values in order, firing once
per episode. Pure, stdlib only."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from statistics import median as _median

from steptable.alert_rules import Alert, AlertConfig, Level
from steptable.formatting import fmt_auto as _f

_MAD_SIGMA = 1.4826  # MAD -> sigma for normal noise


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
        self.step = 0  # the step of the value being checked
        self.since = 0  # the step the current run of rows (saturated, flat) began at

    def feed(self, step: int, x: float) -> Alert | None:
        self.step = step
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
        if self.run == 1:
            self.since = self.step
        if self.run >= self.cfg.sat_rows:
            return "W", f"saturated {_f(x)} (>{_f(self.cfg.sat_level)} for {self.run} rows, since step {self.since})"
        return None


class _Flat(_Detector):
    """The same value, exactly, row after row: a grad norm of 0, a loss or a mean reward that never moves is a run
    that stopped learning (zero advantages, frozen weights, a reward function that always returns the same), though
    no value is out of range. Fires once ``flat_rows`` rows in a row hold one value."""

    kind = "flat"

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.value: float | None = None

    def check(self, x: float) -> tuple[Level, str] | None:
        self.run = self.run + 1 if x == self.value else 1
        if self.run == 1:
            self.since = self.step
        self.value = x
        if self.run >= self.cfg.flat_rows > 0:
            return "W", f"flat at {_f(x)} for {self.run} rows since step {self.since} (no learning signal?)"
        return None


# Every quantity a step computes from the batch is broken when it is NaN or inf: a reward function that returned
# NaN, a KL past float range, an entropy of NaN logits. (Saturation ratios are counts, never non-finite.)
_DETECTORS: Mapping[str, tuple[type[_Detector], ...]] = {
    "loss": (_NonFinite, _Spike, _Flat),
    "grad_norm": (_NonFinite, _Spike, _Flat),
    "reward": (_NonFinite, _RewardCollapse, _Flat),
    "entropy": (_NonFinite, _EntropyCollapse),
    "kl": (_NonFinite, _KLBlowup),
    "saturation": (_Saturation,),
}
