"""Is a run that stopped writing rows stalled, or idle? One judgement for the app, ``tail``, ``summary`` and the sweep.

A run not written for longer than its stall threshold (``stall_factor`` x its usual row interval or step time, at
least ``stall_min_s``: :func:`stall_after`) is **stalled** (a W alert) only where something says it should still be
writing: its StepLogger was not closed (``steptable.json``) and a file beside it was written within that threshold
(its verbose log keeps growing), or it has been quiet for no longer than ``stall_window_s`` (or twice its threshold).
Otherwise it is **idle since** its last write: a state, not an alert (a finished run of a trainer that marks no end;
W&B, trackio and TensorBoard files record no pid). A run whose StepLogger was closed has **ended**. A run whose usual
interval is unknown (fewer than ``stall_min_rows`` intervals) is idle after ``idle_unknown_s``, stalled only on
evidence.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from statistics import median
from typing import Any

from steptable.alerts.rules import Alert, AlertConfig, cell_float
from steptable.ingest.files.siblings import newest_sibling
from steptable.table import runinfo
from steptable.table.formatting import fmt_age as fmt_age
from steptable.table.formatting import fmt_auto as _f

#: the rows a run's usual interval is read from
INTERVAL_ROWS = 50
#: per-row step times (seconds a step took) of trainers whose rows carry no clock: verl and TinyZero, tinker, ours
STEP_TIME_KEYS = ("timing_s/step", "time/total", "perf/time_per_step", "t_step", "step_time", "time_per_step")
LIVE, STALLED, IDLE, ENDED = "live", "stalled", "idle", "ended"


@dataclass(frozen=True)
class Activity:
    """What a run is doing now: ``state`` (live / stalled / idle / ended), seconds since its last write (``gap``),
    when that was (``since``, unix time)."""

    state: str
    gap: float | None = None
    since: float | None = None

    def words(self) -> str:
        """``idle since 14:03`` (``idle since 2025-03-01 14:03`` a day on), ``stalled 7.5m``, else the state."""
        if self.state == IDLE and self.since is not None:
            return f"idle since {since_words(self.since, self.since + (self.gap or 0.0))}"
        if self.state == STALLED and self.gap is not None:
            from steptable.alerts.engine import fmt_age

            return f"stalled {fmt_age(self.gap)}"
        return self.state


def since_words(t: float, now: float) -> str:
    """Local time ``t`` as ``14:03``, with its date when it is not today's (of ``now``)."""
    lt, ln = time.localtime(t), time.localtime(now)
    return time.strftime("%H:%M" if lt[:3] == ln[:3] else "%Y-%m-%d %H:%M", lt)


def stall_after(interval: float | None, config: AlertConfig | None = None, longest: float = 0.0) -> float | None:
    """Seconds of quiet after which a run with ``interval`` seconds per row (``longest``: its longest recent step,
    doubled) counts as stopped; None when the interval is unknown."""
    c = config or AlertConfig()
    return None if interval is None else max(c.stall_factor * interval, 2 * longest, c.stall_min_s)


def judge(last: float | None, after: float | None, now: float, *, closed: bool = False,
          running_at: float | None = None, config: AlertConfig | None = None) -> Activity:
    """The state of a run last written at ``last`` with stall threshold ``after`` (None: unknown), at ``now``;
    ``closed``: its StepLogger was closed; ``running_at``: when something else said it still runs (a sibling file
    written, None: nothing)."""
    c = config or AlertConfig()
    if closed:
        return Activity(ENDED, None if last is None else now - last, last)
    if last is None:
        return Activity(LIVE)
    gap = now - last
    limit = c.idle_unknown_s if after is None else after
    if not gap > limit:
        return Activity(LIVE, gap, last)
    if running_at is not None and now - running_at <= limit:
        return Activity(STALLED, gap, last)
    if after is not None and gap <= max(c.stall_window_s, 2 * after):
        return Activity(STALLED, gap, last)
    return Activity(IDLE, gap, last)


