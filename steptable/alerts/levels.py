"""Level detectors: a column's current level (the low median of its last few values) against an earlier one --
reward and entropy collapses, grad-norm and entropy rises. Pure."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections import deque
from collections.abc import Callable
from statistics import median as _median

from steptable.alerts.rules import AlertConfig, Level
from steptable.alerts.window import Detector, Window, still
from steptable.table.formatting import fmt_auto as _f

PRE_SAMPLES = 5  # sampled window medians a rise's level-before-the-low is read from (a window's worth at hold 10)
PRE_RECENT = 30  # ... and the samples it falls to when the run has stayed lower (the last 300 rows at hold 10)


class LevelDetector(Detector):
    """Current level = low median of the last ``hold`` values; older values go to the window (``self.win``)."""

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.hold = Window(maxlen=max(1, cfg.hold))
        self.floor = math.inf  # lowest value that has left the window: seen before any median of it
        self.floor_at = 0  # the step it left the window at
        self.first: list[float] = []
        self.early: float | None = None  # the median of the first ``entropy_early`` values (entropy detectors)
        self.early_at = 0  # the step it was set at

    def level(self, x: float) -> float | None:
        hold = self.hold
        if len(hold) == hold.maxlen:
            old = hold[0]
            if len(self.win) == self.win.maxlen and self.win[0] < self.floor:
                self.floor, self.floor_at = self.win[0], self.step
            self.win.append(old)
        hold.append(x)
        return hold.low_median() if len(hold) >= self.cfg.hold else None

    def note_early(self, x: float) -> None:
        """The early level: the median of the column's first ``entropy_early`` values, once they are in."""
        if self.early is None:
            self.first.append(x)
            if len(self.first) >= self.cfg.entropy_early:
                self.early, self.early_at, self.first = _median(self.first), self.step, []

    def carry(self, old: Detector, at: int) -> None:
        if isinstance(old, LevelDetector) and old.floor_at < at and old.floor < self.floor:
            self.floor, self.floor_at = old.floor, old.floor_at
        if isinstance(old, LevelDetector) and old.early is not None and old.early_at < at:
            self.early, self.early_at, self.first = old.early, old.early_at, []


class RewardCollapse(LevelDetector):
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
        if m > self.peak or (m == self.peak and still(self.peak_sigma, m)):  # (the peak's noise once it has some)
            self.peak, self.peak_sigma, self.peak_at, self.peak_floor = m, w.sigma(m), self.step, self.floor
        found = [f for f in (self._drop(cur, m, lambda: w.sigma(m), c.drop_sigma, self.floor, ""),
                             self._drop(cur, self.peak, lambda: self.peak_sigma, c.peak_sigma, self.peak_floor,
                                        "peak ")) if f]
        return max(found, key=lambda f: f[0] == "E") if found else None  # the worse; the recent one on a tie

    def carry(self, old: Detector, at: int) -> None:
        super().carry(old, at)
        if isinstance(old, RewardCollapse) and old.peak_at < at and old.peak > self.peak:
            self.peak, self.peak_sigma, self.peak_at = old.peak, old.peak_sigma, old.peak_at
            self.peak_floor = old.peak_floor

    def _drop(self, cur: float, ref: float, sigma: Callable[[], float], n_sigma: float, seen: float,
              what: str) -> tuple[Level, str] | None:
        c, drop = self.cfg, ref - cur
        if drop <= c.clear_frac * c.reward_rel_drop * abs(ref) or drop <= 0:
            return None
        if still(s := sigma(), ref):  # a reference that never varied: no noise to count a drop in
            return None
        z = drop / s
        self.near = self.near or z > c.clear_frac * n_sigma
        if drop <= c.reward_rel_drop * abs(ref) or z <= n_sigma:
            return None
        # a share only of a positive reference the level stays above 0 from: against a reference near 0 (or across
        # it) a percentage is meaningless ("-5100%"), the absolute change is what happened
        rel = f"-{100 * drop / ref:.0f}%" if ref > 0 and cur >= 0 else f"-{_f(drop)}"
        floor = min(seen, 0.0)  # 0 for a reward never seen negative, else the lowest value seen before ``ref``
        # "to floor" only from a reference clearly above it (a reward sitting on its floor that dips below is no E),
        # or far below a negative floor seen before (a penalty reward at -1 falling to -3)
        low = ((ref - floor > c.reward_rel_drop * abs(ref) and cur <= floor + c.reward_floor_tol * (ref - floor))
               or (seen < 0 and cur <= floor - c.reward_rel_drop * max(abs(ref), abs(floor))))
        where = "floor " if low else ""
        return "E" if where else "W", f"collapse to {where}{_f(cur)} from {what}{_f(ref)} ({rel}, {z:.0f}sd)"


