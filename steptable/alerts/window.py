"""The base every alert detector builds on: a window of a column's recent finite values with robust statistics,
the once-per-episode latch, and the Detector protocol (fed values in order, fires once per episode). Pure."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right, insort
from collections import deque
from collections.abc import Iterable

from steptable.alerts.rules import Alert, AlertConfig, Level

MAD_SIGMA = 1.4826  # MAD -> sigma for normal noise


def sorted_median(s: list[float]) -> float:
    """The median of the sorted list ``s`` (the mean of the two middle values of an even count)."""
    n = len(s)
    if not n:
        raise ValueError("the median of an empty window")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def robust_sigma(values: Iterable[float], ordered: list[float], m: float, gap: float, spread: bool) -> float:
    """:meth:`Window.sigma` of a window holding ``values`` (in order of arrival; ``ordered`` the same sorted) whose
    column's resolution is ``gap``."""
    if not ordered:
        raise ValueError("the sigma of an empty window")
    mad = _mad(ordered, m) if m - m == 0 else sorted_median(sorted([abs(x - m) for x in ordered]))
    if mad == 0:  # over half the window sits on one value (a two-level signal): mean deviation
        devs = [abs(x - m) for x in values]  # (summed in the order of arrival)
        mad = 0.8453 * sum(devs) / len(devs)  # sigma = 1.2533 x mean deviation on normal data: 1.2533 / 1.4826
    upper = 0.0
    n = len(ordered)
    if spread and n >= 10:
        upper = (ordered[round(0.9 * (n - 1))] - m) / 1.2816
    res = gap / 2 if gap < math.inf else 0.0
    return max(MAD_SIGMA * mad, upper, res, 1e-9 * max(1.0, abs(m)))


def _mad(s: list[float], m: float) -> float:
    """The median of |x - m| over the sorted list ``s`` (m finite), without computing each: those at or below m,
    m - x, rise from m down; those above, x - m, rise from m up; the middle of the two rising runs together is
    found by bisection on how many come from the first."""
    h = bisect_right(s, m)
    p, q = h, len(s) - h
    k = (p + q - 1) // 2  # the lower middle
    lo, hi = max(0, k + 1 - q), min(k + 1, p)
    while lo < hi:  # i from below and k + 1 - i from above make the k + 1 smallest
        i = (lo + hi) >> 1
        if m - s[h - 1 - i] < s[h + k - i] - m:
            lo = i + 1
        else:
            hi = i
    i, j = lo, k + 1 - lo
    below = m - s[h - i] if i else -math.inf
    above = s[h + j - 1] - m if j else -math.inf
    kth = below if below > above else above
    if (p + q) % 2:
        return kth
    below = m - s[h - 1 - i] if i < p else math.inf
    above = s[h + j] - m if j < q else math.inf
    return (kth + (below if below < above else above)) / 2


