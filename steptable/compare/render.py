"""A comparison as text, markdown or JSONL, and the one-line form ``summary`` adds. Pure.

Numbers: a mean and its interval get enough significant digits for the interval's half-width to show two (at
least 3, at most 7), so ``.512 [.498, .526]`` and ``1.00012 [1.00008, 1.00016]`` both read; a difference is signed.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence

from steptable.compare.core import Arm, Result, Window
from steptable.table.cells import first_few
from steptable.table.columns import aligned_width
from steptable.table.formatting import fmt_auto, md_escape, pad, sanitize


def _digits(center: float, lo: float | None, hi: float | None) -> int:
    if lo is None or hi is None or not hi > lo:
        return 3
    half = (hi - lo) / 2
    scale = max(abs(center), abs(lo), abs(hi))
    if scale == 0:
        return 3
    return max(3, min(7, math.ceil(math.log10(scale / half)) + 2))


def _fmt(v: float, digits: int, signed: bool = False) -> str:
    s = fmt_auto(v, digits)
    return "+" + s if signed and v > 0 else s


def interval_text(center: float | None, lo: float | None, hi: float | None, signed: bool = False) -> str:
    """``.512 [.498, .526]``; ``-`` with no value; the value alone with no interval."""
    if center is None:
        return "-"
    d = _digits(center, lo, hi)
    if lo is None or hi is None:
        return _fmt(center, d, signed)
    return f"{_fmt(center, d, signed)} [{_fmt(lo, d, signed)}, {_fmt(hi, d, signed)}]"


def _arms_line(arms: Sequence[Arm]) -> str:
    one = ("1 seed (interval from the other arms' seed spread)" if any(len(a.members) > 1 for a in arms)
           else "1 seed (interval from 10 batch means)")
    if len(arms) > ARMS_LISTED:  # (a sweep: how many arms of how many seeds, not each by name)
        sizes = Counter(len(a.members) for a in arms)
        return f"arms: {len(arms)}, " + ", ".join(
            ("each" if k == len(arms) else f"{k}") + (f" of {n} seeds" if n > 1 else f" of {one}")
            for n, k in sorted(sizes.items(), reverse=True))
    return "arms: " + ", ".join(f"{sanitize(a.name)} {f'{n} seeds' if (n := len(a.members)) > 1 else one}"
                                for a in arms)


def window_span(window: Window, steps: bool) -> str:
    """A window as a reader counts it: on the step axis the steps in it (2699.1-2999 holds 2700-2999: "2699" read
    as one step more), on another its bounds."""
    if steps:
        return f"steps {math.ceil(window.lo)}-{math.floor(window.hi)}"
    return f"{fmt_auto(window.lo, 4)}-{fmt_auto(window.hi, 4)}"


def header_lines(arms: Sequence[Arm], window: Window, baseline: str, left: Sequence[str] = ()) -> list[str]:
    x = arms[0].axes[0] if arms and arms[0].axes else None
    xname = sanitize(x.name if x is not None else "step")
    keys = sorted({sanitize(ax.key) for a in arms for ax in a.axes if ax.key is not None})
    read = f" ({', '.join(keys)})" if keys and keys != [xname] else ""
    lo, hi = window.common
    return [
        f"baseline {sanitize(baseline)}; x {xname}{read}, window {window_span(window, x is None or x.mode == 'step')} "
        f"({window.how} of the common range {fmt_auto(lo, 4)}-{fmt_auto(hi, 4)}"
        + (f": {sanitize(window.ended_by)})" if window.ended_by else ")"),
        _arms_line(arms),
        *([f"left out, logging none of the metrics: {first_few([sanitize(n) for n in left], 5)}"] if left else []),
    ]


def _rows(results: Sequence[Result], baseline: str) -> tuple[list[str], list[list[str]]]:
    missing = any(r.n_missing for r in results)
    head = ["metric", "arm", "n", "points", *(["missing"] if missing else []), "mean [95% CI]",
            f"Δ vs {sanitize(baseline)} [95% CI]", ""]
    rows = []
    prev = None
    for r in results:
        rows.append([
            sanitize(r.metric) if r.metric != prev else "", sanitize(r.arm), str(r.n_seeds), str(r.n_points),
            *([str(r.n_missing)] if missing else []), interval_text(r.mean, r.lo, r.hi),
            "" if r.arm == baseline else interval_text(r.delta, r.delta_lo, r.delta_hi, signed=True),
            r.verdict or ("drifts" if r.ci == "drift" else ""),
        ])
        prev = r.metric
    return head, rows


#: what a "drifts" cell means, under the table that has one
DRIFT_NOTE = ("drifts: one seed whose values wander over longer than its window's 10 batches (their means correlated "
              "beyond chance), so the window gives no interval and no verdict; seeds give one")


def _notes(results: Sequence[Result]) -> list[str]:
    return [*([DRIFT_NOTE] if any(r.ci == "drift" for r in results) else []),
            *([HOLM_NOTE] if unmarked(results) else [])]


def within_runs(results: Sequence[Result]) -> bool:
    """Are ``results`` (one metric's) intervals from within runs (every arm one seed: batch means), so that a
    difference beyond them is one of these runs, the seeds' spread unknown?"""
    return any(r.ci in ("batches", "drift") for r in results)


def tested(results: Sequence[Result]) -> int:
    """How many arms of ``results`` (one metric's) were tested against the baseline: those with an interval of their
    difference, the family Holm's procedure corrects for (:mod:`steptable.compare.family`); 1 or 0: no correction."""
    return sum(1 for r in results if r.delta_lo is not None and r.arm != r.baseline)


def family_words(results: Sequence[Result]) -> str:
    """``Holm over 7 arms``: what a mark is judged by where several arms of a metric were tested (the most of any
    metric of ``results``), else ``""``."""
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.metric, []).append(r)
    m = max((tested(rs) for rs in by.values()), default=0)
    return f"Holm over {m} arms" if m >= 2 else ""


