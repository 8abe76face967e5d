"""Compact run summaries for agents and reports: ``steptable summary PATH...``. Pure, stdlib only.

Per run a header line (steps done, rate, age of the last row, resume points, bad lines; zero counts left out),
one table row per key column (first / last / min / max / tr%), then the alerts so far. Several runs (arms) share
one table, one row per column per arm (name on the first only, arms lettered a, b, ... in the header lines);
arms in the same state (header text) share one header line, arms with the same alerts (``alerts 0``) one alerts
line; ``max_rows`` bounds the rows they share. ``fmt="text"``: cells one space apart in header order, unpadded,
because every run of padding spaces is an o200k token: aligning the numbers costs ~15% more tokens
(bench/bench_agent.py measures it). ``align=True`` aligns them: right, each column one width (at least 4, enough
for 2 significant digits of all its values), each value the most digits (<= 3) that fit it.
``fmt="md"``: a markdown table.

Definitions
- Values are read with :func:`steptable.alerts.engine.cell_float`: (n, d) fractions are rates n/d, bools 0/1, numeric
  strings numbers; NaN (missing in stored columns) and other text are skipped, and so is inf, except that
  ``last`` is the column's last number even when it is inf or a logged NaN (a KL gone to inf must not read as its
  last finite value; with ``cells()`` an absent cell is None, told apart from a logged NaN). ``-``: no value.
- tr% (the recent trend) = 100 * (mean of the last 10% of the values - mean of the 10% before, each without its
  top and bottom tenth) / max(|mean before|, median |x| / 4, noise), rounded to an integer (``+12``, ``-3``), and
  ``=`` when the difference is within the noise (with the line's end one o200k token, where `` 0`` takes three):
  under 2 standard errors of the two trimmed means (a median of values on a grid, a reward that is a mean of 32
  outcomes, moved by whole grid steps: false trends). The noise
  (the sd of one value about the series' local level) comes from successive differences, so a slope is not taken
  for noise; it and |x| are read over the last 20% of the values (at least the last 20). Flat noise therefore
  reads ``=`` (not +57 for N(0.05, 0.3)); a move beyond it keeps its sign and size relative to the level, and the
  median |x| and noise terms keep columns that cross zero readable. A series held between updates (logged every
  step, updated every h: thresholds between refreshes, an eval score carried forward; read from equal successive
  values far beyond chance, h the lower quartile of its runs) is judged by its updates: its noise from the
  differences of successive runs' values (a 0 for each update hidden in a run, the slope out), read over at least
  20 holds, each window counting k / h updates (at least one), the t threshold on the updates' count. A series
  that wanders otherwise (autocorrelated) shows its wandering.
- rate: median seconds per step over the last 200 spans between the rows where the clock moves forward (a tracker
  that stamps rows in batches is timed by its batches): ``1.93s/step`` at 1 s/step or slower, else ``120 step/min``.
- key columns (when ``columns`` is None; step / time keys excluded), at most ``max_columns`` per group of runs
  that share a layout (``by_schema``: each trainer, the arms of one experiment; a run gets rows only in its group's
  columns, the groups' columns in the order of their first run), in this order: the columns each run's schema
  declares, in its table's (``tail``) order, then the keys alerts watch (DEFAULT_ROLES), unless dense and constant
  (a fixed lr); keys a schema rule promotes (evaluation scores, which rank last by presence) that vary, have one
  value or a non-finite one, or are held at one value and named as a score (an accuracy stuck at .25 at every
  evaluation is shown; the evaluation's 64 episodes and a clip ratio 0 by construction are not); then varying
  numeric keys, most present first (a logged NaN is present).
- alerts: given per run (keyed ``"run/arm"`` or ``run.run``); when ``alerts`` is None they are computed with
  :func:`steptable.alerts.history.scan` (NaN cells read as missing). One line per kind (level, column, detector), at
  most MAX_ALERTS: errors first, then the rarer and more recent warnings ahead of the routine repeated ones
  (:func:`alerts_text`); ``tail --alerts-only`` prints every alert.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Literal

from steptable.alerts.engine import Alert, AlertConfig, earlier_end_alerts, end_alert, fmt_age
from steptable.alerts.history import scan
from steptable.alerts.text import MAX_ALERTS as MAX_ALERTS
from steptable.alerts.text import alert_groups as alert_groups
from steptable.alerts.text import alerts_text as alerts_text
from steptable.summary.keycols import _ROLE_KEYS, Groups, RunLike, picked
from steptable.summary.trend import ColStats as ColStats
from steptable.summary.trend import column_glance
from steptable.summary.trend import column_stats as column_stats
from steptable.summary.trend import trend_pct as trend_pct
from steptable.table.cells import key_name, one_word
from steptable.table.formatting import (
    cut,
    display_width,
    fit_number,
    fmt_auto,
    md_escape,
    pad,
    reads_as,
    sanitize,
)
from steptable.table.runinfo import closed_at, end_words, ended_by

_HEAD = ("first", "last", "min", "max", "tr%")
#: the table rows several arms share when the caller sets this budget (``summary``'s default; ~12 o200k tokens a
#: row: 3 arms' summary with its comparison lines stays within ~300 tokens)
ARM_ROWS = 15


def _trend_text(t: float | None) -> str:
    if t is None:
        return "-"
    if abs(t) < 0.5:
        return "="
    return ("+" if t > 0 else "-") + (f"{abs(t):.0f}" if abs(t) < 999.5 else fmt_auto(abs(t)))


def _short(x: float, digits: int) -> str:
    """fmt_auto, but positional for 1e-5 <= |x| < 1e-3: ``.00077`` is 3 o200k tokens where ``7.7e-4`` is 7."""
    if not reads_as(1e-5, digits) <= abs(x) < reads_as(1e-3, digits):  # (a float32 1e-5 is .00001 too)
        return fmt_auto(x, digits)
    s = f"{x:.{digits - 1 - math.floor(math.log10(abs(x)))}f}".rstrip("0")
    return s.replace("0.", ".", 1)


def _cells(stats: Sequence[ColStats], align: bool) -> list[list[str]]:
    """Formatted first / last / min / max / tr% per row. With ``align`` each number column gets one width (at least
    4, enough for 2 significant digits of every value) and every value the most digits (up to 3) that fit it, so
    aligning costs few padding tokens; a positional small number only where it fits."""
    cols = [[getattr(st, f) for st in stats if st.present] for f in ("first", "last", "lo", "hi")]
    widths = [max([4, *(len(fmt_auto(x, 2)) for x in c)]) for c in cols]
    out = []
    for st in stats:
        if not st.present:  # no finite number: its last inf / logged NaN, else its first and last text
            if st.logged:
                out.append(["-", fmt_auto(st.last), "-", "-", "-"])
            else:
                out.append([cut(one_word(sanitize(t)), 12) or "-" for t in (st.first_text, st.last_text)] + ["-"] * 3)
            continue
        nums = []
        for x, w in zip((st.first, st.last, st.lo, st.hi), widths, strict=True):
            a, b = _short(x, 3), _short(x, 2)
            nums.append(a if not align or len(a) <= w else b if len(b) <= w else fit_number(x, w))
        out.append([*nums, _trend_text(st.trend)])
    return out


def run_label(run: RunLike, unique_arm: bool = True) -> str:
    """The arm when it names the run unambiguously (cheapest for a reader), else the run's path, led by the arm
    where the path does not show it: ``arm (path)``, as tail titles a run. (``path/arm`` would read as a directory
    under the file.)"""
    name, arm = sanitize(str(run.run)), sanitize(str(run.arm or ""))
    if arm and unique_arm:
        return arm
    parts = name.replace("#", "/").split("/")  # (an arm split off a shared file: ``file#arm``)
    shown = {p for part in parts for p in (part, part.rsplit(".", 1)[0])}  # a file's stem: verl's <experiment>.jsonl
    return name if not arm or arm in shown else f"{arm} ({name})"


def rate_text(steps: Sequence[int], wall_times: Sequence[float], pairs: int = 200) -> str | None:
    """Median seconds per step over the last ``pairs`` spans between the rows where the clock moves forward: each
    span from the last row of one time to the last row of the next later time, over the steps between them. A
    tracker that stamps its rows in batches (trackio: every row of a flush gets the flush's time, every 0.5 s) is
    timed by its batches, the steps of a batch over the time since the batch before; rows with a clock each are
    timed row by row."""
    n = min(len(steps), len(wall_times))
    ends: list[tuple[float, float]] = []  # (step, time) of the last row of each time, newest first
    for i in range(n - 1, -1, -1):
        try:
            step, t = float(steps[i]), float(wall_times[i])
        except (TypeError, ValueError):
            continue
        if not math.isfinite(t):
            continue
        if ends and t == ends[-1][1]:
            continue  # (an earlier row of the same time: the time's last row is taken)
        ends.append((step, t))
        if len(ends) > pairs:
            break
    per: list[float] = []
    for (s1, t1), (s0, t0) in itertools.pairwise(ends):
        ds, dt = s1 - s0, t1 - t0
        if ds > 0 and dt > 0:
            per.append(dt / ds)
    if not per:
        return None
    per.sort()
    m = len(per)
    sps = per[m // 2] if m % 2 else 0.5 * (per[m // 2 - 1] + per[m // 2])
    return f"{fmt_auto(sps)}s/step" if sps >= 1 else f"{fmt_auto(60 / sps)} step/min"


def header_text(run: RunLike, now: float) -> str:
    """``steps 0-9999, 1.93s/step, upd 42s ago, ended, resumed 2500,7000, bad 3`` (zero counts left out; ``ended``
    where the run's StepLogger was closed, ``ended with RuntimeError`` or ``interrupted`` where its ``with`` block
    ended so)."""
    steps = run.steps
    parts: list[str] = []
    if len(steps) == 0:
        parts.append("no rows")
    else:
        s0, s1 = steps[0], steps[-1]
        span = f"steps {s0}-{s1}" if s1 != s0 else f"step {s0}"
        if len(steps) != s1 - s0 + 1:
            span += f" ({len(steps)} rows)"
        parts.append(span)
        rate = rate_text(steps, run.wall_times)
        if rate:
            parts.append(rate)
    last = run.last_update if run.last_update is not None else (run.wall_times[-1] if run.wall_times else None)
    if last is not None and math.isfinite(last):
        from steptable.alerts.activity import IDLE, store_activity

        act = store_activity(run, now) if hasattr(run, "lock") else None  # (a RunStore: the judgement's evidence)
        parts.append(act.words() if act is not None and act.state == IDLE else f"upd {fmt_age(now - last)} ago")
    meta = getattr(run, "meta", None)
    if isinstance(meta, dict) and closed_at(info := meta.get("runinfo")) is not None:
        end = ended_by(info)  # its StepLogger was closed: a run that ended (finished or died), not a hung one
        parts.append("ended" if end is None else end_words(end))
    if isinstance(meta, dict) and isinstance(two := meta.get("two_writers"), str):  # (not resumes: readers.arms)
        parts.append(f"two writers: {sanitize(two)}")
    if run.resumes:
        parts.append(resumed_words(run.resumes))
    if run.bad_count:
        parts.append(f"bad {run.bad_count}")
    return ", ".join(parts)


def _alerts_for(run: RunLike, alerts: Mapping[str, Sequence[Alert]] | None) -> Sequence[Alert]:
    if alerts is not None:
        got = alerts.get(f"{run.run}/{run.arm}")
        return got if got is not None else alerts.get(run.run, ())
    cols = {k: run.column(k) for k in run.keys if k in _ROLE_KEYS}
    walls = run.wall_times if len(run.wall_times) == len(run.steps) else None
    found = scan(run.steps, cols, walls, AlertConfig(nan_missing=True), resumes=set(run.resumes))
    meta = getattr(run, "meta", None)  # a crash or an interruption of its StepLogger's ``with`` block
    # a RunStore's alerts of rows a resume replaced, and how the process before a resume ended
    earlier = earlier_end_alerts(meta.get("runinfo")) if isinstance(meta, dict) else []
    found = [*getattr(run, "replaced", ()), *earlier, *found]
    end = end_alert(meta.get("runinfo"), run.steps[-1]) if isinstance(meta, dict) and len(run.steps) else None
    return found if end is None else [*found, end]


def _table_text(head: list[str], rows: list[list[str]], align: bool) -> list[str]:
    """One space between cells, no padding (each run of pad spaces costs a token): several arms' rows of one column
    after its first start with a space and their tag (`` b .27 ...``). With ``align`` every column is padded,
    numbers right-aligned and the trend (last, so that a short value leaves no padding token before it)
    left-aligned."""
    widths = [max(display_width(r[j]) for r in [head, *rows]) for j in range(len(head))] if align else [0] * len(head)
    num = [h in _HEAD[:4] for h in head]
    return [" ".join(pad(c, w, "right" if n else "left") for c, w, n in zip(r, widths, num, strict=True)).rstrip()
            for r in [head, *rows]]


def _table_md(head: list[str], rows: list[list[str]]) -> list[str]:
    def esc(c: str) -> str:
        return md_escape(c) or " "

    sep = ["--:" if h in _HEAD else "---" for h in head]
    return ["| " + " | ".join(esc(c) for c in r) + " |" for r in [head, sep, *rows]]


def summarize(
    runs: Sequence[RunLike],
    *,
    columns: Sequence[str] | None = None,
    now: float | None = None,
    fmt: Literal["text", "md"] = "text",
    alerts: Mapping[str, Sequence[Alert]] | None = None,
    max_columns: int = 20,
    align: bool = False,
    labels: Mapping[str, str] | None = None,
    skip: Collection[str] = (),
    groups: Groups | None = None,
    comparison: Sequence[str] = (),
    max_rows: int | None = None,
) -> str:
    """One compact block for ``runs`` (see the module doc); several runs share one table. ``skip``: keys never
    picked as key columns (those a schema keeps out of its table: a step counter again, a legacy mirror).

    ``labels`` names a key's row (the table's short header, e.g. ``pg_loss`` for ``actor/pg_loss``); default: the key.
    ``groups``: ``by_schema(runs)``, where the caller has it already. ``comparison``: lines placed after the table
    (steptable.compare.brief's differences between arms; text from logs, sanitized by their maker).
    ``max_rows``: with several runs and picked columns, the table keeps its first whole columns (in its order, at
    least one) whose rows fit this many, and names the others on a line after it (``more columns: accuracy``).
    """
    if not runs:
        return "no runs\n"
    md, multi = fmt == "md", len(runs) > 1
    now = time.time() if now is None else now
    tags = [_arm_tag(i) for i in range(len(runs))] if multi else [""]
    stats: dict[tuple[int, str], ColStats] = {}
    for i, r in enumerate(runs):  # (min, max and the trend, most of the cost, only of the rows shown: below)
        present = set(r.keys)
        for key in r.keys if columns is None else [k for k in columns if k in present]:
            stats[(i, key)] = _stats(r, key, glance=True)
    picks = picked(runs, stats, max_columns, skip, groups=groups) if columns is None else None
    keys = list(picks) if picks is not None else list(columns or ())

    lines: list[str] = []
    heads: list[tuple[str, str]] = []
    for tag, r in zip(tags, runs, strict=True):
        unique = sum(1 for o in runs if o.arm == r.arm) == 1
        name = md_escape(run_label(r, unique)) if md else run_label(r, unique)  # a directory named "[x](http:..)"
        label = f"{tag}: {name}" if multi else name
        heads.append((f"**{label}**" if md and not multi else label, header_text(r, now)))
    for labels_, state in _together(heads):  # arms in one state (steps, rate, age) share its line
        lines.append(f"{'- ' if md and multi else ''}{', '.join(labels_)}: {state}")
    # Several runs: a run without a value in a column gets no row in it (runs of different trainers share few
    # keys: their rows of dashes would be half the tokens), nor one in a column its trainer's budget left out, unless
    # the columns were asked for by name.
    order = [(key, i) for key in keys for i in range(len(runs))
             if not multi or picks is None or (i in picks[key] and _has_value(stats.get((i, key))))]
    names = _row_names(keys, order, labels or {})
    rank = {k: r for r, k in enumerate(names)}
    order.sort(key=lambda ki: rank[ki[0]])  # (stable) rows of one name together, where two keys share it
    more: list[str] = []
    if multi and picks is not None and max_rows is not None and len(order) > max_rows:
        order, more = _fit_rows(order, max_rows)
    for key, i in order:
        if (i, key) in stats:
            stats[(i, key)] = _stats(runs[i], key)
    cells = _cells([stats.get((i, key), ColStats()) for key, i in order], align and not md)
    rows = [[names[key] if j == 0 or names[order[j - 1][0]] != names[key] else "",
             *([tags[i]] if multi else []), *c] for j, ((key, i), c) in enumerate(zip(order, cells, strict=True))]
    if rows:
        head_row = ["col", *(["arm"] if multi else []), *_HEAD]
        lines.extend(["", *_table_md(head_row, rows), ""] if md else _table_text(head_row, rows, align))
    elif md:
        lines.append("")
    if more:
        shown = ", ".join(dict.fromkeys(names[k] for k in more))
        lines.append(f"- more columns: {md_escape(shown)}" if md else f"more columns: {shown}")
    lines.extend(f"- {md_escape(c)}" if md else c for c in comparison)
    said: list[tuple[str, str]] = []
    for tag, r in zip(tags, runs, strict=True):
        found = _alerts_for(r, alerts)
        told = (alerts_text(found, end=r.steps[-1] if len(r.steps) else None) if found or len(r.steps)
                else ["alerts: none checked (no rows)"])  # "alerts 0" would pass for a clean run
        said.append((tag, "\n".join(told)))
    for tags_, text in _together(said):  # arms with the same alerts (``alerts 0``) share their lines
        first, *rest = text.split("\n")
        if md:  # alert lines quote keys from the file
            first, rest = md_escape(first), [md_escape(x) for x in rest]
        first = f"{' '.join(tags_)} {first}" if multi else first
        lines.extend([f"- {first}", *(f"  - {x}" for x in rest)] if md else [first, *rest])
    return "\n".join(lines) + "\n"


def _fit_rows(order: Sequence[tuple[str, int]], max_rows: int) -> tuple[list[tuple[str, int]], list[str]]:
    """The rows of the first whole columns that fit ``max_rows`` (the first column always), and the keys left out."""
    keys = list(dict.fromkeys(k for k, _ in order))
    count = {k: 0 for k in keys}
    for k, _ in order:
        count[k] += 1
    kept, total = 0, 0
    while kept < len(keys) and (kept == 0 or total + count[keys[kept]] <= max_rows):
        total += count[keys[kept]]
        kept += 1
    return [ki for ki in order if ki[0] in keys[:kept]], keys[kept:]


def _together(items: Sequence[tuple[str, str]]) -> list[tuple[list[str], str]]:
    """(names, text) pairs with the same text joined: each text once, with the names that have it, in the order
    of their first."""
    out: dict[str, list[str]] = {}
    for name, text in items:
        out.setdefault(text, []).append(name)
    return [(names, text) for text, names in out.items()]


def _row_names(keys: Sequence[str], order: Sequence[tuple[str, int]], labels: Mapping[str, str]) -> dict[str, str]:
    """Key -> the name its rows carry, in the order the names come. Two trainers' keys for one quantity under one
    short name (verl's ``actor/entropy`` and TRL's ``entropy``, both ``entropy``) share one block of rows, the name
    said once, where no run has rows under both; where one does, each is named by its own key."""
    name = {k: key_name(labels.get(k, k)) for k in keys}
    runs: dict[str, list[int]] = {}
    for key, i in order:
        runs.setdefault(key, []).append(i)
    by_name: dict[str, list[str]] = {}
    for k in keys:
        by_name.setdefault(name[k], []).append(k)
    out: dict[str, str] = {}
    for shown, group in by_name.items():
        rows = [i for k in group for i in runs.get(k, [])]
        for k in group:
            out[k] = shown if len(group) == 1 or len(rows) == len(set(rows)) else key_name(k)
    return out


def _stats(run: RunLike, key: str, glance: bool = False) -> ColStats:
    """``column_stats`` of a run's column (with ``glance``: ``column_glance``, what picking the key columns reads):
    a store's cells tell absent (None) from a logged NaN (a column of numbers without an absent cell read as its
    doubles: the same values)."""
    stats = column_glance if glance else column_stats
    numbers = getattr(run, "numbers", None)
    # (no copy: summary's runs are read whole before their statistics, and nothing adds rows to them after)
    if numbers is not None and (nums := numbers(key, view=True)) is not None:
        return stats(nums, True)
    cells = getattr(run, "cells", None)
    return stats(cells(key), True) if cells is not None else stats(run.column(key), False)


def _has_value(st: ColStats | None) -> bool:
    return st is not None and bool(st.logged or st.last_text)


def arm_tag(i: int) -> str:
    """The tag of the ``i``-th run of a summary of several (``a``, ``b``, ... ``aa``)."""
    return _arm_tag(i)


def _arm_tag(i: int) -> str:
    """a..z, aa..zz, aaa...: spreadsheet-style names for any number of arms."""
    tag, i = "", i + 1
    while i:
        i, r = divmod(i - 1, 26)
        tag = "abcdefghijklmnopqrstuvwxyz"[r] + tag
    return tag


def resumed_words(resumes: Sequence[int]) -> str:
    """The steps a run was resumed at, as summary and ``runs`` say them: ``resumed 80,120`` (the first five, then
    how many more)."""
    more = f" +{len(resumes) - 5}" if len(resumes) > 5 else ""
    return f"resumed {','.join(str(r) for r in resumes[:5])}{more}"
