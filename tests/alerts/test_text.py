"""steptable.alerts.text: a run's alerts in a few lines, one per kind, the telling ones first."""

from __future__ import annotations

from steptable.alerts.engine import Alert
from steptable.summary.report import alert_groups, alerts_text
from tests.alerts.helpers import spike

SPIKES = [110, 224, 421, 505, 555, 595, 829, 1000, 1176, 1289, 1344, 1422, 1580, 1604, 1838, 2347, 2662, 2686, 2740]


def test_order_errors_escalated_rarer_recent_and_limit() -> None:
    found = [
        *map(spike, SPIKES[:5]),
        Alert("W", 300, "kl", "kl_blowup", "blow-up .02 (x12 vs median .001)"),
        Alert("E", 305, "kl", "kl_blowup", "blow-up .2 (x130 vs median .001)"),
        Alert("W", 900, "kl", "kl_blowup", "blow-up 1.1 (>1)"),
        Alert("E", 700, "loss", "nonfinite", "non-finite (NaN) after 699 finite steps"),
        Alert("E", 720, "loss", "nonfinite", "non-finite (NaN) after 9 finite steps"),
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
        "E steps 700-720 loss x2, last non-finite (NaN) after 9 finite steps",  # no closing parenthetical to drop
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