def unmarked(results: Sequence[Result]) -> bool:
    """Is an arm of ``results`` apart from the baseline by its own 95% interval but not called so once the metric's
    other arms are counted (Holm's procedure)?"""
    return any(r.verdict is None and r.delta_lo is not None and r.delta_hi is not None
               and not r.delta_lo <= 0.0 <= r.delta_hi for r in results)


#: what an interval off 0 without a verdict means, under the table that has one
HOLM_NOTE = ("a Δ interval off 0 without a verdict: not beyond chance once all the metric's arms are counted (Holm's "
             "procedure, 5% family-wise)")


def _told(others: Sequence[Result]) -> list[str]:
    """How the arms ``others`` stand against the baseline: better / worse (their verdicts: beyond chance over the
    arms tested), not told apart (no verdict), no interval (one seed drifting, too few values), no value (the arm or
    the baseline has none in the window)."""
    counts = Counter(r.verdict if r.verdict in ("better", "worse") else
                     "no value" if r.delta is None else "no interval" if r.delta_lo is None else "not told apart"
                     for r in others)
    order = ("better", "worse", "not told apart", "no interval", "no value")
    return [f"{counts[k]} {k}" for k in order if counts[k]]


def verdict_lines(results: Sequence[Result], baseline: str, dirs: Mapping[str, str | None]) -> list[str]:
    """One line per metric whose direction ``dirs`` gives (``higher`` / ``lower``) and that two arms have a mean of:
    the arm of the best mean (a point estimate), its difference from the baseline and whether that is beyond chance
    (no interval: said so), and how the other arms stand against the baseline (:func:`_told`): which arm wins, and
    how sure that is. Beyond chance is the Results' verdict: where several arms were tested, Holm's procedure over
    them (:mod:`steptable.compare.family`), and the line says over how many (the best of many arms is often apart
    from the baseline by its own interval alone). Where every arm is one seed, chance is the runs' own noise, and
    the line says so."""
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.metric, []).append(r)
    out = []
    for metric, rs in by.items():
        way = dirs.get(metric)
        have = [r for r in rs if r.mean is not None]
        if way not in ("higher", "lower") or len(have) < 2:
            continue
        best = (max if way == "higher" else min)(have, key=lambda r: r.mean or 0.0)
        mean = interval_text(best.mean, best.lo, best.hi)
        line = f"{sanitize(metric)} ({way} is better): best {sanitize(best.arm)} {mean}"
        within = within_runs(rs)
        m = tested(rs)
        said = False  # (how many arms were tested: said once a line, where it matters first)
        if best.arm == baseline:
            line += " (the baseline)"
        elif best.delta is not None:
            chance = "the runs' own noise" if within else "chance"
            said = m >= 2 and best.delta_lo is not None
            beyond = ("no interval" if best.delta_lo is None else
                      ("beyond " if best.verdict == "better" else "not beyond ") + chance
                      + (f" over {m} arms" if said else ""))
            delta = interval_text(best.delta, best.delta_lo, best.delta_hi, signed=True)
            line += f", {delta} vs the baseline ({beyond})"
        told = _told([r for r in rs if r.arm != baseline])
        seeds = "; one seed each: the seeds' spread unknown" if within else ""
        against = f"against {sanitize(baseline)}" + (f" (Holm, {m} arms)" if m >= 2 and not said else "")
        out.append(f"{line}; {against}: {', '.join(told) or 'no other arm'}{seeds}")
    return out


