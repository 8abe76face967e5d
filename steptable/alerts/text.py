"""A run's alerts in a few lines (``summary``'s alert block): one line per kind of alert, the telling ones first.
Pure."""

from __future__ import annotations

from collections.abc import Sequence

from steptable.alerts.engine import Alert
from steptable.table.formatting import sanitize

MAX_ALERTS = 4  # alert lines per run, one per kind: an incident or two beside the routine pauses and spikes


def alerts_text(found: Sequence[Alert], limit: int = MAX_ALERTS, end: int | None = None) -> list[str]:
    """``alerts 23 (1E 22W):`` then up to ``limit`` lines, one per group of alerts (:func:`alert_groups`; ``end``:
    the run's last step), a group of one as its alert's own line, a larger one as
    ``W steps 110-2740 actor/grad_norm x19, last spike 1.04`` (its first and last step, its column, how many, the
    gist of its latest message). The latest few alerts alone would hide an entropy collapse or a long hang behind
    the routine grad-norm spikes and pauses every run has; one line per kind keeps each incident in sight, cheaply."""
    if not found:
        return ["alerts 0"]
    ne = sum(1 for a in found if a.level == "E")
    groups = alert_groups(found, end)
    counts = " ".join(f"{n}{lv}" for n, lv in ((ne, "E"), (len(found) - ne, "W")) if n)
    limit = max(0, limit)
    more = f", {limit} of {len(groups)} kinds" if limit < len(groups) else ""
    return [f"alerts {len(found)} ({counts}{more}):", *(_group_line(g) for g in groups[:limit])]


def alert_groups(found: Sequence[Alert], end: int | None = None) -> list[list[Alert]]:
    """``found`` by level, column and kind (each in step order), most telling first: errors, earliest first (the
    first is likely the cause); then warnings of a kind that also escalated to an error, then the rarer, then the
    more recent (a one-off collapse ahead of the grad-norm spikes a healthy run has by the dozen). A stall at the
    run's ``end`` (its last step) is a group of its own: where the run stands now, not one more pause."""
    by: dict[tuple[str, str, str, bool], list[Alert]] = {}
    for a in sorted(found, key=lambda a: a.step):
        by.setdefault((a.level, a.column, a.kind, a.kind == "stall" and a.step == end), []).append(a)
    escalated = {(col, kind) for lv, col, kind, _ in by if lv == "E"}

    def rank(key: tuple[str, str, str, bool]) -> tuple[int, int, int]:
        g = by[key]
        if key[0] == "E":
            return (0, g[0].step, 0)
        return (1 if key[1:3] in escalated else 2, len(g), -g[-1].step)

    return [by[k] for k in sorted(by, key=rank)]


def _group_line(group: Sequence[Alert]) -> str:
    last = group[-1]
    if len(group) == 1:
        return last.line()
    first = group[0].step
    span = f"steps {first}-{last.step}" if first != last.step else f"step {first}"
    col = f" {last.column}" if last.column else ""
    return sanitize(f"{last.level} {span}{col} x{len(group)}, last {_gist(last.message)}")


def _gist(message: str) -> str:
    """``message`` without a closing parenthetical (``spike 1.04`` of ``spike 1.04 (z=11 vs median .354 over
    50)``): the detail of the latest of a repeated kind is ~10 tokens a line, and ``tail --alerts-only`` has it."""
    if not message.endswith(")"):
        return message
    depth = 0
    for i in range(len(message) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(message[i], 0)
        if depth == 0:
            return message[:i].rstrip() or message
    return message
