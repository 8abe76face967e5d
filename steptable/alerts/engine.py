"""Alert detectors over a run's per-step columns: pure, stdlib only, one ASCII line per alert.

The StepLogger and ``steptable tail --alerts-only`` stream rows through :meth:`AlertEngine.update`; the app and the
summary replay a stored run through steptable.alerts.history (same rows, same alerts), which feeds its quiet
stretches in bulk (:meth:`AlertEngine.feed_block`, steptable.alerts.quiet).

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
from collections.abc import Collection, Mapping, Sequence
from operator import sub
from typing import Any

from steptable.alerts import quiet
from steptable.alerts.activity import STEP_TIME_KEYS as STEP_TIME_KEYS
from steptable.alerts.activity import clockless_gap as clockless_gap
from steptable.alerts.activity import clockless_stall as clockless_stall
from steptable.alerts.activity import fmt_age as fmt_age
from steptable.alerts.detectors import DETECTORS, Flat, NonFinite
from steptable.alerts.rules import DEFAULT_ROLES as DEFAULT_ROLES
from steptable.alerts.rules import MULTI_ROLES as MULTI_ROLES
from steptable.alerts.rules import Alert as Alert
from steptable.alerts.rules import AlertConfig as AlertConfig
from steptable.alerts.rules import Level as Level
from steptable.alerts.rules import cell_float as cell_float
from steptable.alerts.rules import cell_frac as cell_frac
from steptable.alerts.window import Detector, Latch, Window
from steptable.table import runinfo
from steptable.table.formatting import fmt_auto as _f


class _GradStill:
    """The gate of a loss's flat test (``Flat.gate``): a loss flat for flat_rows rows is no learning signal only
    where the grad norm, if the run logs one, is flat too: TRL's loss is round(beta * KL, 4), one value for hundreds
    of steps of a run that learns. It holds the grad norm's flat test, not the engine, whose detectors hold it: an
    engine dropped is freed by reference counting (the MCP server makes engines for every run a call reads)."""

    __slots__ = ("config", "flat")

    def __init__(self, config: AlertConfig) -> None:
        self.config = config
        self.flat: Flat | None = None  # the bound grad norm column's flat test, once made

    def __call__(self) -> bool:
        return self.flat is None or self.flat.run >= self.config.flat_rows - 1  # - 1: its row comes after the loss's


class AlertEngine:
    """Streaming detectors: feed rows in order with :meth:`update`; poll :meth:`check_stall` while waiting."""

    def __init__(self, config: AlertConfig | None = None, merge: bool = True,
                 only: Collection[type[Detector]] | None = None) -> None:
        self.config = config or AlertConfig()
        # a row's non-finite alerts as one line; off for a scan of some columns (steptable.alerts.parts merges)
        self.merge = merge
        # the detectors made (None: every one): a scan of some of a role's detectors (steptable.alerts.parts)
        self.only = None if only is None else frozenset(only)
        self.roles = self.config.role_keys()
        self._bound: dict[str, str] = {}
        self._plans: dict[tuple[str, ...], list[tuple[str, str, tuple[type[Detector], ...]]]] = {}
        self._hack_keys = False  # a row held a hack or AUROC key: the hack test runs from then on
        self._dets: dict[tuple[str, str], tuple[Detector, ...]] = {}
        self._hints: dict[str, dict[str, int]] = {}  # per column: where its quiet tests start (steptable.alerts.quiet)
        self._last_step = 0
        self._last_wall: float | None = None
        # (never fewer than the intervals the stall test waits for: a short window must not switch it off)
        self._dts = Window(maxlen=max(1, self.config.window, self.config.stall_min_rows))
        self._pauses: deque[float] = deque(maxlen=64)  # gaps past the stall threshold the run came back from
        self._stalled = False
        self._hack: deque[tuple[float, float]] = deque(maxlen=max(2, self.config.hack_window))
        self._auroc: deque[float] = deque(maxlen=max(2, self.config.hack_window))
        self._hack_latch = Latch()
        self._grad_still = _GradStill(self.config)

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
        if wall_time is not None:
            self._wall(wall_time)
        nan_missing = self.config.nan_missing
        for role, key, classes in self._plan(row):
            v = row.get(key)
            x = v if type(v) is float else cell_float(v)
            if x is None or (nan_missing and x != x and isinstance(v, float)):
                continue
            dets = self._dets.get((role, key))
            if dets is None:
                dets = self._dets[(role, key)] = self._new(role, key, classes)
            finite = x - x == 0  # (math.isfinite, without the call)
            for d in dets:
                if finite or d.nonfinite:
                    if (a := d.feed(step, x)) is not None:
                        out.append(a)
        if self._hack_keys and (a := self._hack_update(step, row)) is not None:
            out.append(a)
        return merge_nonfinite(out) if len(out) > 1 and self.merge else out

    def feed_block(self, steps: Sequence[int], values: Sequence[tuple[str, list[float]]],
                   walls: Sequence[Any] | None) -> list[Alert] | None:
        """Feed the rows ``update(steps[i], {key: cells[i] for each key}, walls[i])`` would and return their
        alerts, for ``values`` (key, the cells as floats: steptable.alerts.quiet.floats, every one finite), where the
        clock moves on by less than the stall threshold at each and the rows' keys are planned: each detector that
        provably raises nothing over them is advanced in bulk (steptable.alerts.quiet), the others fed row
        by row. None, with nothing fed, otherwise."""
        plan = self._plans.get(tuple(k for k, _ in values))
        if plan is None or self._hack_keys or not steps or any(len(v) != len(steps) for _, v in values):
            return None
        xs = dict(values)
        clock = self._quiet_clock(walls, len(steps))
        if clock is None:
            return None
        found: list[tuple[Detector, list[float], quiet.Commit | None]] = []
        for role, key, _ in plan:
            dets = self._dets.get((role, key))
            if dets is None:
                return None
            hints = self._hints.setdefault(key, {})
            found += zip(dets, [xs[key]] * len(dets), quiet.advance(dets, xs[key], steps, hints), strict=True)
        together: set[int] = set()  # fed row by row in the engine's order, every row of the block
        if any(c is None and isinstance(d, Flat) and d.gate is self._grad_still for d, _, c in found):
            # a loss's flat test asks the grad norm's at its rows
            grad = self._dets.get(("grad_norm", self._bound.get("grad_norm", "")), ())
            together = {id(d) for d, _, c in found if isinstance(d, Flat) and (c is None or d in grad)}
        if clock:
            self._dts.shift(clock[0])
            self._stalled, self._last_wall = False, clock[1]
        self._last_step = steps[-1]
        out: list[tuple[int, int, Alert]] = []  # (row, the detector's place in the engine's order, alert)
        rows: list[tuple[int, Detector, list[float]]] = []
        for at, (d, v, commit) in enumerate(found):
            if id(d) in together:
                rows.append((at, d, v))
            elif commit is not None:
                commit()
            else:  # in bulk where shorter stretches are quiet, else row by row
                out += [(i, at, a) for i, a in quiet.piecewise(d, v, steps, self._hints.get(d.key))]
        for i, step in enumerate(steps if rows else ()):
            out += [(i, at, a) for at, d, v in rows if (a := d.feed(step, v[i])) is not None]
        # (every cell finite: no non-finite alerts to merge)
        return [a for _, _, a in sorted(out, key=lambda t: t[:2])]

    def _quiet_clock(self, walls: Sequence[Any] | None, n: int) -> tuple[list[float], float] | tuple[()] | None:
        """The row intervals ``walls`` add and the last wall time, when no row puts the clock back and none moves it
        on by more than the stall threshold (no stall is said, no pause noted); () for rows without a clock; None
        otherwise."""
        ts = None if walls is None else quiet.floats(walls)
        if ts is None:  # (no clock at all, or one row without: the rows say)
            return () if walls is None or all(t is None or t != t for t in walls) else None
        if len(ts) != n or self._last_wall is None:
            return None
        gaps = list(map(sub, ts, [self._last_wall, *ts[:-1]]))
        if min(gaps) < 0 or max(gaps) > self.config.stall_min_s:
            return None
        return [g for g in gaps if g > 0], ts[-1]  # (a row at the same time adds no interval)

    def _plan(self, row: Mapping[str, Any]) -> list[tuple[str, str, tuple[type[Detector], ...]]]:
        """(role, key, detector classes) for each watched key of ``row``, in the role table's order. Rows of a run
        mostly hold the same keys: the plan is kept per key set once every role it could bind is bound (a row whose
        candidate cell is None binds nothing, so its plan is not kept)."""
        sig = tuple(row)
        plan = self._plans.get(sig)
        if plan is not None:
            return plan
        plan, keep = [], True
        for role, classes in DETECTORS.items():
            unbound = role not in MULTI_ROLES and role not in self._bound
            for key in self._keys(role, row):
                plan.append((role, key, classes))
            if unbound and role not in self._bound and any(k in row for k in self.roles.get(role, ())):
                keep = False
        self._hack_keys = self._hack_keys or any(k in row for r in ("hack", "auroc") for k in self.roles.get(r, ()))
        if keep and len(self._plans) < 64:  # (a run whose key sets keep changing: planned row by row)
            self._plans[sig] = plan
        return plan

    def _new(self, role: str, key: str, classes: Sequence[type[Detector]]) -> tuple[Detector, ...]:
        dets = tuple(c(self.config, key) for c in classes if self.only is None or c in self.only)
        for d in dets:
            if isinstance(d, Flat) and role == "loss":
                d.gate = self._grad_still
            elif isinstance(d, Flat) and role == "grad_norm":  # (the role's one bound column: its only detectors)
                self._grad_still.flat = d
        return dets

    def resumed(self) -> None:
        """The next row starts a resumed run (rows replayed in step order: its clock restarts there). The gap to
        it spans the crashed run's replaced rows and the restart: not a stall of the run being read."""
        self._last_wall = None
        self._stalled = False

    def bind(self, role: str, key: str) -> None:
        """Watch ``key`` for ``role`` (a single-key role not bound yet), as a reader of the rows before did; a
        multi-key role watches every candidate present anyway. For a reader that replays only some of them."""
        if role not in MULTI_ROLES:
            self._bound.setdefault(role, key)
            self._plans.clear()

    def set_nonfinite(self, key: str, on: bool, clear: int, since: int | None, known: bool = True) -> None:
        """The non-finite test of ``key`` as reading the rows before would leave it: an episode ``on`` (said), with
        ``clear`` finite cells since; the column finite since step ``since`` (None: not since its last non-finite
        cell; not ``known``: what the rows fed so far say). For a reader that replays only some of those rows (the
        rows a resume replaces)."""
        for role, classes in DETECTORS.items():
            watched = key in self.roles.get(role, ()) if role in MULTI_ROLES else self._bound.get(role) == key
            if not watched or not any(c.nonfinite for c in classes):
                continue
            dets = self._dets.get((role, key)) or self._dets.setdefault((role, key), self._new(role, key, classes))
            for d in dets:
                if isinstance(d, NonFinite):
                    d.latch.level, d.latch.clear = ("E" if on else None), clear
                    if known:
                        d.run, d.since = (0, d.since) if since is None else (max(1, d.run), since)

    def carry(self, old: AlertEngine, at: int) -> None:
        """Take from ``old`` (the engine this one replaces at a resume at step ``at``) the run-long values (a reward's
        peak, a grad norm's lowest level) it set before ``at``: rows a bounded replay does not reach."""
        for rk, dets in self._dets.items():
            for d, o in zip(dets, old._dets.get(rk, ()), strict=False):
                d.carry(o, at)

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

    def times_rows(self) -> bool:
        """It has seen rows come far enough apart to check stalls itself (``check_stall``): a reader that saw a run's
        rows arrive need not judge it by its file's age too."""
        return self._last_wall is not None and len(self._dts) >= self.config.stall_min_rows

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
        msg = f"stalled: no row for {fmt_age(gap)} ({_f(gap / med)}x median {_f(med)}s/row)"
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
        near = h1 - h0 >= c.clear_frac * c.hack_rise or a0 - a1 >= c.clear_frac * c.auroc_drop  # either still moving
        if not self._hack_latch.step("W" if bad else None, c.rearm, near):
            return None
        msg = f"rising {_f(h0)}->{_f(h1)} while {au[0]} {_f(a0)}->{_f(a1)} (last {len(h)})"
        return Alert("W", step, hk[0], "hack_auroc", msg)


