"""A comparison of arms on a window of x: per arm and metric the window mean and its interval, per arm the
difference from the baseline arm. Pure (reads runs' columns; the statistics are :mod:`steptable.compare.stats`).

The window. Every run compared (each seed of each arm) spans x from its first to its last value; the *common
range* is [the largest first x, the smallest last x]. Default window: the last 10% of the common range, ends
included, so every arm is read at the same progress. A fraction ``f`` (``0.25``, ``25%``) takes the last ``f`` of
the common range; ``A:B`` is a range of x (``A:`` up to the common end, ``:B`` from the common start). A window some
run has not reached (its x ends before B, or starts after A) is an error naming the runs, never a shorter
window. The window names the run whose end is the common range's where another run goes further. A common range
that is empty (a run ends before another starts) is an error too.

Values: a run's rows with x in the window; NaN, inf and absent cells are left out of the statistics and counted
(``n_missing``); ``n_points`` counts the finite values used, over the arm's seeds. A seed without one finite value
in the window does not count as a seed of that metric.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from fnmatch import fnmatchcase
from typing import Any

from steptable.alerts.rules import cell_frac
from steptable.compare.family import holm
from steptable.compare.groups import Member
from steptable.compare.stats import (
    Difference,
    Spread,
    mean,
    one_of_seeds,
    pooled_diff,
    pooled_seeds,
    seeds_spread,
    single_spread,
    welch_diff,
)
from steptable.compare.xaxis import XAxis, XError, XRun, x_values
from steptable.ingest.parsed import counter
from steptable.table.cells import first_few
from steptable.table.formatting import fmt_auto

WINDOW_SHARE = 0.1
#: keys never compared (clocks, bookkeeping); nor is a step or a counter in any namespace (:func:`counter`: the
#: epoch, HF's ``train/global_step``, SB3's ``time/total_timesteps``), a function of the step itself
NOT_METRICS = frozenset({"ts", "time", "timestamp", "_timestamp", "wall_time", "_runtime", "run", "arm"})


class CompareError(ValueError):
    """A comparison that cannot be made as asked (its text says why, naming the arm)."""


@dataclass(frozen=True)
class Arm:
    """One arm compared: its name, its seeds (runs) and each seed's x axis."""

    name: str
    members: tuple[Member, ...]
    axes: tuple[XAxis, ...]


@dataclass(frozen=True)
class Window:
    lo: float
    hi: float
    common: tuple[float, float]
    how: str  # "last 10%", "x 100:200"
    #: "RUN ends at X": the run whose last x ends the common range, where another run goes further ("" where all
    #: end together): one crashed run of a sweep puts every arm's window early, and the header says which
    ended_by: str = ""


@dataclass(frozen=True)
class Result:
    """One (arm, metric) of a comparison; the JSONL contract is :meth:`record`."""

    arm: str
    metric: str
    x: str
    x_from: float
    x_to: float
    n_seeds: int
    n_points: int
    n_missing: int
    mean: float | None
    lo: float | None
    hi: float | None
    baseline: str
    delta: float | None
    delta_lo: float | None
    delta_hi: float | None
    # "seeds" (t over the seeds' means), "pooled" (one seed, the seed spread of the arms of several), "batches" (one
    # seed where every arm has one: batch means); "drift": one seed whose batch means drift, so no interval (lo/hi
    # null); None: no interval for another reason (too few values)
    ci: str | None
    #: "better" / "worse" (by the metric's direction), "differs" (no direction): the difference is apart from 0
    #: beyond chance once the metric's other arms are taken into account (Holm's procedure over them,
    #: :mod:`steptable.compare.family`; with one other arm, its interval excludes 0); None: not called
    verdict: str | None

    def record(self) -> dict[str, Any]:
        """The JSONL object: every field, None (null) where undefined."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


def make_arms(groups: Mapping[str, Sequence[Member]], x: str) -> list[Arm]:
    """Each group with its runs' x axes; CompareError naming the run that has none."""
    out = []
    for name, members in groups.items():
        axes = []
        for m in members:
            try:
                axes.append(x_values(m.run, x))
            except XError as e:
                raise CompareError(f"arm {name!r} ({m.name}): {e}") from None
        out.append(Arm(name, tuple(members), tuple(axes)))
    return out


