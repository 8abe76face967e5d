"""The session's events: the alerts the scanner found (each counted once), the runs stalled or long idle, and the
bad lines the runs' stores kept, merged into the events list the status bar and the events screen show. Pure (no
textual); the session owns one and reads its runs through it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from steptable.app.model import INTERVAL_WINDOW, ended, usual_interval
from steptable.app.widgets.status import Event, bad_line
from steptable.table.formatting import fmt_age

if TYPE_CHECKING:  # (imported when first needed: the first frame does not wait for them)
    from steptable.alerts.activity import Activity
    from steptable.alerts.engine import Alert
    from steptable.app.session import Run

MAX_ALERTS = 5000
_V = TypeVar("_V")


@dataclass
class EventLog:
    """Alerts, stalls and bad lines of ``runs`` (the session's own dict, read live), labelled by ``labels``."""

    runs: Mapping[str, Run]
    _labels: Callable[[], dict[str, str]]
    alerts: list[Event] = field(default_factory=list)
    stalls: dict[str, float] = field(default_factory=dict)
    idle: dict[str, Activity] = field(default_factory=dict)  # runs long quiet with nothing saying they still run
    #: runs whose events are neither counted nor listed (their panels are still marked): a copy of another run (one
    #: training through several loggers; the run it copies is counted) and a seed group's table of means (its seeds
    #: are). The app's seed groups keep it.
    uncounted: set[str] = field(default_factory=set)
    _run_counts: dict[str, dict[str, int]] = field(default_factory=dict)  # run id -> level -> alerts
    _alerted: set[tuple[str, str, int, str, str, str, float | None]] = field(default_factory=set)


    def add_alerts(self, run_id: str, alerts: Sequence[Alert], closed: float | None = None) -> None:
        """Alerts the scanner found; one it found before (its file read again after a reset, the same rows) is not
        counted twice. ``closed``: the close an end alert is for (a run resumed that dies again at the same step, of
        the same exception, is told again)."""
        label = self._labels().get(run_id, run_id)
        for a in alerts:
            seen = (run_id, a.level, a.step, a.column, a.kind, a.message, closed if a.kind == "ended" else None)
            if seen in self._alerted:
                continue
            if len(self._alerted) >= 4 * MAX_ALERTS:
                self._alerted.clear()
            self._alerted.add(seen)
            counts = self._run_counts.setdefault(run_id, {})
            counts[a.level] = counts.get(a.level, 0) + 1
            self.alerts.append(Event(a.level, label, a.message_line(), run_id, a.step, a.column,
                                     a.replaced is not None))
        del self.alerts[:-MAX_ALERTS]

    def check_stalls(self, now: float) -> dict[str, float]:
        """Runs stalled (steptable.alerts.activity: quiet past their threshold while something says they still run,
        or not long past it): run id -> seconds since the last row. Runs long quiet go to ``idle`` (not alerts)."""
        from steptable.alerts.activity import IDLE, STALLED, store_activity

        self.stalls, self.idle = {}, {}
        for rid, r in self.runs.items():
            if r.preview is None and not ended(r.store):  # a run whose StepLogger was closed has ended
                act = store_activity(r.store, now)
                if act.state == STALLED and act.gap is not None:
                    self.stalls[rid] = act.gap
                elif act.state == IDLE:
                    self.idle[rid] = act
        return self.stalls

    @property
    def counts(self) -> dict[str, int]:
        """Level -> alerts of the counted runs (each alert once)."""
        out: dict[str, int] = {}
        for rid, counts in self._run_counts.items():
            if rid not in self.uncounted:
                for level, n in counts.items():
                    out[level] = out.get(level, 0) + n
        return out

    def bad_total(self) -> int:
        return sum(r.store.bad_count for rid, r in self.runs.items() if rid not in self.uncounted)

    def events(self, recent: int | None = None) -> list[Event]:
        """Stalled runs first, then errors, bad lines and warnings, newest first within each (all when no limit)."""
        labels = self._labels()
        out = []
        for rid, gap in self._counted(self.stalls).items():
            r = self.runs[rid]
            med = usual_interval(r.store.wall_times_between(-INTERVAL_WINDOW - 1))
            usual = f" (usual {med:.3g}s/row)" if med is not None and math.isfinite(med) else ""
            out.append(Event("S", labels[rid], f"stalled: no row for {fmt_age(gap)}{usual}", rid))
        counted = [e for e in reversed(self.alerts) if e.run not in self.uncounted]
        errors = [e for e in counted if e.level == "E"]
        warnings = [e for e in counted if e.level != "E"]
        bad: list[Event] = []
        # the runs whose bad lines came last first
        by_age = sorted(self._counted(self.runs).items(), key=lambda item: -item[1].bad_turn)
        for rid, r in by_age:
            kept, newest, total = r.store.bad_lines()
            # the store keeps the first bad lines and the newest: newest first, then a line for the ones between
            later = newest[len(newest) - min(total - len(kept), len(newest)):]
            lines = [*reversed(later), *reversed(kept)]
            if recent is not None:
                lines = lines[:recent]
            between = total - len(kept) - len(later)
            for i, b in enumerate(lines):
                if between > 0 and i == len(later):
                    bad.append(Event("B", labels[rid], f"{between:,} more bad lines between these (not kept)", rid))
                bad.append(Event("B", labels[rid], bad_line(b.path, b.lineno, b.reason), rid))
        out += errors + bad + warnings
        return out if recent is None else out[:recent]

    def status_counts(self) -> dict[str, int]:
        idle = self._counted(self.idle)
        return {**self.counts, "S": len(self._counted(self.stalls)), **({"idle": len(idle)} if idle else {}),
                "B": self.bad_total()}

    def _counted(self, by_run: Mapping[str, _V]) -> dict[str, _V]:
        return {rid: v for rid, v in by_run.items() if rid not in self.uncounted}
