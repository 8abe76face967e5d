"""The session's event log: alerts counted once, labelled by arm, the newest kept, counts for the status bar."""

from __future__ import annotations

from steptable.alerts.rules import Alert
from steptable.app.eventlog import MAX_ALERTS, EventLog


def test_alerts_are_counted_once_labelled_and_bounded() -> None:
    log = EventLog({}, lambda: {"r1": "routeA"})
    a = Alert("E", 12, "loss", "nonfinite", "non-finite (NaN) after 12 finite steps")
    w = Alert("W", 20, "grad_norm", "spike", "spike to 12.0 (z 30)")
    log.add_alerts("r1", [a, w])
    log.add_alerts("r1", [a])  # the same rows read again after a reset: not counted twice
    assert log.counts == {"E": 1, "W": 1}
    assert [(e.level, e.arm, e.run, e.step, e.column) for e in log.alerts] == [
        ("E", "routeA", "r1", 12, "loss"), ("W", "routeA", "r1", 20, "grad_norm")]
    log.add_alerts("r2", [Alert("W", s, "loss", "spike", f"spike {s}") for s in range(MAX_ALERTS + 5)])
    assert len(log.alerts) == MAX_ALERTS and log.alerts[-1].text.endswith(f"spike {MAX_ALERTS + 4}")
    assert log.counts["W"] == MAX_ALERTS + 6  # the counts are of every alert, the list of the newest
