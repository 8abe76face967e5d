"""Summary alert lines: one per kind (level, column, detector), so an incident is not hidden behind the routine
spikes and pauses of a healthy run (the latest three alone read the same for an entropy collapse and no incident)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from steptable.alerts.engine import Alert
from steptable.summary.report import alerts_text, summarize
from tests.alerts.helpers import spike

NOW = 1_700_100_000.0
SPIKES = [110, 224, 421, 505, 555, 595, 829, 1000, 1176, 1289, 1344, 1422, 1580, 1604, 1838, 2347, 2662, 2686, 2740]


@dataclass
class Run:
    run: str = "verl0/metrics.jsonl"
    arm: str = ""
    steps: list[int] = field(default_factory=lambda: list(range(1, 3001)))
    keys: list[str] = field(default_factory=list)
    resumes: list[int] = field(default_factory=list)
    bad_count: int = 0
    last_update: float | None = None
    wall_times: list[float] = field(default_factory=list)

    def column(self, key: str) -> Sequence[Any]:
        return []

    def __len__(self) -> int:
        return len(self.steps)


def stall(step: int, gap: str) -> Alert:
    return Alert("W", step, "", "stall", f"stalled: no row for {gap} (12x median 60s/row)")


def healthy() -> list[Alert]:
    """A healthy verl run's alerts: grad-norm spikes, two evaluation pauses, the end stall of an idle file."""
    found = [*map(spike, SPIKES), stall(99, "10.9m"), stall(399, "12.1m"), stall(3000, "1105d")]
    return sorted(found, key=lambda a: a.step)


def alert_lines(found: list[Alert], fmt: Literal["text", "md"] = "text") -> list[str]:
    text = summarize([Run()], now=NOW, columns=[], alerts={"verl0/metrics.jsonl": found}, fmt=fmt)
    lines = text.splitlines()
    return lines[next(i for i, x in enumerate(lines) if "alerts" in x):]


def test_incident_not_hidden_behind_routine_alerts() -> None:
    collapse = Alert("W", 1513, "actor/entropy", "entropy_collapse", "collapse .188 (<50% of recent .393)")
    base, sick = alert_lines(healthy()), alert_lines(sorted([*healthy(), collapse], key=lambda a: a.step))
    assert base == ["alerts 22 (22W):",
                    "W step 3000 stalled: no row for 1105d (12x median 60s/row)",
                    "W steps 99-399 x2, last stalled: no row for 12.1m",
                    "W steps 110-2740 actor/grad_norm x19, last spike 1.24"]
    assert sick == ["alerts 23 (23W):", base[1], "W step 1513 actor/entropy collapse .188 (<50% of recent .393)",
                    *base[2:]]


def test_hang_mid_run_shows_apart_from_the_end_stall() -> None:
    """The stall at the run's last step (where it stands now) is its own line; the hour-long hang leads the pauses."""
    lines = alert_lines(sorted([*healthy(), stall(1499, "71.6m")], key=lambda a: a.step))
    assert lines[1:3] == ["W step 3000 stalled: no row for 1105d (12x median 60s/row)",
                          "W steps 99-1499 x3, last stalled: no row for 71.6m"]
    merged = alerts_text([stall(99, "10.9m"), stall(3000, "1105d")])  # no end given: one kind
    assert merged[1:] == ["W steps 99-3000 x2, last stalled: no row for 1105d"]


def test_md_lists_one_line_per_kind() -> None:
    lines = alert_lines(healthy(), fmt="md")
    assert lines == ["- alerts 22 (22W):",
                     "  - W step 3000 stalled: no row for 1105d (12x median 60s/row)",
                     "  - W steps 99-399 x2, last stalled: no row for 12.1m",
                     "  - W steps 110-2740 actor/grad_norm x19, last spike 1.24"]
