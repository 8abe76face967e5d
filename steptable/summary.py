"""Compact run summaries for agents and reports: ``steptable summary PATH...``. Pure, stdlib only.

One block per call. Per run, a header line: steps done, rate, age of the last row, resume points, bad lines. Then
one table row per key column (first / last / min / max / trend), and the alerts so far. Several runs (arms) share
one table: one row per column per arm, the name only on the first, arms lettered a, b, c... in the header lines,
so the values of a column sit right under each other. Text is fixed-width; ``fmt="md"`` gives a markdown table.

Definitions
- Values are read with :func:`steptable.alerts.cell_float`: (n, d) fractions are rates n/d, bools 0/1, numeric
  strings numbers; NaN (missing in stored columns) and other text are skipped. min / max over finite values.
- trend: mean of the last 10% of a column's values vs the 10% before (at least one value each). Shown as a signed
  percentage of |previous mean| (``+12%``); when the previous mean is under a tenth of the column's largest |value|
  (a column that crosses zero) it is the signed absolute change instead (``+.031``, no %).
- rate: median over the last 200 row pairs of seconds per step: ``1.93 s/step`` at 1 s/step or slower, else
  ``step/min``.
- key columns (when ``columns`` is None): numeric, non-constant, most often present first, at most
  ``max_columns``, step and time keys excluded; shown in first-seen order.
- alerts: passed per run (keyed by ``run.run`` or ``"run/arm"``); when ``alerts`` is None they are computed with
  :func:`steptable.alerts.scan` (NaN cells treated as missing). At most 3 are listed: errors first, then the latest.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from steptable.alerts import Alert, AlertConfig, cell_float, fmt_age, scan
from steptable.formatting import cut, fmt_auto, sanitize


class RunLike(Protocol):
    run: str
    arm: str
    keys: list[str]
    steps: Sequence[int]
    resumes: list[int]
    bad_count: int
    last_update: float | None
    wall_times: Sequence[float]

    def column(self, key: str) -> Sequence[Any]: ...

    def __len__(self) -> int: ...


SKIP_KEYS = frozenset({"step", "_step", "global_step", "ts", "time", "timestamp", "_timestamp", "wall_time",
                       "_runtime", "run", "arm"})
MAX_ALERTS = 3
TREND_SHARE = 0.1
_HEAD = ("first", "last", "min", "max", "trend")


@dataclass
class ColStats:
    present: int = 0  # numeric finite values
    other: int = 0  # non-numeric present cells (text)
    first: float = math.nan
    last: float = math.nan
    lo: float = math.nan
    hi: float = math.nan
    trend: str = "-"
    last_text: str = ""

    @property
    def varies(self) -> bool:
        return self.present >= 2 and self.lo != self.hi

    def cells(self) -> list[str]:
        if not self.present:
            return ["-", cut(sanitize(self.last_text), 12) if self.last_text else "-", "-", "-", "-"]
        return [fmt_auto(self.first), fmt_auto(self.last), fmt_auto(self.lo), fmt_auto(self.hi), self.trend]


def column_stats(values: Sequence[Any]) -> ColStats:
    """first / last / min / max / trend of one column (see the module doc)."""
    st = ColStats()
    xs: list[float] = []
    for v in values:
        x = cell_float(v)
        if x is None:
            if isinstance(v, str) and v.strip():
                st.other += 1
                st.last_text = v
            continue
        if math.isfinite(x):
            xs.append(x)
    if not xs:
        return st
    st.present = len(xs)
    st.first, st.last, st.lo, st.hi = xs[0], xs[-1], min(xs), max(xs)
    st.trend = _trend(xs, max(abs(st.lo), abs(st.hi)))
    return st


def _trend(xs: Sequence[float], scale: float) -> str:
    n = len(xs)
    if n < 2:
        return "-"
    k = min(max(1, round(n * TREND_SHARE)), n // 2)
    prev = sum(xs[n - 2 * k : n - k]) / k
    last = sum(xs[n - k :]) / k
    delta = last - prev
    if abs(prev) >= 0.1 * scale and prev != 0:
        pct = 100 * delta / abs(prev)
        if abs(pct) < 0.5:
            return "0%"
        body = f"{abs(pct):.0f}" if abs(pct) < 1000 else fmt_auto(abs(pct))
        return f"{'+' if pct > 0 else '-'}{body}%"
    if delta == 0:
        return "0"
    return ("+" if delta > 0 else "") + fmt_auto(delta)


def run_label(run: RunLike) -> str:
    name, arm = sanitize(str(run.run)), sanitize(str(run.arm or ""))
    return name if not arm or arm == name else f"{name}/{arm}"


def rate_text(steps: Sequence[int], wall_times: Sequence[float], pairs: int = 200) -> str | None:
    """Median seconds per step over the last ``pairs`` row pairs with both clocks moving forward."""
    n = min(len(steps), len(wall_times))
    per: list[float] = []
    for i in range(max(1, n - pairs), n):
        try:
            ds = float(steps[i]) - float(steps[i - 1])
            dt = float(wall_times[i]) - float(wall_times[i - 1])
        except (TypeError, ValueError):
            continue
        if ds > 0 and dt > 0 and math.isfinite(dt):
            per.append(dt / ds)
    if not per:
        return None
    per.sort()
    m = len(per)
    sps = per[m // 2] if m % 2 else 0.5 * (per[m // 2 - 1] + per[m // 2])
    return f"{fmt_auto(sps)} s/step" if sps >= 1 else f"{fmt_auto(60 / sps)} step/min"


def header_text(run: RunLike, now: float) -> str:
    """``steps 0-9999, 1.93 s/step, upd 42s ago, resumed 2500,7000, bad 3`` (zero counts left out)."""
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
    if run.last_update is not None and math.isfinite(run.last_update):
        parts.append(f"upd {fmt_age(now - run.last_update)} ago")
    if run.resumes:
        shown = ",".join(str(r) for r in run.resumes[:5])
        more = f" +{len(run.resumes) - 5}" if len(run.resumes) > 5 else ""
        parts.append(f"resumed {shown}{more}")
    if run.bad_count:
        parts.append(f"bad {run.bad_count}")
    return ", ".join(parts)


def pick_columns(runs: Sequence[RunLike], stats: Mapping[tuple[int, str], ColStats], max_columns: int) -> list[str]:
    """Numeric, non-constant columns, most present first, up to ``max_columns``; first-seen order."""
    order: dict[str, None] = {}
    for r in runs:
        order.update(dict.fromkeys(r.keys))
    score: dict[str, float] = {}
    for key in order:
        if key in SKIP_KEYS:
            continue
        best = 0.0
        for i, r in enumerate(runs):
            st = stats.get((i, key))
            if st is not None and st.varies:
                best = max(best, st.present / max(1, len(r.steps)))
        if best > 0:
            score[key] = best
    keep = set(sorted(score, key=lambda k: -score[k])[: max(0, max_columns)])
    return [k for k in order if k in keep]


def _alerts_for(run: RunLike, alerts: Mapping[str, Sequence[Alert]] | None) -> Sequence[Alert]:
    if alerts is not None:
        got = alerts.get(f"{run.run}/{run.arm}")
        return got if got is not None else alerts.get(run.run, ())
    cfg = AlertConfig(nan_missing=True)
    wanted = {k for keys in cfg.role_keys().values() for k in keys}
    cols = {k: run.column(k) for k in run.keys if k in wanted}
    walls = run.wall_times if len(run.wall_times) == len(run.steps) else None
    return scan(run.steps, cols, walls, cfg)


def alerts_text(found: Sequence[Alert], limit: int = MAX_ALERTS) -> list[str]:
    """``alerts 14 (2E 12W):`` then up to ``limit`` lines: errors first (earliest), then the latest warnings."""
    if not found:
        return ["alerts 0"]
    ne = sum(1 for a in found if a.level == "E")
    errs = [a for a in found if a.level == "E"][:limit]
    warns = [a for a in found if a.level != "E"]
    room = limit - len(errs)
    shown = errs + (warns[-room:] if room > 0 else [])
    shown.sort(key=lambda a: a.step)
    counts = " ".join(f"{n}{lv}" for n, lv in ((ne, "E"), (len(found) - ne, "W")) if n)
    more = f", last {len(shown)}" if len(shown) < len(found) else ""
    return [f"alerts {len(found)} ({counts}{more}):", *(a.line() for a in shown)]


def _table_text(head: list[str], rows: list[list[str]], left: int) -> list[str]:
    """Fixed width: the first ``left`` cells left-aligned, the rest right-aligned, one space between."""
    widths = [max(len(r[j]) for r in [head, *rows]) for j in range(len(head))]
    out = []
    for r in [head, *rows]:
        cells = [c.ljust(w) if j < left else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))]
        out.append(" ".join(cells).rstrip())
    return out


def _table_md(head: list[str], rows: list[list[str]], left: int) -> list[str]:
    def esc(c: str) -> str:
        return c.replace("\\", "\\\\").replace("|", "\\|") or " "

    sep = ["---" if j < left else "--:" for j in range(len(head))]
    return ["| " + " | ".join(esc(c) for c in r) + " |" for r in [head, sep, *rows]]


def summarize(
    runs: Sequence[RunLike],
    *,
    columns: Sequence[str] | None = None,
    now: float | None = None,
    fmt: Literal["text", "md"] = "text",
    alerts: Mapping[str, Sequence[Alert]] | None = None,
    max_columns: int = 20,
) -> str:
    """One compact block for ``runs`` (see the module doc); several runs share one table."""
    now = time.time() if now is None else now
    multi = len(runs) > 1
    tags = [_arm_tag(i) for i in range(len(runs))]
    stats: dict[tuple[int, str], ColStats] = {}
    for i, r in enumerate(runs):
        for key in r.keys if columns is None else [k for k in columns if k in r.keys]:
            stats[(i, key)] = column_stats(r.column(key))
    keys = pick_columns(runs, stats, max_columns) if columns is None else list(columns)

    lines: list[str] = []
    for i, r in enumerate(runs):
        label = f"{tags[i]}: {run_label(r)}" if multi else run_label(r)
        text = f"{label}: {header_text(r, now)}"
        lines.append(f"- {text}" if fmt == "md" and multi else (f"**{label}**: {header_text(r, now)}"
                                                                 if fmt == "md" else text))
    if fmt == "md":
        lines.append("")
    rows: list[list[str]] = []
    for key in keys:
        for i in range(len(runs)):
            name = sanitize(key) if i == 0 else ""
            st = stats.get((i, key), ColStats())
            rows.append([name, tags[i], *st.cells()] if multi else [name, *st.cells()])
    if rows:
        head = ["col", "arm", *_HEAD] if multi else ["col", *_HEAD]
        lines.extend((_table_md if fmt == "md" else _table_text)(head, rows, 2 if multi else 1))
    if fmt == "md":
        lines.append("")
    for i, r in enumerate(runs):
        al = alerts_text(_alerts_for(r, alerts))
        if multi:
            al[0] = f"{tags[i]} {al[0]}"
        lines.extend(f"- {a}" if fmt == "md" and j else a for j, a in enumerate(al))
    return "\n".join(lines) + "\n"


def _arm_tag(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i] if i < 26 else f"{letters[i // 26 - 1]}{letters[i % 26]}"