def parse_window(text: str | None) -> float | tuple[float | None, float | None]:
    """``None`` -> the default share; ``0.2`` / ``20%`` -> a share of the common range; ``A:B`` -> an x range."""
    if text is None or not text.strip():
        return WINDOW_SHARE
    t = text.strip()
    try:
        if ":" in t:
            a, b = (p.strip() for p in t.split(":", 1))
            lo, hi = (float(a) if a else None), (float(b) if b else None)
            if any(v is not None and not math.isfinite(v) for v in (lo, hi)):
                raise ValueError
            if lo is not None and hi is not None and lo > hi:
                raise CompareError(f"window {t!r}: its start is after its end")
            return lo, hi
        share = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise CompareError(f"window {t!r}: give a share of the common range (0.1, 10%) or an x range A:B") from None
    if not 0 < share <= 1:
        raise CompareError(f"window {t!r}: a share must be in (0, 1]")
    return share


def _run_name(arm: Arm, m: Member) -> str:
    """A run as a window's words name it: its name, with its arm's where that is not part of it."""
    return m.name if arm.name in m.name else f"{m.name} (arm {arm.name})"


def _runs(arms: Sequence[Arm]) -> list[tuple[Arm, Member, XAxis]]:
    return [(arm, m, ax) for arm in arms for m, ax in zip(arm.members, arm.axes, strict=True)]


def with_metrics(arms: Sequence[Arm], metrics: Sequence[str]) -> tuple[list[Arm], list[str]]:
    """``arms`` with only the runs that log one of ``metrics`` at least (an arm left without one is dropped), and the
    runs left out, named as the window's line names a run: a run that logs none of them (a W&B copy logging
    ``train/reward`` beside the JSONL's ``reward``) would end the common range, the window, without a point in it."""
    kept: list[Arm] = []
    left: list[str] = []
    for arm in arms:
        pairs = [(m, ax) for m, ax in zip(arm.members, arm.axes, strict=True)
                 if any(comparable(m.run, k) for k in metrics)]
        left += [_run_name(arm, m) for m in arm.members if all(m is not p for p, _ in pairs)]
        if pairs:
            kept.append(Arm(arm.name, tuple(m for m, _ in pairs), tuple(ax for _, ax in pairs)))
    return kept, left


def choose_window(arms: Sequence[Arm], spec: float | tuple[float | None, float | None]) -> Window:
    """The window of x (see the module doc); CompareError naming the arm that has not reached it."""
    runs = _runs(arms)
    spans = []
    for a, m, ax in runs:
        first, last = ax.first, ax.last
        if first is None or last is None:
            raise CompareError(f"arm {a.name!r} ({m.name}) has no value of x={ax.name}")
        spans.append((first, last, a, m))
    start = max(spans, key=lambda s: s[0])
    end = min(spans, key=lambda s: s[1])
    lo, hi = start[0], end[1]
    x = arms[0].axes[0].name
    if lo > hi:
        raise CompareError(f"no common range of x={x}: arm {end[2].name!r} ({end[3].name}) ends at {_num(hi)} "
                           f"before arm {start[2].name!r} ({start[3].name}) starts at {_num(lo)}")
    cut = f"{_run_name(end[2], end[3])} ends at {_num(hi)}" if max(s[1] for s in spans) > hi else ""
    if isinstance(spec, float):
        return Window(hi - spec * (hi - lo), hi, (lo, hi), f"last {_num(100 * spec)}%", cut)
    start_at, end_at = spec
    w_lo, w_hi = (lo if start_at is None else start_at), (hi if end_at is None else end_at)
    if short := [(arm, m, last) for first, last, arm, m in spans if last < w_hi]:
        named = first_few([f"{_run_name(arm, m)} at {_num(last)}" for arm, m, last in short])
        many = len(short) > 1
        raise CompareError(f"{len(short)} run{'s' if many else ''} of the arms end{'' if many else 's'} before the "
                           f"window does (at {x} {_num(w_hi)}): {named}")
    for first, _last, arm, m in spans:
        if first > w_lo:
            raise CompareError(f"arm {arm.name!r} ({m.name}) starts after the window's start: its x={x} starts at "
                               f"{_num(first)}, the window starts at {_num(w_lo)}")
    if w_lo > w_hi:
        raise CompareError(f"window {_num(w_lo)}:{_num(w_hi)}: its start is after its end")
    return Window(w_lo, w_hi, (lo, hi), f"x {_num(w_lo)}:{_num(w_hi)}", cut)