def store_after(store: Any, config: AlertConfig | None = None) -> float | None:
    """The stall threshold of ``store``'s run (a RunStore, its lock not held): from its rows' clock (the median of
    the last intervals), else from a per-row step time (and twice its longest recent step: an evaluation every 50th
    step takes 20x the others); None with fewer than ``stall_min_rows`` of either."""
    c = config or AlertConfig()
    with store.lock:
        n = len(store)
        walls = [t for t in store.wall_times_between(max(0, n - INTERVAL_ROWS - 1), n) if math.isfinite(t)]
        key = next((k for k in STEP_TIME_KEYS if k in store.keys), None)
        cells = store.column_between(key, max(0, n - c.window), n) if key is not None else []
    dts = [b - a for a, b in itertools.pairwise(walls) if b > a]
    if len(dts) >= c.stall_min_rows:
        return stall_after(float(median(dts)), c)
    times = [x for v in cells if (x := cell_float(v)) is not None and math.isfinite(x) and x > 0]
    if len(times) >= c.stall_min_rows:
        return stall_after(float(median(times)), c, max(times))
    return None


def store_activity(store: Any, now: float, config: AlertConfig | None = None) -> Activity:
    """:func:`judge` for ``store``'s run: closed when its ``steptable.json`` says so; sibling files looked at only
    for a StepLogger run not closed that has been quiet past its threshold."""
    meta = getattr(store, "meta", None) or {}
    info = meta.get("runinfo") if isinstance(meta, dict) else None
    closed = runinfo.closed_at(info) is not None
    after = None if closed else store_after(store, config)
    act = judge(store.last_update, after, now, closed=closed, config=config)
    if act.state == IDLE and isinstance(info, dict):  # a StepLogger run never closed: does it still write elsewhere?
        act = judge(store.last_update, after, now, running_at=newest_sibling(store.path), config=config)
    return act


def clockless_gap(store: Any, now: float,
                  config: AlertConfig | None = None) -> tuple[float, float, str, int] | None:
    """(seconds since its file was written, its usual step time, the key read, its last step) for a run whose rows
    carry no clock (verl's file logger, tinker, a console log) when the file has been left alone for
    ``stall_factor`` x the run's own step time (and twice its longest recent step, at least ``stall_min_s``); None
    otherwise, and for rows with a clock (the engine's stall check reads those), a trainer_state.json (written at
    checkpoints only), a run without a step-time column, or one whose progress says it finished (tinker's
    done_frac or progress of 1). Such a run may also have ended: its trainer marks no end."""
    c = config or AlertConfig()
    with store.lock:
        n = len(store)
        last = store.last_update
        key = next((k for k in STEP_TIME_KEYS if k in store.keys), None)
        if not n or key is None or last is None or store.has_clock or store.kind == "trainer_state":
            return None
        times = [x for v in store.column_between(key, max(0, n - c.window), n)
                 if (x := cell_float(v)) is not None and math.isfinite(x) and x > 0]
        done = _finished(store, n, c.window)
        step = store.step_at(n - 1)
    if len(times) < c.stall_min_rows or done:
        return None
    # ... and twice its longest recent step: a validation and a checkpoint every 50th step take 20x the others
    per, gap = median(times), now - last
    return (gap, per, key, step) if gap > max(c.stall_factor * per, 2 * max(times), c.stall_min_s) else None


#: a run's share done (0..1), as tinker logs it: RL (progress/done_frac) and supervised (progress)
PROGRESS_KEYS = ("progress/done_frac", "progress")


def _finished(store: Any, n: int, window: int) -> bool:
    """Does the newest value of a progress key in the last ``window`` rows say the run is done (an eval row after
    the last step holds none)? A "progress" beyond 1 is some other count, not a share."""
    for key in PROGRESS_KEYS:
        if key in store.keys:
            for v in reversed(store.column_between(key, max(0, n - window), n)):
                if (x := cell_float(v)) is not None and math.isfinite(x):
                    if 0.999 <= x <= 1.0 + 1e-9:
                        return True
                    break
    return False


def clockless_stall(store: Any, now: float, config: AlertConfig | None = None) -> Alert | None:
    """:func:`clockless_gap` as the alert summary and ``tail --alerts-only`` give, at the run's last step."""
    found = clockless_gap(store, now, config)
    if found is None:
        return None
    gap, per, key, step = found
    msg = f"stalled: file untouched for {fmt_age(gap)} ({_f(gap / per)}x its {_f(per)}s/step of {key}; or it ended)"
    return Alert("W", step, "", "stall", msg)
