"""``legend_for``: the legend text of ``steptable legend PATH|--schema NAME``. Pure."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from steptable.schemas.arrange import EMPTY_KEY_NOTE, as_logged, hidden_keys, layout
from steptable.schemas.base import RunView, Schema
from steptable.schemas.registry import by_schema
from steptable.table import direction, render
from steptable.table.cells import first_few, key_name
from steptable.table.columns import Col, aligned_width
from steptable.table.formatting import display_width, pad, sanitize

#: the mark of a cell that raised an alert in ``watch`` (ASCII: any terminal writes it, and it stays under NO_COLOR)
ALERT_MARK = "!"

#: the mark after a header that makes its column the one to watch first (routing's ``hack_s?``)
WATCH_MARK = "?"


def watched_first(col: Col) -> bool:
    """Whether the schema marks ``col`` as the column to watch first (its header ends with :data:`WATCH_MARK`; a
    header that is the mark alone is no mark)."""
    head = col.header.strip()
    return len(head) > 1 and head.endswith(WATCH_MARK)


#: what a mark in a header or a cell means, in every view: (mark, meaning)
MARKS: tuple[tuple[str, str], ...] = (
    ("↑ ↓ after a header", "a direction the schema's author wrote into the header (routing's rew_s↑, lp_s↓); "
                           "it is the good one only where the column's legend line says \"higher/lower is "
                           "better\" (rew_s: yes; lp_s, a diagnostic: no), and watch colours by that line alone"),
    ("? after a header", "the column to watch first (routing's hack_s?)"),
    ('"\\t" as a header', "a key with no visible character, by its escapes"),
    ("blank cell", "not logged at this step"),
    ("NaN inf -inf", "logged, but not a finite number"),
    ("err (? if narrow)", "a value that could not be written as text"),
    ("…", "text cut to the column's width"),
    (ALERT_MARK, "watch: this cell raised an alert (the alert lines of tail and the e list say which; in a seed "
                 "group's table, a seed's cell at that step did)"),
)

#: the colours of a watch table: (colour, rule)
COLOURS: tuple[tuple[str, str], ...] = (
    (f"{ALERT_MARK} + red / orange tint", "the cell raised an error / a warning; its row's step carries it too"),
    ("green", f"better: {direction.RULE}; only a column whose legend line says higher/lower is better"),
    ("bold red", "worse: the same rule, the other way"),
    ("red NaN / inf", "a logged non-finite value"),
    ("accent", "the step column"),
    ("tinted column", "the lit column (the chart's; p pins it)"),
)


def marks_text(indent: int = 1) -> str:
    """Every mark and colour rule, one per line, under two titles (``steptable legend``'s last part)."""
    parts: list[str] = []
    for title, lines in (("marks:", MARKS), ("colours in watch:", COLOURS)):
        w = max(display_width(k) for k, _ in lines)
        parts.append(title)
        parts += [f"{' ' * indent}{pad(k, w, 'left')}  {v}" for k, v in lines]
    return "\n".join(parts)


def _runs(target: Any) -> list[RunView] | None:
    if hasattr(target, "keys") and hasattr(target, "column") and not isinstance(target, (list, tuple)):
        return [target]
    if isinstance(target, (list, tuple)):
        return list(target)
    return None


def _schema_text(schema: Schema) -> str:
    title = f"{schema.name}: {schema.description}"
    parts = [render.legend(schema.cols, title=title) if schema.cols else f"{title}\n (no declared columns)"]
    described = [r for r in schema.rules if r.desc and not r.hide]
    if described:
        w = aligned_width(r.pattern for r in described)
        parts.append("keys matched by pattern:")
        for r in described:
            text = r.desc.replace(" ({key})", "").replace("{key}", "the key")
            parts.append(f" {pad(r.pattern, w, 'left')}  {text}{render.DIRECTION.get(r.better or '', '')}")
    hidden = [r.pattern for r in schema.rules if r.hide]
    if hidden:
        parts.append("kept out of the default layout (a column filter shows them): " + ", ".join(hidden))
    if schema.side_files:
        parts.append("side files:")
        parts += [f" {s.pattern} ({s.kind}): {s.desc}" for s in schema.side_files]
    return "\n".join(parts)


def legend_for(
    target: Schema | RunView | Sequence[RunView], schema: Schema | None = None,
    schema_of: Callable[[Any], Schema] | None = None,
) -> str:
    """The legend of a schema (every declared column, pattern rules and side files), or of runs: the columns the
    runs actually have, in layout order, under the given schema or the one ``schema_of`` finds for each run (default:
    the built-in it is detected as; steptable.schemafiles.resolve.run_schema adds the user's files). Runs of
    different trainers (a verl run beside an SB3 run) get one legend each, as tail and the app lay them out; runs
    whose legends would read the same (column sets that differ only in a width) share one."""
    if isinstance(target, Schema):
        return _schema_text(target)
    runs = _runs(target)
    if runs is None:
        raise TypeError(f"legend_for wants a Schema, a run or a list of runs, not {type(target).__name__}")
    groups: list[tuple[Schema | None, list[RunView]]]
    if schema is not None or not runs or any(getattr(r, "path", None) is None for r in runs):
        groups = [(schema, runs)]  # (a run without a file has no trainer to detect: the generic layout)
    else:
        groups = [(s, g) for s, g in by_schema(cast("list[Any]", runs), schema_of=schema_of)]  # each has a path
    # groups whose legends read the same (StepLogger column sets that differ in a width) are one, for all their runs
    same: dict[str, tuple[Schema | None, list[RunView]]] = {}
    text = ""
    for s, g in groups:
        text = _runs_text(g, s, "")
        same.setdefault(text.split("\n", 1)[-1], (s, []))[1].extend(g)
    if len(groups) == 1:  # (its text is made: a sweep's runs laid out again cost as much)
        return text
    if len(same) == 1:
        s, g = next(iter(same.values()))
        return _runs_text(g, s, "")
    return "\n\n".join(_runs_text(g, s, f" ({_names(g)})") for s, g in same.values())


def _names(runs: Sequence[RunView]) -> str:
    """Which runs a legend is for, when a directory holds several trainers' (the first three by name)."""
    names = sorted(sanitize(str(getattr(r, "run", "") or getattr(r, "path", ""))) for r in runs)
    return first_few(names)


def _runs_text(runs: Sequence[RunView], schema: Schema | None, whose: str) -> str:
    cols = layout(runs, schema, measure=False)  # (no width is shown: the values need no formatting to fit)
    name = schema.name if schema is not None else "generic"
    source = f" (schema file {sanitize(schema.source)})" if schema is not None and schema.source != "built-in" else ""
    plain = [c.key for c in cols if c.header.strip() == c.key and c.desc in ("", as_logged(c.key))]
    text = render.legend([c for c in cols if c.key not in plain], title=f"{name} columns{whose}{source}:")
    if plain:  # (a header that is its key, no meaning known: one line for them all)
        text += "\nno description (the header is the key, as logged): " + ", ".join(key_name(k) for k in plain)
    rest = hidden_keys(runs, schema, cols)
    if "" in rest:  # a column needs a key: the empty one is in the JSONL and in `summary`, never a column
        rest.remove("")
        text += f"\n{EMPTY_KEY_NOTE}"
    # keys a rule keeps out of the table but describes (timings, dump-only columns): their meaning too
    described = [(k, r) for k in rest if schema is not None and (r := schema.rule(k)) is not None and r.hide and r.desc]
    if described:
        hw = aligned_width(key_name(k) for k, _ in described)
        text += "\nkept out of the table (a column filter shows them):"
        text += "".join(f"\n {pad(key_name(k), hw, 'left')}  {sanitize(r.describe(k))}" for k, r in described)
        rest = [k for k in rest if k not in dict(described)]
    if rest:
        text += f"\n{len(rest)} more key(s) kept out of the default layout (a column filter shows them): "
        text += ", ".join(key_name(k) for k in rest[:12]) + (" ..." if len(rest) > 12 else "")
    return text
