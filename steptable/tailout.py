"""What `steptable tail` prints: the Tail that turns runs' new rows (and rows changed in place) into the table, JSONL,
CSV or markdown, with alerts, on one stream. The command itself (arguments, one-shot and follow loops) is
steptable.tailcmd.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
import shutil
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from steptable import render, runinfo
from steptable.alerts import Alert, AlertEngine
from steptable.columns import Col
from steptable.formatting import INVISIBLE, md_escape, numeric_pair, sanitize, unique_name
from steptable.ingest import Follower, RunStore
from steptable.schemas import Schema, by_schema, cells_outgrown, fit, get_schema, layout, steps_outgrown, widened
from steptable.schemas.base import unmatched
from steptable.schemas.registry import logged_schema
from steptable.summary import run_label
from steptable.writer import encode_row

DEFAULT_WIDTH = 200  # cells, when stdout is not a terminal (an agent pays for every column)


class _Layout:
    """The columns of one schema group and their compiled row renderer."""

    def __init__(self, schema: Schema, cols: tuple[Col, ...]) -> None:
        self.schema, self.cols = schema, cols
        self.render_row = render.compile_row(cols)


class Tail:
    """Prints what is new in each run since the last call of :meth:`emit`."""

    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
        self.args = args
        self.out, self.err = out, err
        self.printed: dict[str, int | None] = {}  # run -> the highest step printed (None: none yet)
        self.seen_version: dict[str, int] = {}  # run -> store.version when it was last printed (for its edits)
        self.csv_keys: list[str] | None = None  # the columns of the CSV header printed last
        self.labels: dict[str, str] = {}  # run -> the name its alerts carry (the arm)
        self.versions: dict[str, tuple[int, int, int]] = {}  # run -> (resumes, len, generation) seen: resets
        self.since_header: dict[str, int] = {}
        self.errors_seen = 0
        self.engines: dict[str, AlertEngine] = {}
        self.error_alert = False
        self.of: dict[str, _Layout] = {}  # run -> the layout of its schema group
        self.last_run: str | None = None
        self.keys_seen: set[str] = set()
        self.unmatched_told: set[str] = set()
        self.arm_runs: Counter[str] = Counter()  # arm -> runs that have it (alert labels)
        self.tried: dict[str, int] = {}  # key -> the widest value a layout was made again for
        self.ended: set[str] = set()  # runs whose StepLogger was closed
        self.logged: dict[str, str | None] = {}  # run -> the name of its logged schema when the layout was made

    # -------------------------------------------------------------------------------------------- layout
    def _layouts(self, stores: Sequence[RunStore]) -> dict[str, _Layout]:
        """One layout per schema the runs are detected as (arms of one experiment share it), by run."""
        a = self.args
        named = get_schema(a.schema, near=a.paths[0]) if a.schema else None
        patterns = [p for p in a.columns.split(",") if p.strip()] if a.columns else None
        width = a.width
        if width is None:
            width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns if self.out.isatty() else DEFAULT_WIDTH
        out: dict[str, _Layout] = {}
        names: list[tuple[str, str]] = []
        for schema, group in by_schema(stores, named):
            cols = widened(layout(group, schema, patterns=patterns), self.tried)
            names += [(c.key, c.header.strip()) for c in cols]
            cols = tuple(fit(cols, width)) if width and width > 0 else tuple(cols)
            old = next((self.of[s.run] for s in group if s.run in self.of), None)
            lay = old if old is not None and old.cols == cols and old.schema is schema else _Layout(schema, cols)
            out.update((s.run, lay) for s in group)
        for p in unmatched(patterns or [], names):
            if p not in self.unmatched_told:  # told once; a key that appears later may still match it
                self.unmatched_told.add(p)
                self.err.write(f"steptable tail: --columns {sanitize(p)!r} matches no column (yet)\n")
        return out

    def _outgrown(self, stores: Sequence[RunStore]) -> bool:
        """Steps past the step column, or new rows with a value their column has no room for (once per width)."""
        out = False
        for s in stores:
            lay = self.of.get(s.run)
            if lay is None:
                continue
            out = out or steps_outgrown(lay.cols, [s])
            seen = self.versions.get(s.run)
            n = len(s)
            if seen is not None and 0 <= seen[1] < n:
                grown = cells_outgrown(lay.cols, s, max(seen[1], n - 200), n)
                grown = {k: w for k, w in grown.items() if w > self.tried.get(k, 0)}
                self.tried.update(grown)
                out = out or bool(grown)
        return out

    # -------------------------------------------------------------------------------------------- output
    def emit(self, follower: Follower) -> None:
        stores = [follower.stores[k] for k in sorted(follower.stores)]
        self.arm_runs = Counter(s.arm for s in stores)
        self.ended = {s.run for s in stores if runinfo.closed_at(s.meta.get("runinfo")) is not None}
        new = follower.error_count - self.errors_seen  # a count, not a cursor: the list keeps only the latest
        if new > 0:
            kept = list(follower.errors)[-new:]
            if new > len(kept):
                self.err.write(f"steptable: {new - len(kept)} more bad line(s) before these not shown\n")
            for line in kept:
                self.err.write(sanitize(line) + "\n")
        self.errors_seen = follower.error_count
        if not stores:
            return
        keys = {k for s in stores for k in s.keys}
        outgrown = self._outgrown(stores)  # (first: it notes the widths new rows need)
        logged = {s.run: ls.name if (ls := logged_schema(s)) is not None else None for s in stores}
        if keys != self.keys_seen or any(s.run not in self.of for s in stores) or outgrown or logged != self.logged:
            # (a StepLogger's description that arrived or changed lays its run out with its own columns)
            self.logged = logged
            # New runs or keys (a sparse eval column appearing late), or steps past the step column's width: lay
            # out again and re-print the header of each run whose layout changed.
            self.keys_seen = keys
            layouts = self._layouts(stores)
            for run, lay in layouts.items():
                if self.of.get(run) is not lay:
                    self.since_header.pop(run, None)
            self.of = layouts
        for store in stores:
            self._emit_run(store, multi=len(stores) > 1)
        self.out.flush()

    def _emit_run(self, store: RunStore, multi: bool) -> None:
        a, run = self.args, store.run
        with store.lock:  # one consistent view: the follower thread may add a batch meanwhile
            n, steps, version, resumes = len(store), store.steps, store.version, list(store.resumes)
            since = self.seen_version.get(run)
            lost = store.lost_since(since) if since is not None else None
        seen = self.versions.get(run)
        redo_upto: int | None = None  # rows printed before and changed since, up to this step, are printed again
        if run not in self.printed:
            first = max(n - a.last, 0) if (a.last and not a.alerts_only) else 0
            last = steps[first - 1] if first else None
        else:
            last = self.printed[run]
            if seen is not None and (n < seen[1] or len(resumes) != seen[0] or store.generation != seen[2]):
                # The file was truncated/replaced or the run resumed from a checkpoint: rows from that point changed.
                since_seen = resumes[seen[0] :] if store.generation == seen[2] else []
                at = min(since_seen) if since_seen else None  # (several resumes since the last call: the earliest)
                if not a.alerts_only and a.format == "text":
                    what = f"resumed at step {at}" if at is not None else "file reset"
                    self.out.write(f"── {sanitize(run)}: {what} ──\n")
                if store.generation != seen[2] or at is None:
                    last = None
                    self.engines.pop(run, None)  # new content: its history starts again
                elif last is not None:
                    last = min(last, at - 1)
                self.since_header[run] = 0
            if last is not None and lost is not None:  # more edits than the store lists: all rows from there again
                last = min(last, lost - 1)
            # merged into a row already printed (tinker's eval line, a late metric) or inserted before it
            redo_upto = last
        self.versions[run] = (len(store.resumes), n, store.generation)
        self.seen_version[run] = version
        first = 0 if last is None else bisect_right(steps, last)
        self.printed[run] = steps[n - 1] if first < n else last
        with store.lock:  # the rows of the view above (a batch added meanwhile waits for the next call)
            again = (
                store.rows_edited(since, redo_upto, until=version) if since is not None and redo_upto is not None
                else {}
            )
            new = store.rows(first, n)
        derive = self.of[run].schema.derive
        rows = [derive(again[st][0]) for st in sorted(again)] + [derive(r) for r in new]
        if a.alerts_only:
            self._alerts(store, [(st, *again[st]) for st in sorted(again)], first, rows[len(again) :])
            return
        if not rows:
            return
        lay = self.of[run]
        label = f"{store.arm or run}" + (f" ({run})" if store.arm and store.arm != run else "")
        if a.format == "jsonl":
            for r in rows:
                rec: dict[str, Any] = {"run": run, "arm": store.arm}
                for key, v in r.items():  # a row's own "run" (a W&B name) is kept as "run~2", never taken for ours
                    if not (key == "arm" and v == store.arm):
                        rec[unique_name(key, rec)] = v
                self.out.write(_inert_json(encode_row(rec).decode("utf-8")))
        elif a.format == "csv":
            self._csv(store, rows, lay.cols)
        elif a.format == "md":
            self._md(label, rows, lay.cols)
        else:
            if multi and self.last_run != run:
                self.out.write(render.title_line(label, render.width(lay.cols)) + "\n")
                self.since_header[run] = 0
            self.last_run = run
            every = a.header_every
            for r in rows:
                k = self.since_header.get(run, 0)
                if k == 0 or (every and k % every == 0):
                    self.out.write(render.header(lay.cols) + "\n")
                self.out.write(lay.render_row(r) + "\n")
                self.since_header[run] = k + 1

    def _csv(self, store: RunStore, rows: Sequence[Mapping[str, Any]], cols: Sequence[Col]) -> None:
        keys = [c.key for c in cols]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        if keys != self.csv_keys:  # once, and again only when the columns change (a key that appears later)
            self.csv_keys = keys
            names: list[str] = ["run", "arm"]
            for k in keys:  # keys come from the files: made inert, and kept apart where they then read alike
                names.append(unique_name(sanitize(k), names))
            w.writerow(names)
        run, arm = sanitize(store.run), sanitize(store.arm)
        for r in rows:
            w.writerow([run, arm, *(_csv_cell(r.get(k)) for k in keys)])
        self.out.write(buf.getvalue())

    def _md(self, label: str, rows: Sequence[Mapping[str, Any]], cols: Sequence[Col]) -> None:
        heads = [md_escape(c.header.strip()) for c in cols]
        self.out.write(f"\n**{md_escape(label)}**\n\n| " + " | ".join(heads) + " |\n")
        self.out.write("|" + "|".join("---:" if c.align == "right" else ":---" for c in cols) + "|\n")
        for r in rows:
            cells = [md_escape(x.strip()) for x in render.cells(cols, r)]
            self.out.write("| " + " | ".join(cells) + " |\n")

    def _alerts(
        self,
        store: RunStore,
        redo: Sequence[tuple[int, Mapping[str, Any], frozenset[str] | None]],
        start: int,
        rows: Sequence[Mapping[str, Any]],
    ) -> None:
        eng = self.engines.setdefault(store.run, AlertEngine())
        walls = store.wall_times
        # the arm when no other run has it, else run/arm: two experiments' seed0 must not read as one
        label = self.labels[store.run] = run_label(store, self.arm_runs.get(store.arm, 0) <= 1)
        for step, row, keys in redo:  # what changed in rows already fed: the cells merged in, or the inserted row
            for alert in eng.update(step, row if keys is None else {k: row[k] for k in keys if k in row}):
                self._alert(label, alert)
        steps = store.steps
        for i, r in enumerate(rows, start):
            wall = walls[i] if i < len(walls) else None
            found = eng.check_stall(wall) if wall is not None and math.isfinite(wall) else []  # a gap now over
            for alert in [*found, *eng.update(int(steps[i]), r, wall)]:
                self._alert(label, alert)

    def check_stalls(self, now: float) -> None:
        for run, eng in self.engines.items():
            if run in self.ended:
                continue  # its StepLogger was closed: it ended, it did not stall
            for alert in eng.check_stall(now):
                self._alert(self.labels.get(run, run), alert)
        self.out.flush()

    def _alert(self, label: str, alert: Alert) -> None:
        if alert.level == "E":  # before the line: a SIGTERM right after it must not lose the status
            self.error_alert = True
        self.out.write(f"{alert.level} [{sanitize(label)}] {alert.message_line()}\n")


def _csv_cell(v: Any) -> Any:
    if isinstance(v, float) and v != v:
        return ""
    if numeric_pair(v):
        return f"{v[0]}/{v[1]}"
    if isinstance(v, (tuple, list, dict)):
        return sanitize(json.dumps(v, default=str, ensure_ascii=False))
    if isinstance(v, str):
        return sanitize(v)
    return "" if v is None else v


# JSON escapes C0 controls, but not C1 ones (U+009B is CSI), bidi overrides, invisible format characters or the
# line separators U+2028/2029 (str.splitlines() breaks a row on them): those may only occur inside JSON strings,
# where a \uXXXX escape is the same text, so escaping them keeps the row exact and the terminal safe.
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f\u2028\u2029{INVISIBLE}]")


def _json_escape(m: re.Match[str]) -> str:
    cp = ord(m.group())
    if cp > 0xFFFF:  # a tag character: JSON writes it as a surrogate pair
        cp -= 0x10000
        return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"
    return f"\\u{cp:04x}"


def _inert_json(text: str) -> str:
    return _JSON_UNSAFE.sub(_json_escape, text)