def _num(v: float) -> str:
    return fmt_auto(v, 4)


#: rows looked at, a batch at a time, for a key's first value (a fraction logged every few steps starts blank)
_PEEK = 256


def comparable(run: XRun, key: str) -> bool:
    """Whether ``run``'s ``key`` is a metric: numbers, or ``(n, d)`` fractions (its first value one), compared as
    the rates n/d (the routing arms' ``hack_s``: rollouts flagged of those sampled)."""
    if run.is_numeric(key):
        return True
    if key not in run.keys:
        return False
    n = len(run.steps)
    for lo in range(0, n, _PEEK):
        first = next((v for v in run.column_between(key, lo, min(lo + _PEEK, n)) if v is not None), None)
        if first is not None:
            return cell_frac(first) is not None
    return False


def metric_values(run: XRun, key: str, start: int, stop: int) -> Sequence[Any]:
    """Rows ``start:stop`` of a :func:`comparable` key as floats (NaN where absent); a fraction's rows as rates."""
    seg = run.column_between(key, start, stop)
    if run.is_numeric(key):
        return seg
    return [fr[0] / fr[1] if (fr := cell_frac(v)) is not None else math.nan for v in seg]


def pick_metrics(arms: Sequence[Arm], globs: Sequence[str] = (), skip: Sequence[str] = ()) -> list[str]:
    """Metrics (:func:`comparable` keys) to compare, in the baseline's (first arm's) order then the others': those
    matching ``globs`` (fnmatch over keys), or by default every key the first arm and at least one other arm log, but
    step, clock and bookkeeping keys, counters, the x keys and ``skip``."""
    xkeys = {ax.key for a in arms for ax in a.axes if ax.key is not None}
    per_arm = [{k for m in a.members for k in m.run.keys if comparable(m.run, k)} for a in arms]
    order = dict.fromkeys(k for a in arms for m in a.members for k in m.run.keys)
    if globs:
        return [k for k in order if any(k in s for s in per_arm) and any(fnmatchcase(k, g) for g in globs)]
    out = []
    for k in order:
        if k in NOT_METRICS or counter(k) or k in xkeys or k in skip or k not in per_arm[0]:
            continue
        if len(arms) == 1 or any(k in s for s in per_arm[1:]):
            out.append(k)
    return out


@dataclass
class Cell:
    """One arm's window of one metric: its spread (None: no finite value), seeds with a value, values, gaps."""

    spread: Spread | None
    n_seeds: int
    n_points: int
    n_missing: int


def _finite(seg: Sequence[Any]) -> list[float]:
    return [v for v in seg if type(v) is float and math.isfinite(v)]


def _cell(arm: Arm, metric: str, window: Window) -> Cell:
    per_seed: list[list[float]] = []
    missing = 0
    for m, ax in zip(arm.members, arm.axes, strict=True):
        i, j = ax.rows(window.lo, window.hi)
        run = m.run
        seg = metric_values(run, metric, i, j) if comparable(run, metric) else ()
        vals = _finite(seg)
        missing += (j - i) - len(vals)
        if vals:
            per_seed.append(vals)
    n = len(per_seed)
    points = sum(map(len, per_seed))
    if n == 0:
        return Cell(None, 0, 0, missing)
    spread = single_spread(per_seed[0]) if n == 1 else seeds_spread([mean(v) for v in per_seed])
    return Cell(spread, n, points, missing)


