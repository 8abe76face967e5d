"""The alerts `steptable tail` prints: one AlertEngine per run, fed the rows tail reads (as summary and the app scan
them), stalls against the clock, a run's end, each in the chosen format through the Printer. What is read and
printed as rows is steptable.cli.tailout.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from steptable.alerts.engine import Alert, AlertEngine, clockless_stall
from steptable.alerts.history import resumed_engine
from steptable.cli.tailformats import Printer
from steptable.ingest import RunStore
from steptable.summary.report import run_label


@dataclass(frozen=True)
class Told:
    """What a run's cursor says was told of its alerts: those at steps up to ``upto``, but for the rows changed since
    it was taken (``again``: an evaluation merged into an older row, cells merged into the cursor's row; from
    ``again_from`` on: a resume, changes too old to be listed), whose alerts are told (again, where one of them
    was told before the change)."""

    upto: int
    again: frozenset[int] = frozenset()
    again_from: int | None = None

    def before(self, step: int, rows: bool = True) -> bool:
        """Was an alert at ``step`` told before? ``rows``: of a row as it is now (not of a row a resume replaced:
        those were told as they were)."""
        if step > self.upto:
            return False
        return not rows or (step not in self.again and (self.again_from is None or step < self.again_from))


class TailAlerts:
    """Alert engines by run, and what was told of them: ``told`` by run, from its mark in the cursor given (a stall
    or an end is the run's state now, told whatever its step)."""

    def __init__(self, printer: Printer) -> None:
        self.printer = printer
        self.told: dict[str, Told] = {}
        self.engines: dict[str, AlertEngine] = {}
        self.labels: dict[str, str] = {}  # run -> the name its alerts carry (the arm)
        self.arm_of: dict[str, str] = {}  # run -> its arm (alert records)
        self.ended: set[str] = set()  # runs whose StepLogger was closed
        self.far_told: set[str] = set()  # runs without a row clock told stalled (until they write again)
        self.error_alert = False  # an error-level alert was told (tail's exit status)

    def keep_only(self, runs: Collection[str]) -> None:
        """Drop the engines of runs no longer followed (their file is gone: they did not stall)."""
        for run in [r for r in self.engines if r not in runs]:
            del self.engines[run]

    def restart(self, run: str) -> None:
        """The run's content is new (a file replaced): its history starts again."""
        self.engines.pop(run, None)

    def resumed(self, store: RunStore, at: int) -> None:
        """The run resumed at step ``at``: its engine holds the rows read up to there (none if never fed)."""
        if store.run in self.engines:
            self.engines[store.run] = resumed_engine(store, at, old=self.engines[store.run])

    def feed(
        self,
        store: RunStore,
        redo: Sequence[tuple[int, Mapping[str, Any], frozenset[str] | None]],
        rows: Sequence[Mapping[str, Any]],
        steps: Sequence[int],
        walls: Sequence[float],
        resumes: Collection[int] = (),
    ) -> None:
        """Feed the run's engine what changed in rows fed before (``redo``), then the new ``rows`` with their
        ``steps`` and wall times (aligned with them). The gap before a row at one of the run's ``resumes`` is the
        crash and the restart, not a stall (as ``alerts.scan`` takes it for summary and the app)."""
        eng = self.engines.setdefault(store.run, AlertEngine())
        if rows:
            self.far_told.discard(store.run)  # it wrote again: a later stall is told again
        self.label(store)
        for step, row, keys in redo:  # what changed in rows already fed: the cells merged in, or the inserted row
            for alert in eng.update(step, row if keys is None else {k: row[k] for k in keys if k in row}):
                self.tell(store.run, alert)
        for r, step, wall in zip(rows, steps, walls, strict=True):
            if step in resumes:
                eng.resumed()
            found = eng.check_stall(wall) if math.isfinite(wall) and step not in resumes else []  # a gap now over
            for alert in [*found, *eng.update(int(step), r, wall)]:
                self.tell(store.run, alert)

    def label(self, store: RunStore) -> None:
        # the arm when no other run has it, else run/arm: two experiments' seed0 must not read as one
        self.labels[store.run] = run_label(store, self.printer.arm_runs.get(store.arm, 0) <= 1)

    def check_stalls(self, now: float, stores: Collection[RunStore] = ()) -> None:
        """A stall of each run read, against ``now``: from its rows' clock, or for ``stores`` whose rows carry none,
        from the age of its file against its own step time (once, until it writes again)."""
        from steptable.alerts.activity import STALLED, store_activity

        for store in stores:  # a stall against now only where the run should still be writing (idle: no alert)
            run = store.run
            fed = self.engines.get(run)
            if fed is None or run in self.ended or run in self.far_told:
                continue  # ended: its StepLogger was closed; told: once until it writes again
            if store_activity(store, now).state != STALLED:
                continue
            found = fed.check_stall(now) if fed.times_rows() else []
            if not fed.times_rows() and (far := clockless_stall(store, now)) is not None:
                found = [far]
            if found:
                self.far_told.add(run)
            for alert in found:
                self.tell(run, alert)

    def tell(self, run: str, alert: Alert, rows: bool = True) -> None:
        """One alert, in the chosen format, unless the run's ``told`` says it was told before (see the class;
        ``rows``: Told.before)."""
        told = self.told.get(run)
        if told is not None and alert.kind not in ("stall", "ended") and told.before(alert.step, rows):
            return
        if alert.level == "E":  # before the line: a SIGTERM right after it must not lose the status
            self.error_alert = True
        self.printer.alert(run, self.arm_of.get(run, ""), self.labels.get(run, run), alert)