class Window(deque[float]):
    """The last ``maxlen`` finite values with robust statistics, kept in order of arrival and, beside, sorted
    (``ordered``: an insert and a delete by bisection a value, so the median is read, not sorted, at every row)."""

    gap = math.inf  # the column's resolution: smallest non-zero step between consecutive values (spike tests)

    def __init__(self, values: Iterable[float] = (), maxlen: int | None = None) -> None:
        super().__init__((), maxlen)
        self.ordered: list[float] = []
        for x in values:
            self.append(x)

    def append(self, x: float) -> None:
        s = self.ordered
        if len(s) == self.maxlen:
            del s[bisect_left(s, self[0])]
        super().append(x)
        insort(s, x)

    def shift(self, values: list[float]) -> None:
        """As ``append`` of each of ``values`` (the last ``maxlen`` of them, when ``maxlen`` or more) in one go."""
        deque.extend(self, values)
        self.ordered = sorted(self)

    def median(self) -> float:
        return sorted_median(self.ordered)

    def low_median(self) -> float:
        """The lower of the two middle values (the middle one of an odd count)."""
        return self.ordered[(len(self.ordered) - 1) // 2]

    def sigma(self, m: float, spread: bool = False) -> float:
        """Robust sigma around ``m`` (1.4826 MAD), floored so a constant window does not divide by zero. With
        ``spread`` (the upward spike tests), the distance from ``m`` up to the 90th percentile / 1.2816 where that is
        wider: both are sigma on normal noise, but a window near half of whose values sit on one value (a loss that
        is exactly 0 on degenerate batches, a KL frozen at 0 during warmup) has a MAD near 0 that makes ordinary
        values read as spikes. Never below half the column's resolution (a loss rounded to 4 digits reads 0, .0001,
        .0002: a step of .0001 is no spike however still the rest of the window)."""
        return robust_sigma(self, self.ordered, m, self.gap, spread)


class Tail:
    """A column's own tail: the largest excursion (its distance from the window's median, up or down, in the
    column's noise scale) it has shown and come back from, over the whole run. A spike is news only when it is
    ``factor`` times that: on heavy-tailed noise (Student-t, df 3) a 50-row window's robust z reaches 10-30 every
    few thousand rows, each the column's ordinary weather; a loss x20 is 200+, several times anything before it.
    Rows of an episode that was said are not part of the tail (a spike that repeats is news again). The scale is
    the window's sigma sampled every ``REFRESH`` rows and smoothed (a 50-row window's sigma wanders by a third
    from one window to the next: a tail read against each would be as much the scale's noise as the column's)."""

    REFRESH = 10
    SMOOTH = 0.1  # the weight of each new sample of the scale (about ten samples, a hundred rows, remembered)

    __slots__ = ("age", "at", "scale", "top")

    def __init__(self) -> None:
        self.top = 0.0  # the largest excursion seen (0: none yet)
        self.at = 0  # the step it was seen at
        self.scale = 0.0  # the smoothed sigma
        self.age = 0  # rows read

    def z(self, win: Window, x: float, m: float) -> float:
        """The row's distance from ``m``, either way, in the smoothed scale (sampled first when due): heavy-tailed
        noise shows its tail below the median as well as above."""
        if self.age % self.REFRESH == 0:
            self.scale = self.smoothed(self.scale, win.sigma(m, spread=True), self.age)
        self.age += 1
        return abs(x - m) / self.scale

    @classmethod
    def smoothed(cls, scale: float, s: float, age: int) -> float:
        """The scale after a sample ``s`` taken when ``age`` rows were read (the first sample is the scale)."""
        return s if age == 0 else scale + cls.SMOOTH * (s - scale)

    def news(self, z: float, factor: float) -> bool:
        """Is ``z`` (of :meth:`z`) past ``factor`` times the column's tail?"""
        return z > factor * self.top

    def note(self, z: float, step: int) -> None:
        """An ordinary row's z: the tail grows to it."""
        if z > self.top:
            self.top, self.at = z, step

    def carry(self, old: Tail, at: int) -> None:
        """The tail an engine replaced at a resume at step ``at`` had seen before it (a replay is bounded)."""
        if old.at < at and old.top > self.top:
            self.top, self.at = old.top, old.at


def still(sigma: float, m: float) -> bool:
    """``sigma`` (of a window with median ``m``) is at its floor: the window never varied, there is no noise to
    measure a drop against (a reward exactly 0 or 1.0 so far)."""
    return sigma <= 1e-9 * max(1.0, abs(m))


class Latch:
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


class Detector(ABC):
    """One condition on one key. ``check`` sees every finite value in order (non-finite too if ``nonfinite``)."""

    kind = ""
    nonfinite = False

    def __init__(self, cfg: AlertConfig, key: str) -> None:
        self.cfg, self.key, self.latch = cfg, key, Latch()
        self.win = Window(maxlen=max(1, cfg.window))
        self.run = 0
        self.step = 0  # the step of the value being checked
        self.since = 0  # the step the current run of rows (saturated, flat) began at
        self.near = False  # set by check: this row is within clear_frac of the threshold (not clear for re-arming)

    def feed(self, step: int, x: float) -> Alert | None:
        self.step = step
        self.near = False
        found = self.check(x)
        if found is None:
            if self.latch.level is not None:  # (outside an episode the latch has no clear rows to count)
                self.latch.step(None, self.cfg.rearm, self.near)
            return None
        if self.latch.step(found[0], self.cfg.rearm, self.near):
            return Alert(found[0], step, self.key, self.kind, found[1])
        return None

    def said(self, level: Level) -> bool:
        """An episode at ``level`` or worse was said and goes on: the latch will not fire on this row, so its text
        is not needed (a run saturated for 100k rows would otherwise format an alert text at every one)."""
        return self.latch.level == "E" or self.latch.level == level

    @abstractmethod
    def check(self, x: float) -> tuple[Level, str] | None:
        """The alert level and text this value raises, or None (sets ``near`` when close to the threshold)."""

    def carry(self, old: Detector, at: int) -> None:
        """After a replay of the rows held before a resume at step ``at``: take from ``old`` (the engine's detector
        this one replaces) the run-long values it set before ``at`` that the bounded replay did not reach. Nothing
        to take by default."""
        return None