def interval_method(sp: Spread | None, lo: float | None) -> str | None:
    """A Result's ``ci``: how its interval was made ("seeds", "batches"), "drift" where one seed's batch means
    drift (no interval), None where there is none for another reason (too few values)."""
    if sp is None:
        return None
    return sp.method if lo is not None or sp.method == "drift" else None


def _verdict(lo: float | None, hi: float | None, better: str | None) -> str | None:
    if lo is None or hi is None or lo <= 0 <= hi:
        return None
    if better is None:
        return "differs"
    up = lo > 0
    return "better" if up == (better == "higher") else "worse"


def compare(
    arms: Sequence[Arm], baseline: str, metrics: Sequence[str], window: Window,
    better: Mapping[str, str | None] | None = None,
) -> list[Result]:
    """One Result per (metric, arm), metrics in the order given, arms in their order (the baseline's included)."""
    names = [a.name for a in arms]
    if baseline not in names:
        raise CompareError(f"no arm {baseline!r} (arms: {', '.join(names)})")
    better = better or {}
    x = arms[0].axes[0].name if arms and arms[0].axes else "step"
    out = []
    for metric in metrics:
        cells = {a.name: _cell(a, metric, window) for a in arms}
        out += metric_results(metric, cells, baseline, better.get(metric), x, window)
    return out


def metric_results(metric: str, cells: Mapping[str, Cell], baseline: str, better: str | None, x: str,
                   window: Window) -> list[Result]:
    """One metric's Results, one per arm of ``cells`` (name -> its window, in the arms' order): an arm of one seed
    spread as one seed of the others where an arm has several (:func:`steptable.compare.stats.pooled_seeds`), each
    other arm's difference from ``baseline`` (absent: none) with its interval (Welch's; the pooled t where a side is
    one seed of those), and its verdict by ``better`` where Holm's procedure over the metric's other arms calls it
    apart (:mod:`steptable.compare.family`; with one other arm: where its interval excludes 0)."""
    pooled = pooled_seeds([c.spread for c in cells.values() if c.spread is not None])
    spreads = {g: one_of_seeds(c.spread.mean, pooled) if pooled and c.n_seeds == 1 and c.spread is not None
               else c.spread for g, c in cells.items()}
    base = spreads.get(baseline)
    n_base = cells[baseline].n_seeds if baseline in cells else 0
    diffs: dict[str, Difference] = {}
    for g, c in cells.items():
        sp = spreads[g]
        if g != baseline and sp is not None and base is not None:
            diffs[g] = (pooled_diff(sp, c.n_seeds, base, n_base, pooled) if pooled and 1 in (c.n_seeds, n_base)
                        else welch_diff(sp, base))
    apart = dict(zip(diffs, holm([df.p_value() for df in diffs.values()]), strict=True))
    single = sum(df.var is not None for df in diffs.values()) <= 1  # (one test: its interval, as Holm's is)
    out = []
    for g, c in cells.items():
        sp = spreads[g]
        lo, hi = sp.interval() if sp is not None else (None, None)
        d, d_lo, d_hi = diffs[g].interval() if g in diffs else (None, None, None)
        # (an interval holding 0 is never called apart, whatever the p-value's last bits say)
        verdict = _verdict(d_lo, d_hi, better) if single or apart.get(g) else None
        out.append(Result(
            g, metric, x, window.lo, window.hi, c.n_seeds, c.n_points, c.n_missing,
            sp.mean if sp is not None else None, lo, hi, baseline, d, d_lo, d_hi,
            interval_method(sp, lo), verdict if g != baseline else None))
    return out


def compile_group(pattern: str | None) -> re.Pattern[str] | None:
    """``--group REGEX`` compiled; CompareError for a bad pattern."""
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as e:
        raise CompareError(f"--group {pattern!r}: {e}") from None
