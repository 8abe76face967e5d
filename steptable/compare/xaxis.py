"""The x axis a comparison aligns runs on: the step, or any monotone measure of progress. Pure.

``x_values(run, name)`` gives one x per stored row, non-decreasing, so a window of x is a slice of rows:

- ``step``: the step index.
- ``time``: the run's ``_runtime`` (W&B's seconds since start), else its own clock (``RunStore.wall_times``) from its
  first row, where the gap before each resume counts as one median step (downtime is not progress).
- ``tokens`` / ``samples``: the first key of ``X_KEYS[name]`` the run logs (TRL's cumulative ``num_tokens``, verl's
  per-step ``perf/total_num_tokens``, HF's ``num_input_tokens_seen``...); any other name: that key itself.

A key is *cumulative* when its successive finite values rise at least half the time and fall at most once per
resume or per hundred pairs (a counter, a runtime); else it is a per-step amount (tokens of this step's batch,
constant or not), which becomes its running sum (a missing amount adds nothing). ``KEY:sum`` / ``KEY:cum`` say which
it is. A cumulative counter that falls (restarted at 0 by a resume that did not restore it) goes on from where it
was, so a resume never counts progress twice: the store has already dropped the rows a resume replaced. Rows before
a key's first value get ``-inf`` (below every window); a gap later takes the value before it.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, pairwise
from typing import Any, Literal, Protocol

Mode = Literal["step", "cum", "sum", "clock"]

#: what the named axes read, in order of preference
X_KEYS: dict[str, tuple[str, ...]] = {
    "tokens": ("num_tokens", "train/num_tokens", "num_input_tokens_seen", "train/num_input_tokens_seen",
               "perf/total_num_tokens", "tokens", "total_tokens", "n_tokens"),
    "samples": ("samples", "num_samples", "train/samples", "total_samples", "episodes", "num_episodes",
                "time/episodes", "train/episodes"),
    "time": ("_runtime", "runtime", "train/runtime"),
}
X_NAMES = ("step", *X_KEYS)


class XRun(Protocol):
    """What the x axis reads of a run (``RunStore`` is one)."""

    @property
    def keys(self) -> list[str]: ...
    @property
    def steps(self) -> Sequence[int]: ...
    @property
    def wall_times(self) -> Sequence[float]: ...
    @property
    def resumes(self) -> list[int]: ...

    def column(self, key: str) -> Sequence[Any]: ...
    def column_between(self, key: str, start: int = 0, stop: int | None = None) -> Sequence[Any]: ...
    def steps_between(self, start: int = 0, stop: int | None = None) -> Sequence[int]: ...
    def wall_times_between(self, start: int = 0, stop: int | None = None) -> Sequence[float]: ...
    def is_numeric(self, key: str) -> bool: ...


class XError(ValueError):
    """A run has no such x axis (its text says which key or clock is missing)."""


@dataclass
class XAxis:
    """One run's x per row (non-decreasing; -inf before its first value), where it came from, and what
    :meth:`extend` needs to add rows the run appended since (the running total, the last counter value, the last
    clock reading and the typical step time)."""

    name: str  # as asked: "tokens"
    key: str | None  # the key read (None: the step index or the file's clock)
    mode: Mode
    values: array[float] = field(default_factory=lambda: array("d"))
    total: float = -math.inf
    prev: float = math.nan
    step_s: float = 0.0  # clock mode: the time a resume's gap counts as (the median step time when built)

    @property
    def first(self) -> float | None:
        """The first finite x (None: no row has one)."""
        i = bisect_right(self.values, -math.inf)
        return self.values[i] if i < len(self.values) and math.isfinite(self.values[i]) else None

    @property
    def last(self) -> float | None:
        v = self.values[-1] if self.values else math.nan
        return v if math.isfinite(v) else None

    def rows(self, lo: float, hi: float) -> tuple[int, int]:
        """The rows [i, j) whose x lies in [lo, hi], ends included."""
        return bisect_left(self.values, lo), bisect_right(self.values, hi)

    def extend(self, run: XRun) -> None:
        """Add the x of the rows ``run`` appended since (rows ``len(values):``); the cost is in those rows only."""
        start = len(self.values)
        if self.mode == "step":
            self.values.extend(array("d", run.steps_between(start)))
        elif self.mode == "clock":
            self._extend_clock(run, start)
        else:
            col = run.column_between(self.key or "", start)
            if self.mode == "sum":
                self.values.extend(accumulate((v if math.isfinite(v) and v > 0 else 0.0 for v in col),
                                              initial=max(self.total, 0.0)))
                del self.values[start]  # (the initial value)
                self.total = self.values[-1] if self.values else 0.0
            else:
                self._extend_running(col)

    def _extend_running(self, col: Sequence[float]) -> None:
        total, prev = self.total, self.prev
        out = array("d", [0.0]) * len(col)
        for i, v in enumerate(col):
            if math.isfinite(v):
                if prev != prev:
                    total = v
                else:  # a fall is a counter restarted from 0: what it counts now came after the last value
                    total += v - prev if v >= prev else max(v, 0.0)
                prev = v
            out[i] = total
        self.values.extend(out)
        self.total, self.prev = total, prev

    def _extend_clock(self, run: XRun, start: int) -> None:
        walls = run.wall_times_between(max(0, start - 1))
        steps = run.steps_between(max(0, start - 1))
        if not all(map(math.isfinite, walls)):
            raise XError("no runtime key (_runtime) and no clock of its own on every row, to use as x=time")
        dts = [b - a for a, b in pairwise(walls)]
        if start == 0:
            typical = sorted(d for d in dts if d > 0)
            self.step_s = typical[len(typical) // 2] if typical else 0.0
            if walls:
                self.values.append(0.0)
        restarts = set(run.resumes)
        inc = (self.step_s if steps[i + 1] in restarts else max(d, 0.0) for i, d in enumerate(dts))
        base = self.values[-1] if self.values else 0.0
        self.values.extend(accumulate(inc, initial=base))
        del self.values[len(self.values) - len(dts) - 1]  # (the initial value)


def x_values(run: XRun, name: str) -> XAxis:
    """The x axis ``name`` of ``run`` (see the module doc); XError when the run has nothing to read it from."""
    forced: Mode | None = None
    base = name
    if name.endswith((":sum", ":cum")):
        base, forced = name[:-4], "sum" if name.endswith(":sum") else "cum"
    if base == "step" and forced is None:
        ax = XAxis(name, None, "step")
    else:
        keys = X_KEYS.get(base, (base,))
        key = next((k for k in keys if k in run.keys and run.is_numeric(k)), None)
        if key is None:
            if base != "time" or forced is not None:
                said = f"any of {', '.join(keys)}" if len(keys) > 1 else repr(base)
                what = " or its own clock" if base == "time" else ""
                raise XError(f"no numeric {said}{what} to use as x")
            ax = XAxis(name, None, "clock")
        else:
            mode = forced or ("cum" if _cumulative(run.column(key), len(run.resumes)) else "sum")
            ax = XAxis(name, key, mode)
    ax.extend(run)
    return ax


def _cumulative(col: Sequence[float], resumes: int) -> bool:
    ups = downs = pairs = 0
    prev = math.nan
    for v in col:
        if math.isfinite(v):
            if prev == prev:
                pairs += 1
                ups += v > prev
                downs += v < prev
            prev = v
    return pairs > 0 and 2 * ups >= pairs and downs <= max(resumes, pairs // 100)