#: arms a text or markdown table lists per metric, the baseline's included, before it keeps to the best (a sweep of
#: 100 arms compared as one table was 41,640 characters)
ARMS_LISTED = 10


def listed(results: Sequence[Result], baseline: str, dirs: Mapping[str, str | None],
           limit: int | None) -> tuple[list[Result], str | None]:
    """The results a table lists where more than ``limit`` arms (None: no limit) have them: per metric the baseline
    and the ``limit - 1`` arms of the best means (by the metric's direction; of the largest differences from the
    baseline where it has none), in the arms' order; and the line that says so (None where every arm is listed)."""
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.metric, []).append(r)
    n_arms = max((len(rs) for rs in by.values()), default=0)
    if limit is None or n_arms <= limit:
        return list(results), None
    out: list[Result] = []
    for metric, rs in by.items():
        way = dirs.get(metric)

        def rank(r: Result, way: str | None = way) -> float:
            if r.mean is None:
                return math.inf
            if way in ("higher", "lower"):
                return -r.mean if way == "higher" else r.mean
            return -abs(r.delta or 0.0)

        best = {id(r) for r in sorted((r for r in rs if r.arm != baseline), key=rank)[:max(limit - 1, 0)]}
        out += [r for r in rs if r.arm == baseline or id(r) in best]
    return out, (f"per metric the baseline and the {limit - 1} arms of the best means of {n_arms} (the largest "
                 "differences where the metric has no direction; the lines below count every arm; --all lists them)")


def text_report(arms: Sequence[Arm], window: Window, baseline: str, results: Sequence[Result],
                dirs: Mapping[str, str | None] | None = None, limit: int | None = None,
                left: Sequence[str] = ()) -> str:
    """The header, the table (of at most ``limit`` arms a metric: :func:`listed`), then (where ``dirs`` gives metrics
    a direction) the verdicts (:func:`verdict_lines`) of every arm."""
    shown, cut = listed(results, baseline, dirs or {}, limit)
    head, rows = _rows(shown, baseline)
    widths = [aligned_width(r[j] for r in [head, *rows]) for j in range(len(head))]
    right = {2, 3} | ({4} if head[4] == "missing" else set())
    lines = [" ".join(pad(c, w, "right" if j in right else "left") for j, (c, w) in enumerate(zip(r, widths,
             strict=True))).rstrip() for r in [head, *rows]]
    verdicts = verdict_lines(results, baseline, dirs or {})
    return "\n".join([*header_lines(arms, window, baseline, left), "", *lines, *([cut] if cut else []), *_notes(shown),
                      *(["", *verdicts] if verdicts else [])]) + "\n"


