"""Summary alert lines: one per kind (level, column, detector), so an incident is not hidden behind the routine
spikes and pauses of a healthy run (the latest three alone read the same for an entropy collapse and no incident)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from steptable.alerts.engine import Alert
from steptable.summary.report import alert_groups, alerts_text, summarize
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


def test_order_errors_escalated_rarer_recent_and_limit() -> None:
    found = [
        *map(spike, SPIKES[:5]),
        Alert("W", 300, "kl", "kl_blowup", "blow-up .02 (x12 vs median .001)"),
        Alert("E", 305, "kl", "kl_blowup", "blow-up .2 (x130 vs median .001)"),
        Alert("W", 900, "kl", "kl_blowup", "blow-up 1.1 (>1)"),
        Alert("E", 700, "loss", "nonfinite", "non-finite (nan) after 699 finite steps"),
        Alert("E", 720, "loss", "nonfinite", "non-finite (nan) after 9 finite steps"),
        Alert("W", 50, "loss", "flat", "flat at 0 for 50 rows since step 1 (no learning signal?)"),
        Alert("W", 1200, "reward", "reward_collapse", "collapse to .2 from .5 (-60%, 6sd)"),
    ]
    groups = alert_groups(found)
    assert [(g[0].level, g[0].column, len(g)) for g in groups] == [
        ("E", "kl", 1), ("E", "loss", 2), ("W", "kl", 2), ("W", "reward", 1), ("W", "loss", 1),
        ("W", "actor/grad_norm", 5)]
    assert alerts_text(found) == [
        "alerts 12 (3E 9W, 4 of 6 kinds):",
        "E step 305 kl blow-up .2 (x130 vs median .001)",
        "E steps 700-720 loss x2, last non-finite (nan) after 9 finite steps",  # no closing parenthetical to drop
        "W steps 300-900 kl x2, last blow-up 1.1",
        "W step 1200 reward collapse to .2 from .5 (-60%, 6sd)"]
    assert alerts_text(found, limit=0) == ["alerts 12 (3E 9W, 0 of 6 kinds):"]
    assert alerts_text([]) == ["alerts 0"]


def test_group_line_edges() -> None:
    """Unordered input, one step twice, a nested closing parenthetical, a message that is only one."""
    found = [Alert("W", 9, "gn", "spike", "spike 3 (z=12 (robust) vs 1)"), Alert("W", 9, "gn", "spike", "(odd)"),
             Alert("W", 4, "x", "flat", "flat"), Alert("W", 4, "x", "flat", "(only)")]
    assert alerts_text(found)[1:] == ["W step 9 gn x2, last (odd)", "W step 4 x x2, last (only)"]  # recent first
    assert alerts_text(found[:1] * 2)[1:] == ["W step 9 gn x2, last spike 3"]


def test_md_lists_one_line_per_kind() -> None:
    lines = alert_lines(healthy(), fmt="md")
    assert lines == ["- alerts 22 (22W):",
                     "  - W step 3000 stalled: no row for 1105d (12x median 60s/row)",
                     "  - W steps 99-399 x2, last stalled: no row for 12.1m",
                     "  - W steps 110-2740 actor/grad_norm x19, last spike 1.24"]
