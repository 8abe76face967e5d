"""The detectors behind steptable.alerts.engine, one condition on one column each (point conditions here; level
comparisons in steptable.alerts.levels), and which column roles get which. Pure, stdlib only."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from steptable.alerts.levels import EntropyCollapse, EntropyRise, GradRise, RewardCollapse
from steptable.alerts.rules import SUMMED_KL, AlertConfig, Level
from steptable.alerts.window import Detector, Tail
from steptable.table.formatting import fmt_auto as _f


class NonFinite(Detector):
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

    def carry(self, old: Detector, at: int) -> None:
        # a non-finite value in the rows the replay skips: old knows the finite run began after it
        if isinstance(old, NonFinite) and old.run and self.run and self.since < old.since < at:
            self.since = old.since


def _z(z: float) -> str:
    return "z>999" if z > 999 else f"z={z:.0f}"


class Spike(Detector):
    """One row far above the window's median (robust z past ``spike_z``) and far past the column's own tail: z
    ``spike_tail`` times the largest the column has shown before and come back from (:class:`Tail`; a heavy-tailed
    loss's routine excursions are no news, a x20 one is). Not on a column that never moved (a loss exactly 0 so
    far: no noise to measure against; its first step is where its signal starts), nor while a quarter of the window
    or more is zeros from before it first moved (``run``: rows since then): a GRPO loss 0 while every group fails,
    then ordinary values, is no spike against the zeros; two leading zeros must not blind the test for a window's
    length (an explosion in those rows went unsaid). (From a plateau off 0, ``min_rel`` of its level guards the
    test.)"""

    kind = "spike"

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.tail = Tail()

    def min_rel(self) -> float:
        return self.cfg.spike_min_rel

    def check(self, x: float) -> tuple[Level, str] | None:
        out: tuple[Level, str] | None = None
        c, w = self.cfg, self.win
        moved = 4 * (len(w) - self.run) <= len(w)  # (zeros from before the first move: a quarter of it at most)
        if len(w) >= c.min_history and moved:
            m = w.median()
            t = self.tail.z(w, x, m)
            # (the tail's test before the sigma's: the cheap one first, both pure)
            if (x - m > self.min_rel() * abs(m) and self.tail.news(t, c.spike_tail)
                    and (z := (x - m) / w.sigma(m, spread=True)) > c.spike_z):
                out = "W", f"spike {_f(x)} ({_z(z)} vs median {_f(m)} over {len(w)})"
            else:
                self.tail.note(t, self.step)
        if w and x != w[-1]:  # after the test: a spike's own step is not the column's resolution
            if w.gap == math.inf and w[-1] != 0:
                self.run = w.maxlen or 0
            w.gap = min(w.gap, abs(x - w[-1]))
        w.append(x)
        if w.gap < math.inf and self.run < len(w):
            self.run += 1
        return out

    def carry(self, old: Detector, at: int) -> None:
        if isinstance(old, Spike):
            self.tail.carry(old.tail, at)


class GradSpike(Spike):
    def min_rel(self) -> float:
        return self.cfg.grad_spike_min_rel


class KLBlowup(Detector):
    """A per-token KL past the absolute levels, or any KL jumping ``kl_jump`` times its window's median with a
    robust z past ``spike_z`` and past its own tail (as :class:`Spike`)."""

    kind = "kl_blowup"

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        super().__init__(cfg, key)
        self.levels = key not in SUMMED_KL  # the absolute KL levels apply (a per-token KL)
        self.tail = Tail()

    def check(self, x: float) -> tuple[Level, str] | None:
        c, w = self.cfg, self.win
        out: tuple[Level, str] | None = None
        m = w.median() if len(w) >= c.min_history and x > c.kl_jump_min else 0.0  # 0: no jump test
        jump = False
        if m > 0:
            t = self.tail.z(w, x, m)
            jump = (x > c.kl_jump * m and self.tail.news(t, c.spike_tail)
                    and (x - m) / w.sigma(m, spread=True) > c.spike_z)
            if not jump:
                self.tail.note(t, self.step)
        if self.levels and x > c.kl_error:
            out = "E", "" if self.said("E") else f"blow-up {_f(x)} (>{_f(c.kl_error)})"
        elif jump:
            out = "E" if x > c.kl_jump_error * m else "W", f"blow-up {_f(x)} (x{_f(x / m)} vs median {_f(m)})"
        elif self.levels and x > c.kl_warn:
            out = "W", "" if self.said("W") else f"blow-up {_f(x)} (>{_f(c.kl_warn)})"
        self.near = (self.levels and x > c.clear_frac * c.kl_warn) or x > c.clear_frac * c.kl_jump * m > 0
        w.append(x)
        return out

    def carry(self, old: Detector, at: int) -> None:
        if isinstance(old, KLBlowup):
            self.tail.carry(old.tail, at)


class Saturation(Detector):
    kind = "saturation"

    def check(self, x: float) -> tuple[Level, str] | None:
        self.run = self.run + 1 if x > self.cfg.sat_level else 0
        self.near = x > self.cfg.clear_frac * self.cfg.sat_level
        if self.run == 1:
            self.since = self.step
        if self.run >= self.cfg.sat_rows:
            if self.said("W"):
                return "W", ""
            return "W", f"saturated {_f(x)} (>{_f(self.cfg.sat_level)} for {self.run} rows, since step {self.since})"
        return None


class Flat(Detector):
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
            return "W", "" if self.said("W") else self.message(x)
        return None

    def message(self, x: float) -> str:
        """One text for the episode in every view (the streaming tail's, the summary's, the app's): the value and the
        step it began at; how long it lasted is the table's to show, not a count that differs by when it was read."""
        return f"flat at {_f(x)} since step {self.since} (no learning signal?)"


# Every quantity a step computes from the batch is broken when it is NaN or inf: a reward function that returned
# NaN, a KL past float range, an entropy of NaN logits. (Saturation ratios are counts, never non-finite.)
DETECTORS: Mapping[str, tuple[type[Detector], ...]] = {
    "loss": (NonFinite, Spike, Flat),
    "grad_norm": (NonFinite, GradSpike, GradRise, Flat),
    "reward": (NonFinite, RewardCollapse, Flat),
    "entropy": (NonFinite, EntropyCollapse, EntropyRise),
    "kl": (NonFinite, KLBlowup),
    "saturation": (Saturation,),
}