def md_report(arms: Sequence[Arm], window: Window, baseline: str, results: Sequence[Result],
              dirs: Mapping[str, str | None] | None = None, limit: int | None = None,
              left: Sequence[str] = ()) -> str:
    """:func:`text_report` as Markdown: the verdicts a list under the table."""
    shown, cut = listed(results, baseline, dirs or {}, limit)
    head, rows = _rows(shown, baseline)
    head[-1] = "verdict"
    num = {"n", "points", "missing"}
    sep = ["--:" if h in num else "---" for h in head]
    table = ["| " + " | ".join(md_escape(c) or " " for c in r) + " |" for r in [head, sep, *rows]]
    verdicts = [f"- {md_escape(v)}" for v in verdict_lines(results, baseline, dirs or {})]
    notes = [md_escape(n) for n in [*([cut] if cut else []), *_notes(shown)]]
    notes = ["", *notes] if notes else []
    return "\n".join([*(md_escape(h) for h in header_lines(arms, window, baseline, left)), "", *table, *notes,
                      *(["", *verdicts] if verdicts else [])]) + "\n"


def jsonl_report(results: Sequence[Result]) -> str:
    """One JSON object per (arm, metric) (:meth:`Result.record`); no NaN or inf in it (null instead)."""
    return "".join(json.dumps(r.record(), allow_nan=False) + "\n" for r in results)


def pm_text(center: float, lo: float | None, hi: float | None) -> str:
    """``+.030±.012``: a signed value and the half-width of its (symmetric) interval, the value to the half-width's
    last place; the half-width rounded as the Particle Data Group rounds errors: its three leading digits 100-354
    keep two significant digits (``.012``), 355-949 one (``.0056`` -> ``.006``), 950-999 go up to two (``.0097`` ->
    ``.010``); a place more where an interval off 0 would read as reaching it. The value alone without an
    interval."""
    if lo is None or hi is None:
        return _fmt(center, 3, signed=True)
    half = (hi - lo) / 2
    if half == 0:
        return _fmt(center, 3, signed=True) + "±0"
    power = math.floor(math.log10(half))
    lead = half / 10.0 ** (power - 2)  # the three leading digits, 100 <= lead < 1000
    places = 1 - power if lead < 355 else -power
    if lo > 0 or hi < 0:  # an interval off 0 must read so (+.005±.005 would not): a place more where it would
        while places < 6 and round(abs(center), places) <= round(half, places):
            places += 1
    if not 0 <= places <= 6 or abs(center) >= 1e6:
        return f"{_fmt(center, 3, signed=True)}±{fmt_auto(half, 2)}"

    def fixed(v: float, sign: str) -> str:
        return f"{v:{sign}.{places}f}".replace("0.", ".", 1)

    return f"{fixed(center, '+')}±{fixed(half, '')}"


def compact_line(results: Sequence[Result], tags: dict[str, str], baseline: str,
                 higher: bool | None = None) -> str | None:
    """``reward best b: b +.030±.012 better, c -.020±.012``: one metric's differences from ``baseline`` with the
    half-widths of their 95% intervals, each arm by its name in ``tags``, its verdict where it has one (Holm's over
    the arms tested: :attr:`Result.verdict`; ``*`` for a metric without a direction). ``higher``: the metric's
    direction (True: higher is better; None: none); with one, ``best`` names the arm of the best mean (the
    baseline's difference is 0; the point estimates: whether it is better than the baseline beyond chance is its
    verdict). None when no arm has a difference."""
    parts = []
    metric = ""
    deltas = {baseline: 0.0}
    for r in results:
        metric = r.metric
        if r.arm == baseline or r.delta is None:
            continue
        deltas[r.arm] = r.delta
        mark = f" {r.verdict}" if r.verdict in ("better", "worse") else "*" if r.verdict else ""
        parts.append(f"{tags.get(r.arm, sanitize(r.arm))} {pm_text(r.delta, r.delta_lo, r.delta_hi)}{mark}")
    if not parts:
        return None
    best = ""
    if higher is not None:
        top = (max if higher else min)(deltas, key=deltas.__getitem__)  # (ties: the first, the baseline)
        best = f" best {tags.get(top, sanitize(top))}"
    return f"{sanitize(metric)}{best}: {', '.join(parts)}"
