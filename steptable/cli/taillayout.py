"""How `steptable tail` lays its runs out: one layout per schema group, fitted to the width, widened for the values
rows bring, with what --columns and the schema files said about it told once (steptable.cli.tailout prints the rows).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import TextIO

from steptable.cli.tailformats import Layout
from steptable.ingest import RunStore
from steptable.schemafiles.resolve import by_schema, get_schema, schema_file_notes, unused_files
from steptable.schemas import (
    Schema,
    cells_outgrown,
    first_look,
    fit,
    layout,
    notation_left,
    noted,
    steps_outgrown,
    widened,
)
from steptable.schemas.arrange import EMPTY_KEY_NOTE, auto_col, own_step_keys, sample_values, step_key_of, unmatched
from steptable.schemas.headers import short_headers
from steptable.table.columns import Col
from steptable.table.formatting import sanitize

DEFAULT_WIDTH = 200  # cells, when stdout is not a terminal (an agent pays for every column)


class TailLayouts:
    """The layouts of one tail's runs, and what it has told about them (said once each)."""

    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
        self.args = args
        self.out, self.err = out, err
        self.fit_told = False
        self.patterns = [p for p in args.columns.split(",") if p.strip()] if args.columns else []  # --columns
        self.unmatched_told: set[str] = set()  # of them, those that matched nothing when laid out
        self.unused_told: set[str] = set()  # steptable.toml files said to apply to none of their runs
        self.tried: dict[str, int] = {}  # key -> the widest value a layout was made again for
        self.extremes: dict[str, dict[str, float]] = {}  # run -> key -> the largest magnitude a notation was asked for
        self.lows: dict[str, dict[str, int]] = {}  # run -> key -> the row a decayed column was asked about at
        self.looked: set[str] = set()  # runs whose rows were looked at across (_first_look)
        self.empty_told = False  # the empty key said to have no column

    def lay_out(self, stores: Sequence[RunStore], of: dict[str, Layout]) -> dict[str, Layout]:
        """One layout per schema the runs are detected as (arms of one experiment share it), by run; ``of``: the
        layouts before (a group whose columns did not change keeps its Layout)."""
        a = self.args
        named = get_schema(a.schema, near=a.paths) if a.schema else None
        patterns = self.patterns or None
        width = a.width
        if width is None:
            width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns if self.out.isatty() else DEFAULT_WIDTH
        # Only the fixed-width table is fitted: csv, jsonl and md are read by programs and carry every column.
        fitting = a.format == "text" and bool(width) and width > 0
        out: dict[str, Layout] = {}
        names: list[tuple[str, str]] = []
        left_out = 0
        groups = by_schema(stores, named)
        for note in schema_file_notes(groups):  # a file that changes what the columns mean is said (once each)
            if note not in self.unused_told:
                self.unused_told.add(note)
                self.err.write(f"steptable tail: {sanitize(note)}\n")
        for schema, group in groups:
            if a.alerts_only:  # (no row is printed: the columns' widths and notations would never be used)
                all_cols = tuple(layout(group, schema, patterns=patterns, measure=False))
            else:
                all_cols = widened(layout(group, schema, patterns=patterns), self.tried)
                if self._first_look(all_cols, group):
                    all_cols = widened(all_cols, self.tried)
            names += [(c.key, c.header.strip()) for c in all_cols]
            cols = tuple(fit(all_cols, width)) if fitting else tuple(all_cols)
            left_out += len(all_cols) - len(cols)
            if a.format in ("csv", "md") and not patterns:  # every key the jsonl rows carry, the table's first
                cols += widened(_rest(group, schema, cols), self.tried)
            if not a.alerts_only:  # (last: a column's notation is chosen for the width it is shown in)
                cols = noted(cols, group)
            old = next((of[s.run] for s in group if s.run in of), None)
            lay = old if old is not None and old.cols == cols and old.schema is schema else Layout(
                schema, cols, step_key_of(group))
            out.update((s.run, lay) for s in group)
        if left_out and not self.fit_told and not a.alerts_only:  # once: an agent must know columns are hidden
            self.fit_told = True
            self.err.write(f"steptable tail: {left_out} column(s) left out to fit {width} cells; --width 0 shows "
                           "all, --columns picks them\n")
        if not self.empty_told and a.format != "jsonl" and not a.alerts_only and any("" in s.keys for s in stores):
            if not patterns or any(fnmatchcase("", p) for p in patterns):  # (keys --columns left out are not missed)
                self.empty_told = True
                self.err.write(f"steptable tail: {EMPTY_KEY_NOTE}\n")
        for e in unused_files(stores) if not a.schema else []:
            if str(e) not in self.unused_told:  # (said once, as the patterns are)
                self.unused_told.add(str(e))
                self.err.write(f"steptable tail: {sanitize(str(e))} (the file is not used)\n")
        for p in unmatched(patterns or [], names):
            if p not in self.unmatched_told:  # told once; a key that appears later may still match it
                self.unmatched_told.add(p)
                yet = " (yet)" if a.follow else ""
                self.err.write(f"steptable tail: --columns {sanitize(p)!r} matches no column{yet}\n")
        return out

    def filter_missed(self) -> bool:
        """Every --columns pattern matched nothing (a typo: the table shows the step column alone)."""
        return bool(self.patterns) and set(self.patterns) <= self.unmatched_told

    def _first_look(self, cols: Sequence[Col], group: Sequence[RunStore]) -> bool:
        """Values of runs laid out for the first time that their columns have no room for, across each run (as the
        watch app looks at a run it has not seen): True when a column is to be widened."""
        grown: dict[str, int] = {}
        for s in group:
            if s.run not in self.looked and (n := len(s)):
                self.looked.add(s.run)
                for k, w in first_look(cols, s, n).items():
                    grown[k] = max(w, grown.get(k, 0))
        grown = {k: w for k, w in grown.items() if w > self.tried.get(k, 0)}
        self.tried.update(grown)
        return bool(grown)

    def outgrown(self, stores: Sequence[RunStore], of: dict[str, Layout],
                 versions: dict[str, tuple[int, int, int]]) -> bool:
        """Steps past the step column, or new rows with a value their column has no room for (once per width)."""
        out = False
        for s in stores:
            lay = of.get(s.run)
            if lay is None:
                continue
            out = out or steps_outgrown(lay.cols, [s])
            seen = versions.get(s.run)
            n = len(s)
            if seen is not None and 0 <= seen[1] < n:
                out = out or notation_left(lay.cols, s, max(seen[1], n - 200), n,
                                           self.extremes.setdefault(s.run, {}), self.lows.setdefault(s.run, {}))
                grown = cells_outgrown(lay.cols, s, max(seen[1], n - 200), n)
                grown = {k: w for k, w in grown.items() if w > self.tried.get(k, 0)}
                self.tried.update(grown)
                out = out or bool(grown)
        return out


def _rest(group: Sequence[RunStore], schema: Schema, cols: tuple[Col, ...]) -> tuple[Col, ...]:
    """Columns for the keys the rows carry that ``cols`` leave out (hidden by a rule, bookkeeping such as ``ts``), in
    first-seen order, headed apart from ``cols``. A run's own step key (``_step``, SB3's ``time/total_timesteps``) is
    not repeated: the step column holds it."""
    have = {c.key for c in cols} | own_step_keys(group) | {"step", "arm"}
    keys = [k for k in dict.fromkeys(k for s in group for k in s.keys) if k and k not in have]
    heads = short_headers(keys, reserved=[c.header for c in cols])
    out: list[Col] = []
    for k in keys:
        samples = [v for s in group if k in s.keys for v in sample_values(s, k)]
        rule = schema.rule(k)  # (a StepLogger's dump-only columns are hidden rules with their words and format)
        out.append(auto_col(k, samples, heads[k]) if rule is None
                   else auto_col(k, samples, heads[k], rule.describe(k), rule.better, rule.fmt))
    return tuple(out)
