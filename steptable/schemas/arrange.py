"""The column layout of runs shown together, against their schema: which columns, in what order and how wide (an
undeclared key's column from its values), narrowed by a column filter and fitted to a width. Pure.

The seam between ingest and every viewer: ``layout(runs)`` gives the one column layout shared by all arms shown
together, so their tables line up column for column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from steptable.schemas.base import META_KEYS, RunView, Schema
from steptable.schemas.headers import short_headers
from steptable.schemas.widths import narrowest
from steptable.table.columns import Better, Col
from steptable.table.formatting import display_width, format_value, numeric_pair, sanitize
from steptable.table.stepkeys import step_key_among

__all__ = [
    "EMPTY_KEY", "EMPTY_KEY_NOTE", "auto_col", "by_key", "fit", "hidden_keys", "informative", "layout",
    "own_step_keys", "run_keys", "sample_values", "step_key_of",
]

#: what the console, ``tail`` and ``legend`` say once of the empty key: a column needs a key (Col), so it has none
EMPTY_KEY = 'the empty key "" has values but no column'
EMPTY_KEY_NOTE = f"{EMPTY_KEY} (tail --format jsonl and summary --columns '*' show it)"  # (where a JSONL holds it)


def sample_values(run: RunView, key: str, limit: int = 200) -> list[Any]:
    """The values a layout measures a key by: at most ``limit`` evenly spaced ones and the last."""
    col = run.column(key)
    n = len(col)
    if n <= limit:
        return list(col)
    step = max(n // limit, 1)
    return [*[col[i] for i in range(0, n, step)][:limit], col[n - 1]]


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and v.lower() in ("nan", ""))


def _is_number(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return True
    return isinstance(v, (tuple, list)) and len(v) == 2 and all(_is_number(x) for x in v)


def auto_col(
    key: str,
    samples: Sequence[Any],
    header: str | None = None,
    desc: str = "",
    better: Better | None = None,
    fmt: str | None = None,
    measure: bool = True,
) -> Col:
    """A column for an undeclared key: width from the header and the data, compact number format.

    Integers, fractions and text get the width of their widest sample (cutting them would lose information).
    Columns of fractional floats get the 90th percentile: a rarer, wider value (".00298" among ".412"s) is shown
    in a shorter compact form (".003") instead of padding every row, since each pad is a token an agent pays for.
    Not ``measure``: the samples are not formatted, the width is the header's (at least 3).
    """
    h = header if header is not None else key
    if fmt is None and any(numeric_pair(v) for v in samples):
        fmt = "frac"
    is_str = any(
        (isinstance(v, str) and not _is_missing(v) and v.lower() not in ("inf", "-inf"))
        or (isinstance(v, (list, tuple, dict)) and not numeric_pair(v))  # shown as its text
        for v in samples
    )
    measured = [(display_width(format_value(v, fmt, 12, fill=False)), v) for v in samples
                if v is not None] if measure else []
    widths = sorted(w for w, _ in measured)
    data_w = widths[-1] if widths else 3
    fractional = fmt is None and not is_str and any(
        isinstance(v, float) and v == v and v not in (math.inf, -math.inf) and not v.is_integer() for v in samples
    )
    if fractional and len(widths) >= 10:
        data_w = widths[int(0.9 * (len(widths) - 1))]
        # ... but never so narrow that a rarer value has no form at all (a ``####`` cell says nothing); a value
        # whose form fits in data_w cells has one there
        for w, v in measured:
            if w > data_w and not isinstance(v, str) and "#" in format_value(v, fmt, data_w, fill=False):
                data_w = narrowest(v, fmt, data_w)
    w = max(display_width(h), min(data_w, 12 if is_str else 8) if measure else 0, 3)
    text = sanitize(desc) if desc else as_logged(key)  # keys come from files: one line, nothing a terminal obeys
    return Col(key, w, h, fmt, text, better, align="left" if is_str else "right")


def as_logged(key: str) -> str:
    """The description of a key no schema or rule describes."""
    return sanitize(f"{key} (as logged)")


def informative(run: RunView, key: str) -> float:
    """How much a key tells: share of rows present, times 1 if it varies (0.2 if constant), times a weight that
    favours numbers (text and nested values count a quarter)."""
    vals = sample_values(run, key)
    present = [v for v in vals if not _is_missing(v)]
    if not present:
        return 0.0
    distinct = len({repr(v) for v in present[:50]})
    numeric = sum(1 for v in present if _is_number(v)) / len(present)
    return len(present) / max(len(vals), 1) * (1.0 if distinct > 1 else 0.2) * (0.25 + 0.75 * numeric)


def run_keys(run: RunView) -> list[str]:
    """A run's keys: its file's, then the streamed columns its StepLogger printed (its ``steptable.json``). A
    column the logger printed but never filled (a vanilla arm's diagnostics, logged as None) is still the run's:
    every view shows the run with the columns its stdout had."""
    meta = getattr(run, "meta", None)
    info = meta.get("runinfo") if isinstance(meta, dict) else None
    raw = info.get("columns") if isinstance(info, dict) else None
    if not isinstance(raw, list):
        return run.keys
    logged = [c["key"] for c in raw if type(c) is dict and type(c.get("key")) is str and c.get("stream", True)]
    return list(dict.fromkeys([*run.keys, *logged]))


def own_step_keys(runs: Sequence[RunView]) -> set[str]:
    """The step keys the runs' files name (``_step``, ``iteration``...): shown as the step column, not again."""
    return {k for r in runs if isinstance(k := getattr(r, "step_key", None), str)}


def step_key_of(runs: Sequence[RunView], default: str = "step") -> str:
    """The step key the runs use: ``default`` when any run has it or the runs name their steps differently (a
    store answers ``step`` with its own step index), else the first of ``STEP_KEYS`` present."""
    keys = {k for r in runs for k in r.keys}
    if default in keys or len({getattr(r, "step_key", None) for r in runs}) > 1:
        return default
    found = step_key_among(keys)
    return default if found is None else found


def layout(
    runs: Sequence[RunView],
    schema: Schema | None = None,
    max_width: int | None = None,
    step_key: str = "step",
    patterns: Sequence[str] | None = None,
    measure: bool = True,
) -> tuple[Col, ...]:
    """One column layout for all ``runs``: the step, the schema's declared columns present in any run (directly,
    by an alias, or derived) and not hidden by a rule, in declared order, then (if the schema extends) promoted rule
    matches, then the other keys, each group by information, with short unambiguous headers; fitted to
    ``max_width`` cells when given.

    ``patterns`` (``columns.select`` globs over keys and headers) filters the layout; with patterns, hidden keys
    (declared ones as declared), aliases, derived inputs and undeclared keys of non-extending schemas are candidates
    too, so a filter reaches every key. Not ``measure``: the undeclared keys' columns are as wide as their headers
    (their values not formatted to fit: for a caller that reads only the keys, headers and order, as summary).
    """
    keys: dict[str, None] = {}
    for r in runs:
        for k in run_keys(r):
            keys.setdefault(k, None)
    step_key = step_key_of(runs, step_key)
    out: list[Col] = []
    # each run's own step key is in the step column already (as ``step`` when the runs name it differently)
    used: set[str] = {step_key} | own_step_keys(runs)
    consumed: set[str] = set()  # aliases read by a declared column, inputs of a shown derived column
    if schema is not None:
        ok = {d.key: d for d in schema.derived if all(n in keys for n in d.needs)}
        for c in schema.cols:
            aliases = [a for a in c.aliases if a in keys]
            if not (c.key in keys or c.key == step_key or c.key in ok or aliases):
                continue
            consumed.update(aliases)
            # a hidden declared column (a user's hide glob over a base's columns) is out unless a filter asks
            if patterns or c.key == step_key or c.key not in schema.hides:
                out.append(c)
                used.add(c.key)
        for d in ok.values():
            if d.hide_inputs and d.key in used:  # (a derived column a rule hides leaves its inputs shown)
                consumed.update(d.needs)
        if patterns:  # a filter reaches the declared columns kept out, as declared
            for c in schema.extra:
                if c.key in keys and c.key not in used:
                    out.append(c)
                    used.add(c.key)
    if not any(c.key == step_key for c in out) and (step_key in keys or schema is None or schema.extend):
        samples = [v for r in runs if step_key in r.keys for v in sample_values(r, step_key)]
        desc = "training step" if step_key == "step" else f"training step (logged as {step_key})"
        out.insert(0, auto_col(step_key, samples or [0], "step", desc))
    out = [_exact_steps(c, runs) if c.key == step_key else c for c in out]
    if schema is None or schema.extend or patterns:
        skip = used if patterns else used | consumed
        out += _auto_cols(runs, schema, [k for k in keys if k not in skip], out, bool(patterns), measure)
    if patterns:
        out = _filter(out, patterns, step_key)
    if max_width is not None:
        out = fit(out, max_width)
    return tuple(out)


def _step_digits(runs: Sequence[RunView], key: str) -> int:
    """Characters of the widest step the runs hold (the step index when a run has one, else ``key``'s values)."""
    lo = hi = 0
    for r in runs:
        step_at = getattr(r, "step_at", None)  # a store's step index is sorted: its ends are the extremes
        n = len(r)
        if step_at is not None and n:
            lo, hi = min(lo, int(step_at(0))), max(hi, int(step_at(n - 1)))
            continue
        steps = getattr(r, "steps", None)
        if steps is None:
            steps = sorted(int(v) for v in r.column(key) if type(v) in (int, float) and math.isfinite(v)
                           and abs(v) < 2**63)
        if len(steps):
            lo, hi = min(lo, int(steps[0])), max(hi, int(steps[-1]))
    return max(len(str(lo)), len(str(hi)))


def _exact_steps(col: Col, runs: Sequence[RunView]) -> Col:
    """The step column wide enough for every step the runs hold, as an integer: a step is never shortened to a
    compact form (two rows reading ``1.2e5`` would look like the same step)."""
    need = _step_digits(runs, col.key)
    if col.width >= need and col.fmt is not None:
        return col
    return col.with_(width=max(col.width, need), fmt=col.fmt or "d")


def steps_outgrown(cols: Sequence[Col], runs: Sequence[RunView], step_key: str = "step") -> bool:
    """A run's steps no longer fit the layout's step column (a live run passed 99999): lay out again."""
    key = step_key_of(runs, step_key)
    col = next((c for c in cols if c.key == key), None)
    return col is not None and _step_digits(runs, key) > col.width


def _auto_cols(
    runs: Sequence[RunView], schema: Schema | None, rest: list[str], declared: list[Col], show_hidden: bool,
    measure: bool = True,
) -> list[Col]:
    rest = [k for k in rest if k and k not in META_KEYS and (show_hidden or schema is None or not schema.hidden(k))]
    rules = {k: schema.rule(k) if schema is not None else None for k in rest}
    keyed = [(r, set(r.keys)) for r in runs]  # RunView.keys is a list: a scan per key would make wide runs quadratic
    score = {k: max((informative(r, k) for r, ks in keyed if k in ks), default=0.0) for k in rest}
    # promoted keys stay ahead, but ranked among themselves too: a constant bookkeeping key (an evaluation's
    # episode count) must not take the width from the evaluation's scores
    promoted = {k for k in rest if (r := rules[k]) is not None and r.promote}
    order = sorted(rest, key=lambda k: (k not in promoted, -score[k]))  # stable: equal scores keep file order
    headers = short_headers(order, reserved=[c.header for c in declared])
    cols: list[Col] = []
    for k in order:
        samples = [v for r, ks in keyed if k in ks for v in sample_values(r, k)]
        rule = rules[k]
        if rule is None:
            cols.append(auto_col(k, samples, headers[k], measure=measure))
        else:
            cols.append(auto_col(k, samples, headers[k], rule.describe(k), rule.better, rule.fmt, measure))
    return cols


def matches(key: str, header: str, pattern: str) -> bool:
    """Does a column filter pattern (an ``fnmatch`` glob) select the column with this key or header?"""
    return fnmatchcase(key, pattern) or fnmatchcase(header, pattern)


def unmatched(patterns: Sequence[str], names: Sequence[tuple[str, str]]) -> list[str]:
    """The patterns that select none of ``names`` ((key, header) pairs): a mistyped filter is worth a word."""
    return [p for p in (p.strip() for p in patterns) if p and not any(matches(k, h, p) for k, h in names)]


def _filter(cols: Sequence[Col], patterns: Sequence[str], step_key: str) -> list[Col]:
    pats = [p.strip() for p in patterns if p.strip()]
    if not pats:
        return list(cols)
    return [
        c
        for c in cols
        if c.key == step_key or any(matches(c.key, c.header.strip(), p) for p in pats)
    ]


def fit(cols: Sequence[Col], max_width: int) -> list[Col]:
    """Keep columns in order while they fit ``max_width`` cells (the first column always stays)."""
    kept: list[Col] = []
    used = 0
    for c in cols:
        need = c.width + (1 if kept else 0)
        if kept and used + need > max_width:
            continue
        kept.append(c)
        used += need
    return kept


def by_key(cols: Sequence[Col]) -> Mapping[str, Col]:
    """``cols`` by their key (not their aliases)."""
    return {c.key: c for c in cols}


def hidden_keys(runs: Sequence[RunView], schema: Schema | None, cols: Sequence[Col]) -> list[str]:
    """Keys the runs have that ``cols`` do not show (hidden by a rule, fitted away, or derived inputs)."""
    shown = {c.key for c in cols} | {a for c in cols for a in c.aliases}
    if schema is not None:
        shown |= {n for d in schema.derived if d.key in shown and d.hide_inputs for n in d.needs}
    keys = dict.fromkeys(k for r in runs for k in r.keys)
    return [k for k in keys if k not in shown and k not in META_KEYS]
