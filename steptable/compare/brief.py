"""The comparison lines ``steptable summary`` adds when its runs are several arms. Pure.

When the runs form two arms or more (seeds grouped, :mod:`steptable.compare.groups`) of one layout (the caller
passes one ``by_schema`` group: runs of different trainers are not arms of one experiment), and every run has at
least MIN_WINDOW_ROWS rows in the window: one line naming the baseline (the first run's arm, or ``baseline``) and
the window (the last 10% of the steps every run has reached), then one line per key metric (at most
``MAX_METRICS``) with each other arm's difference from the baseline and the half-width of its 95% interval
(``+.030±.012``), marked ``better`` / ``worse`` by the metric's direction (``*`` with none) where its verdict
says so (the interval excludes 0; with several arms tested, Holm's procedure over them, and the first line says
``Holm``), led by the arm of the best mean where the metric has a direction
(``reward best b: b +.030±.012 better, c -.020±.012``); where every arm is one run, the intervals are the runs' own
noise (batch means) and the first line says so. Key metrics: the reward's and the loss's columns (the
alert roles' keys, first present), then columns the schema gives a direction, in the schema's order; each one
every arm logs. Arms are named by their summary tag
(``b``) when each is one run, else by the group's name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from steptable.alerts.rules import DEFAULT_ROLES
from steptable.compare.core import CompareError, choose_window, comparable, compare, make_arms
from steptable.compare.direction import ROLE_BETTER, directions, schema_order
from steptable.compare.groups import group_runs
from steptable.compare.render import compact_line, family_words, within_runs
from steptable.table.formatting import sanitize

MAX_METRICS = 3
#: rows each run needs in the window (its 10 batch means need as many)
MIN_WINDOW_ROWS = 10


def _key_metrics(arms: Sequence[Any], better: Mapping[str, str | None]) -> list[str]:
    common = set.intersection(*({k for m in a.members for k in m.run.keys if comparable(m.run, k)} for a in arms))
    out = [next((k for k in DEFAULT_ROLES[role] if k in common and better.get(k)), "") for role in ROLE_BETTER]
    order = schema_order(arms, list(dict.fromkeys(k for m in arms[0].members for k in m.run.keys)))
    out += [k for k in order if k in common and better.get(k)]
    return list(dict.fromkeys(k for k in out if k))[:MAX_METRICS]


def summary_lines(runs: Sequence[Any], tags: Mapping[str, str] | None = None,
                  pattern: re.Pattern[str] | None = None, baseline: str | None = None) -> list[str]:
    """The comparison lines for ``runs`` in summary order (see the module doc); [] when they are one arm.
    ``tags``: run id -> its summary tag; ``pattern``: the seed part of names, ``baseline``: the arm the others are
    compared with, where it is one (``[compare] group`` and ``baseline``; default: the first run's arm)."""
    groups = group_runs([r for r in runs if len(r)], pattern)
    if len(groups) < 2:
        return []
    if baseline in groups:
        groups = {baseline: groups[baseline], **{g: m for g, m in groups.items() if g != baseline}}
    tags = tags or {}
    names = {g: (tags.get(ms[0].run.run, g) if len(ms) == 1 else g) for g, ms in groups.items()}
    try:
        arms = make_arms(groups, "step")
        window = choose_window(arms, 0.1)
    except CompareError as e:
        return [f"compare: {sanitize(str(e))}"]
    if any(j - i < MIN_WINDOW_ROWS for a in arms for i, j in (ax.rows(window.lo, window.hi) for ax in a.axes)):
        return []  # too short to say anything (a window of a few rows per run)
    every = {k for a in arms for m in a.members for k in m.run.keys}
    better = directions(arms, sorted(every))
    metrics = _key_metrics(arms, better)
    if not metrics:
        return []
    baseline = arms[0].name
    results = compare(arms, baseline, metrics, window, better)
    shown = {a.name: names[a.name] for a in arms}
    lo, hi = math.ceil(window.lo), math.floor(window.hi)  # the steps in it
    within = " within runs: one seed each" if within_runs(results) else ""
    holm = "; Holm" if family_words(results) else ""  # (the verdicts over several arms tested: few tokens)
    lines = [f"Δ vs {sanitize(shown[baseline])} (95% CI{within}{holm}), steps {lo}-{hi}:"]
    for m in metrics:
        direction = better.get(m)
        text = compact_line([r for r in results if r.metric == m], shown, baseline,
                            None if direction is None else direction == "higher")
        if text is not None:
            lines.append(text)
    return lines if len(lines) > 1 else []
