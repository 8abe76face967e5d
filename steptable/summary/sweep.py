"""A sweep of runs, each known by its newest rows: per-run digests, their state, the sweep's one status line, and the
best and worst runs by a metric. Pure (the caller reads the files: steptable.ingest.files.runindex).

A :class:`RunDigest` is made from a store of a run's last rows (its tail) and the file's size: the last step, when
the run was last written, its usual row interval, how its StepLogger ended it (``steptable.json``), and per numeric
key the newest value (NaN or inf where the run logged that last), then the mean, the lowest and the highest of the
finite values of the rows read (the *window*: at most ``WINDOW_ROWS``, the newest). It holds no rows, so a list of
thousands of runs stays small.

States (:func:`run_state`): ``crashed`` (its StepLogger was closed by an exception), ``ended`` (closed normally or
by an interruption), ``stalled`` / ``idle`` as steptable.alerts.activity judges a run quiet past its threshold (the
alert rules' numbers), else ``live``.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import translate
from typing import Any

from steptable.alerts.activity import judge, stall_after
from steptable.alerts.engine import STEP_TIME_KEYS, earlier_end_alerts, end_alert
from steptable.alerts.history import scan
from steptable.alerts.rules import AlertConfig, cell_float
from steptable.ingest.files.siblings import newest_sibling
from steptable.ingest.parsed import counter
from steptable.schemas import META_KEYS
from steptable.summary.keycols import SKIP_KEYS
from steptable.table.runinfo import closed_at, ended_by

#: rows of the tail the window mean spans (the newest)
WINDOW_ROWS = 100
#: the order states are told in
STATES = ("live", "stalled", "idle", "ended", "crashed")
INTERRUPTED = "interrupted"
#: the metrics a sweep is ranked and listed by when none is named, the first ones a run logs (score, reward, loss):
#: ``train/reward`` is TRL's reward as transformers' W&B, trackio and TensorBoard callbacks name it;
#: ``eval/mean_reward`` and ``rollout/ep_rew_mean`` stable-baselines3's evaluation and training episode return
RANK_KEYS = ("eval/score", "score", "reward/mean", "reward", "train/reward", "env/all/reward/total", "rewards/mean",
             "eval/mean_reward", "rollout/ep_rew_mean", "loss", "train/loss", "kl", "entropy")


@dataclass
class RunDigest:
    """What the run list and ``summary --top`` know of one run without its history (see the module docstring)."""

    run: str
    arm: str
    kind: str
    size: int
    rows: int  # rows in the file: exact when ``rows_exact``, else the rows read scaled by the bytes they span
    rows_exact: bool
    last_step: int | None
    updated: float | None  # unix time of the newest row (its clock) or of the file's last write
    interval: float | None  # the run's usual seconds per row, when known
    end: str | None  # how its StepLogger ended it: None while it runs, "" for a normal end, "interrupted", "Error"
    window: int  # rows the means span
    last: dict[str, float] = field(default_factory=dict)
    mean: dict[str, float] = field(default_factory=dict)
    low: dict[str, float] = field(default_factory=dict)
    high: dict[str, float] = field(default_factory=dict)
    errors: int = 0  # error alerts in the rows read
    warnings: int = 0
    first_alerts: list[str] = field(default_factory=list)  # the first few alert lines
    bad: int = 0  # bad lines in the rows read
    running_at: float | None = None  # a StepLogger run not closed: when a file beside it was last written

    @property
    def keys(self) -> list[str]:
        return list(self.last)


def _interval(store: Any, n: int) -> float | None:
    walls = [t for t in store.wall_times_between(max(0, n - WINDOW_ROWS - 1), n) if math.isfinite(t)]
    dts = [b - a for a, b in itertools.pairwise(walls) if b > a]
    if len(dts) >= 5:
        return float(statistics.median(dts))
    key = next((k for k in STEP_TIME_KEYS if k in store.keys), None)  # a per-row step time (verl, tinker)
    if key is not None:
        times = [x for v in store.column_between(key, max(0, n - WINDOW_ROWS), n)
                 if (x := cell_float(v)) is not None and math.isfinite(x) and x > 0]
        if len(times) >= 5:
            return float(statistics.median(times))
    return None


def _newest(store: Any, key: str, col: Sequence[float], start: int) -> float | None:
    """The newest value of ``key`` the rows ``col`` (from row ``start``) hold: NaN or inf where the run logged that
    last; None where none of them holds the key."""
    for i in range(len(col) - 1, -1, -1):
        v = col[i]
        if not math.isnan(v) or store.value(start + i, key) is not None:  # (a NaN cell: absent, or logged so)
            return float(v)
    return None


def digest(store: Any, size: int, *, alerts: bool = True, config: AlertConfig | None = None) -> RunDigest:
    """The digest of a run from ``store``, its newest rows (``store.meta["preview_offset"]``: where in a file of
    ``size`` bytes they start; 0 or absent: the whole file). ``alerts``: run the detectors over the rows read (a
    crash's alert is counted either way)."""
    with store.lock:
        n = len(store)
        start = max(0, n - WINDOW_ROWS)
        last: dict[str, float] = {}
        mean: dict[str, float] = {}
        low: dict[str, float] = {}
        high: dict[str, float] = {}
        cols: dict[str, Sequence[Any]] = {}
        for key in store.keys:
            if not store.is_numeric(key) or key == store.step_key:
                continue
            col = store.column_between(key, start, n)
            cols[key] = col
            newest = _newest(store, key, col, start)
            if newest is None:
                continue
            last[key] = newest
            vals = [v for v in col if math.isfinite(v)]
            if vals:
                mean[key], low[key], high[key] = _mean(vals), min(vals), max(vals)
        offset = int(store.meta.get("preview_offset", 0) or 0)
        read = size - offset
        rows = n if offset <= 0 or read <= 0 else round(n * size / read)
        info = store.meta.get("runinfo")
        end = ended_by(info) or ("" if closed_at(info) is not None else None)
        out = RunDigest(
            run=store.run, arm=store.arm or store.run, kind=store.kind, size=size, rows=rows, rows_exact=offset <= 0,
            last_step=store.step_at(n - 1) if n else None, updated=store.last_update, interval=_interval(store, n),
            end=end, window=n - start, last=last, mean=mean, low=low, high=high, bad=store.bad_count,
            running_at=newest_sibling(store.path) if isinstance(info, dict) and end is None else None,
        )
        found = scan(store.steps_between(start, n), cols, None, config) if alerts and n else []
        found = [*earlier_end_alerts(info), *found]  # (how the process before a resume ended)
        if (ea := end_alert(info, out.last_step or 0)) is not None:
            found.append(ea)
        if found:
            out.errors = sum(1 for a in found if a.level == "E")
            out.warnings = len(found) - out.errors
            out.first_alerts = [a.message_line() for a in found[:3]]
    return out


def direction(store: Any, key: str) -> str | None:
    """``higher`` / ``lower``: which way ``key`` is better by the schema ``store``'s run is shown with; None when it
    does not say."""
    from steptable.schemafiles.resolve import run_schema

    schema = run_schema(store)
    col = schema.col(key) or next((c for c in schema.cols if key in c.aliases), None)
    rule = schema.rule(key)
    return (col.better if col is not None and col.better else rule.better if rule is not None else None) or None


def run_state(d: RunDigest, now: float, config: AlertConfig | None = None) -> str:
    """``live`` / ``stalled`` / ``idle`` / ``ended`` / ``crashed`` (see the module docstring)."""
    if d.end is not None:
        return "ended" if d.end in ("", INTERRUPTED) else "crashed"
    return judge(d.updated, stall_after(d.interval, config), now, running_at=d.running_at, config=config).state


def sweep_line(digests: Iterable[RunDigest], now: float,
               judge: Callable[[RunDigest, float], str] = run_state) -> str:
    """``200 runs: 12 live, 180 ended, 3 crashed, 5 idle; 4 with errors`` (states with no run left out); ``judge``:
    each run's state (``run_state``, or a memo of it)."""
    ds = list(digests)
    counts = dict.fromkeys(STATES, 0)
    for d in ds:
        counts[judge(d, now)] += 1
    parts = [f"{counts[s]} {s}" for s in STATES if counts[s]]
    errs = sum(1 for d in ds if d.errors)
    warns = sum(1 for d in ds if d.warnings and not d.errors)
    tail = "; ".join(x for x in (f"{errs} with errors" if errs else "", f"{warns} with warnings" if warns else "") if x)
    head = f"{len(ds)} run{'s' if len(ds) != 1 else ''}" + (f": {', '.join(parts)}" if parts else "")
    return f"{head}; {tail}" if tail else head


def best_value(d: RunDigest, key: str, stat: str, higher: bool) -> float | None:
    """The value of ``key`` a run is ranked by: ``last``, ``mean`` (the window) or ``best`` (of the rows read); None
    where the run has no value of it. Where its newest value is NaN or inf, that value whatever ``stat``: a run that
    diverged is judged by where it ended, not by the finite rows before it."""
    last = d.last.get(key)
    if last is None or not math.isfinite(last):
        return last
    table = {"last": d.last, "mean": d.mean}.get(stat, d.high if higher else d.low)
    return table.get(key)


def ranked(digests: Iterable[RunDigest], key: str, stat: str, higher: bool) -> list[tuple[RunDigest, float]]:
    """The runs whose ``key`` has a finite value to rank by (:func:`best_value`), best first."""
    have = [(d, v) for d in digests if (v := best_value(d, key, stat, higher)) is not None and math.isfinite(v)]
    have.sort(key=lambda dv: -dv[1] if higher else dv[1])
    return have


def matcher(pattern: str) -> Callable[[str], bool]:
    """The test of a filter word against run names: a glob when it has ``*?[``, else a substring (case-insensitive);
    compiled once for a list of names."""
    pattern = pattern.lower()
    if any(ch in pattern for ch in "*?["):
        rx = re.compile(translate(pattern), re.DOTALL)
        return lambda name: rx.match(name.lower()) is not None
    return lambda name: pattern in name.lower()


def matches(name: str, pattern: str) -> bool:
    """``name`` against one filter word (see :func:`matcher`)."""
    return matcher(pattern)(name)


def config_matches(config: Mapping[str, Any], key: str, want: str) -> bool:
    """``lr=1e-5`` against a run's config: the key (a dotted key or its last part) and the value as text or number."""
    hits = [v for k, v in config.items() if k == key or k.rsplit(".", 1)[-1] == key]
    for v in hits:
        if str(v) == want or matches(str(v), want):
            return True
        try:
            if float(v) == float(want):
                return True
        except (TypeError, ValueError):
            continue
    return False


def default_keys(keys: Sequence[str], most: int = 1) -> list[str]:
    """The first ``most`` of ``RANK_KEYS`` among ``keys``, else the first keys that are metrics (not an epoch or
    another counter, a clock or a run's name: Lightning logs ``epoch`` first)."""
    have = dict.fromkeys(keys)
    return [k for k in RANK_KEYS if k in have][:most] or [
        k for k in have if not counter(k) and k not in SKIP_KEYS and k not in META_KEYS][:most]


def _mean(vals: list[float]) -> float:
    """The mean of finite values, past whose sum the largest float lies too (a diverged run's 1e308s)."""
    try:
        return math.fsum(vals) / len(vals)
    except OverflowError:
        return math.fsum(v / len(vals) for v in vals)  # (each term at most max / n: no partial sum overflows)