class EntropyCollapse(LevelDetector):
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
                if self.said("W"):
                    return "W", ""
                return "W", f"collapse {_f(cur)} (<{100 * c.entropy_frac_early:.0f}% of early {_f(self.early)})"
        w = self.win
        if len(w) < c.min_history or (m := w.median()) <= 0 or cur >= c.entropy_frac_recent * m / c.clear_frac:
            return None
        self.near = True
        if cur >= c.entropy_frac_recent * m:
            return None
        if (m - cur) / w.sigma(m) <= c.drop_sigma:  # a drop within the noise
            return None
        if self.said("W"):
            return "W", ""
        return "W", f"collapse {_f(cur)} (<{100 * c.entropy_frac_recent:.0f}% of recent {_f(m)})"


class Rise(LevelDetector):
    """The column's level (the low median of the last ``hold`` rows) far above the lowest window median seen: a
    blow-up over tens of steps, none of which is a spike against the rows just before it."""

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.base = math.inf
        self.samples: deque[tuple[int, float]] = deque(maxlen=PRE_RECENT)  # (step, window median) sampled
        self.pre = math.inf  # the level before the lowest: the highest of the last PRE_SAMPLES samples when it was
        # set, followed down in proportion as the lowest level steps lower (a plateau's small steps keep the level
        # before its dip)
        self.base_sigma = 0.0  # the window's robust sigma when the lowest level was set: a rise must clear its noise
        # (step, base, pre, sigma) as each was set: what a resumed engine reads the low as it stood at the resume from
        self.lows: deque[tuple[int, float, float, float]] = deque(maxlen=16)

    @abstractmethod
    def factor(self) -> float:
        """How many times its lowest level the current level must reach to be a rise."""

    def beyond(self, cur: float) -> str | None:
        """What else the level must pass to count as a rise ('' when nothing), or None when it does not pass."""
        return ""

    def check(self, x: float) -> tuple[Level, str] | None:
        c, cur, w = self.cfg, self.level(x), self.win
        if cur is None or len(w) < (w.maxlen or 1):  # a full window: past the warmup's first steps
            return None
        self.run += 1
        if (self.run - 1) % self.cfg.hold == 0:  # the lowest of medians every `hold` rows: the same minimum, cheaper
            m = w.median()
            self.sample(m, lambda: w.sigma(m))
        if not self.base > 0 or cur <= c.clear_frac * self.factor() * self.base:
            return None
        self.near = True
        # ... and clear of the noise the low was measured in (uniform noise's lowest window median, read over 100k
        # rows, is a third of its typical value: a level three times it is ordinary there)
        if (cur <= self.factor() * self.base or cur - self.base <= c.drop_sigma * self.base_sigma
                or (more := self.beyond(cur)) is None):
            return None
        if self.said("W"):
            return "W", ""
        return "W", f"rise to {_f(cur)} (x{_f(cur / self.base)} its lowest level {_f(self.base)}{more})"

    def sample(self, m: float, sigma: Callable[[], float]) -> None:
        """The window's median ``m`` sampled at this row (``sigma``: the window's robust sigma around it)."""
        if m < self.base:
            before = [v for _, v in list(self.samples)[-PRE_SAMPLES:]]
            scaled = self.pre * (m / self.base) if math.isfinite(self.base) and self.base > 0 else m
            self.base, self.pre, self.base_sigma = m, max(scaled, m, *before), sigma()
            self.lows.append((self.step, m, self.pre, self.base_sigma))
        self.samples.append((self.step, m))

    def carry(self, old: Detector, at: int) -> None:
        super().carry(old, at)
        if not isinstance(old, Rise):
            return
        # the samples the old engine took before the resume and before this one's first (a replay is bounded)
        first = min(at, self.samples[0][0]) if self.samples else at
        self.samples = deque([*(p for p in old.samples if p[0] < first), *self.samples], maxlen=PRE_RECENT)
        # the old engine's low as it stood at the resume (a lower one it set in the replaced rows is not the run's)
        prior = [low for low in old.lows if low[0] < at]
        if not prior:
            return
        low = min(prior, key=lambda low: low[1])  # the lowest: the last set before the resume
        _, base, pre, sigma = low
        if base < self.base:
            self.base, self.pre, self.base_sigma = base, pre, sigma
            self.lows.append(low)
        elif 0 < base <= self.base < math.inf:
            # the replay's own low, at or below the old one: the level before it followed down as a live engine
            # would (a replay that began inside a dip read that level from samples of the dip)
            self.pre = max(self.pre, pre * self.base / base)
            self.lows[-1] = (self.lows[-1][0], self.base, self.pre, self.base_sigma)  # (a later resume reads it)


class GradRise(Rise):
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


class EntropyRise(Rise):
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