def merge_nonfinite(found: list[Alert]) -> list[Alert]:
    """One line for a step's non-finite columns (a divergence turns every metric NaN at once), under the first."""
    nf = [a for a in found if a.kind == "nonfinite"]
    if len(nf) < 2:
        return found
    # each column with its value (nan vs inf tells an overflow from a 0/0): "non-finite (nan) after ..." -> "nan"
    also = ", ".join(f"{a.column} ({a.message.partition('(')[2].partition(')')[0]})" for a in nf[1:])
    first = nf[0]
    merged = Alert(first.level, first.step, first.column, first.kind, f"{first.message}; also {also}")
    return [merged if a is first else a for a in found if a.kind != "nonfinite" or a is first]


def earlier_end_alerts(info: dict[str, Any] | None, told: Collection[float] = ()) -> list[Alert]:
    """How the run's earlier processes ended where not normally (steptable.table.runinfo.earlier), each at the step
    the next process resumed at, as :func:`end_alert` says the last one's: a crash before a resume is not forgotten
    when the resumed process describes the run again. Those whose close is in ``told`` (a follower said them as
    they happened) are left out."""
    return [Alert("W" if runinfo.warns(end) else "E", at, "", "ended",
                  f"run {runinfo.end_words(end)}; resumed at this step")
            for end, at, closed in runinfo.earlier(info) if closed not in told]


def end_alert(info: dict[str, Any] | None, step: int) -> Alert | None:
    """At the run's last ``step``, how its StepLogger's ``with`` block ended, from its description ``info``
    (steptable.table.runinfo): E on an exception (a crash: "run ended with RuntimeError"), W when interrupted (Ctrl-C, a
    scheduler's SIGTERM turned into a non-zero exit: someone stopped the run, not a failure of it, but its numbers
    stop short of what was planned); None for a normal end, a run still going, or a run without a description."""
    end = runinfo.ended_by(info)
    if end is None:
        return None
    return Alert("W" if end == runinfo.INTERRUPTED else "E", step, "", "ended", f"run {runinfo.end_words(end)}")
