"""The session's column layout, made again cheaply when a live run starts logging a new key.

``schemas.layout`` measures every key of every run each time it is called (``format_value`` over about 200 samples
per run and key): with 50 arms x 200 keys that is seconds on the UI thread, once per key a run adds mid-run. Here
each undeclared key is measured once, when first seen (again only if its header changes), and ranked by the score
it had then. The declared and step columns still come from ``schemas.layout``, over the runs with the undeclared
keys left out. A first layout equals ``schemas.layout``'s; later ones keep the earlier keys' widths and places (a
value that outgrows its column is widened by the Session), so a new key moves no column: new ranked keys go after
the earlier ones, ranked among themselves. (A new declared or promoted key still takes its place before
them: the schema put it there.)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from steptable.table.columns import Col

if TYPE_CHECKING:  # (imported when first needed, as the Session does: the first frame does not wait for them)
    from steptable.schemas import RunView, Schema


class KeysOnly:
    """A run seen with only some of its keys (``layout`` reads keys, len, columns and the step index)."""

    def __init__(self, run: RunView, keys: list[str]) -> None:
        self._run = run
        self.keys = keys

    def __len__(self) -> int:
        return len(self._run)

    def column(self, key: str) -> Sequence[Any]:
        return self._run.column(key)

    def __getattr__(self, name: str) -> Any:  # step_at, steps: whatever the run has
        return getattr(self._run, name)


@dataclass
class Layouts:
    """``schemas.layout(runs, schema)``, remembering what it measured per key."""

    schema: Schema | None = None
    scores: dict[str, float] = field(default_factory=dict)  # key -> informative() when first seen
    measured: dict[tuple[str, str], Col] = field(default_factory=dict)  # (key, header) -> its column
    placed: dict[str, int] = field(default_factory=dict)  # ranked key -> its place, from the layout that first had it

    def layout(self, runs: Sequence[RunView], schema: Schema) -> tuple[Col, ...]:
        from steptable.schemas import (
            META_KEYS,
            auto_col,
            informative,
            layout,
            own_step_keys,
            run_keys,
            sample_values,
            short_headers,
            step_key_of,
        )

        if schema is not self.schema:
            self.schema = schema
            self.scores.clear()
            self.measured.clear()
            self.placed.clear()
        keys = list(dict.fromkeys(k for r in runs for k in run_keys(r)))
        have = set(keys)
        step_key = step_key_of(runs)
        ok = [d for d in schema.derived if all(n in have for n in d.needs)]
        shown = {d.key for d in ok}
        # (each run's own step key is in the step column already, as in schemas.layout)
        used = {step_key} | own_step_keys(runs)
        consumed: set[str] = set()
        for c in schema.cols:
            aliases = [a for a in c.aliases if a in have]
            if c.key in have or c.key == step_key or c.key in shown or aliases:
                used.add(c.key)
                consumed.update(aliases)
        for d in ok:
            if d.hide_inputs:
                consumed.update(d.needs)
        rest = [k for k in keys if k not in used and k not in consumed] if schema.extend else []

        # declared and step columns: layout over the runs without the keys measured here (derived inputs stay)
        needs = {n for d in schema.derived for n in d.needs}
        drop = {k for k in rest if k not in needs}
        view = [KeysOnly(r, [k for k in r.keys if k not in drop]) if drop else r for r in runs]
        declared = [c for c in layout(view, schema) if c.key in used]

        auto = [k for k in rest if k and k not in META_KEYS and not schema.hidden(k)]
        rules = {k: schema.rule(k) for k in auto}
        promoted = [k for k in auto if (r := rules[k]) is not None and r.promote]
        ranked = [k for k in auto if k not in promoted]
        having = [(r, set(r.keys)) for r in runs]
        for k in auto:
            if k not in self.scores:
                self.scores[k] = max((informative(r, k) for r, ks in having if k in ks), default=0.0)
        # promoted keys ranked among themselves as schemas.layout ranks them (a constant evaluation loss after the
        # evaluation reward, whichever the file names first)
        promoted.sort(key=lambda k: -self.scores[k])
        # ranked by score when first seen (stable: equal scores keep file order), then kept in that place, so that
        # a key arriving moves no column on screen sideways
        for k in sorted((k for k in ranked if k not in self.placed), key=lambda k: -self.scores[k]):
            self.placed[k] = len(self.placed)
        ranked.sort(key=self.placed.__getitem__)
        order = promoted + ranked
        headers = short_headers(order, reserved=[c.header for c in declared])
        cols: list[Col] = []
        for k in order:
            col = self.measured.get((k, headers[k]))
            if col is None:
                samples = [v for r, ks in having if k in ks for v in sample_values(r, k)]
                rule = rules[k]
                if rule is None:
                    col = auto_col(k, samples, headers[k])
                else:
                    col = auto_col(k, samples, headers[k], rule.describe(k), rule.better, rule.fmt)
                if any(v is not None and v == v for v in samples):  # (measured on values, not on nulls alone)
                    self.measured[(k, headers[k])] = col
            cols.append(col)
        return (*declared, *cols)


def named_columns(
    runs: Sequence[RunView], schema: Schema, shown: Collection[str], globs: Sequence[str], pinned: Sequence[str]
) -> list[Col]:
    """The columns of the runs' keys not in ``shown`` (those a layout keeps out: a StepLogger's dump-only timings,
    hidden keys) that a filter's ``globs`` match by key or header, or that are ``pinned``, laid out as
    ``schemas.layout`` lays them out. Keys are matched before they are measured, so a sweep of 200 keys measures
    only these."""
    import glob

    from steptable.schemas import layout

    headers = {c.key: c.header.strip() for c in (*schema.cols, *schema.extra)}

    def wanted(k: str) -> bool:
        return k not in shown and (k in pinned or any(fnmatchcase(k, g) or fnmatchcase(headers.get(k, ""), g)
                                                      for g in globs))

    views = [KeysOnly(r, [k for k in r.keys if wanted(k)]) for r in runs]
    return [c for c in layout(views, schema, patterns=[*globs, *map(glob.escape, pinned)]) if c.key not in shown]
