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
import os
import shutil
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

from steptable import render, runinfo
from steptable.alerts import Alert, AlertEngine, clockless_stall, end_alert, resumed_engine
from steptable.columns import Col
from steptable.formatting import md_escape, sanitize, unique_name
from steptable.ingest import Follower, RunStore
from steptable.ingest.table import WALL_KEYS, epoch_seconds
from steptable.outcells import csv_cell, csv_text, inert_json
from steptable.schemas import (
    Schema,
    by_schema,
    cells_outgrown,
    first_look,
    fit,
    get_schema,
    layout,
    steps_outgrown,
    widened,
)
from steptable.schemas.base import auto_col, own_step_keys, sample_values, step_key_of, unmatched
from steptable.schemas.headers import look, short_headers
from steptable.schemas.registry import logged_schema, unused_files
from steptable.summary import run_label
from steptable.writer import encode_row

DEFAULT_WIDTH = 200  # cells, when stdout is not a terminal (an agent pays for every column)


class _Layout:
    """The columns of one schema group, their compiled row renderer and the key of the step column (the runs' own
    step key, ``iteration``, where they all share it)."""

    def __init__(self, schema: Schema, cols: tuple[Col, ...], step_key: str) -> None:
        self.schema, self.cols, self.step_key = schema, cols, step_key
        self.render_row = render.compile_row(cols)


class Tail:
    """Prints what is new in each run since the last call of :meth:`emit`."""

    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
        self.args = args
        self.out, self.err = out, err
        self.printed: dict[str, int | None] = {}  # run -> the highest step printed (None: none yet)
        self.seen_version: dict[str, int] = {}  # run -> store.version when it was last printed (for its edits)
        self.csv_keys: list[str] | None = None  # the columns of the CSV header printed last (they only grow)
        self.csv_want: list[str] = []  # the union of the runs' columns, in order: what the header should hold
        self.alert_head = False  # the CSV header of alert lines was printed
        self.labels: dict[str, str] = {}  # run -> the name its alerts carry (the arm)
        self.arm_of: dict[str, str] = {}  # run -> its arm (alert records)
        self.versions: dict[str, tuple[int, int, int]] = {}  # run -> (resumes, len, generation) seen: resets
        # text and md: a title (and a header) only where the run or layout changes from the last printed block
        self.block_run: str | None = None  # the run of the last printed block
        self.head_of: _Layout | None = None  # the layout of the last printed header
        self.since_head = 0  # rows printed since that header
        self.titled: set[str] = set()  # runs whose full title was printed (later titles are short)
        self.need_head: set[str] = set()  # runs whose next block needs a header again (a reset, a resume)
        self.fit_told = False
        self.live_many = bool(args.follow) and (len(args.paths) > 1 or any(os.path.isdir(p) for p in args.paths))
        self.errors_seen = 0
        self.engines: dict[str, AlertEngine] = {}
        self.error_alert = False
        self.of: dict[str, _Layout] = {}  # run -> the layout of its schema group
        self.keys_seen: set[str] = set()
        self.patterns = [p for p in args.columns.split(",") if p.strip()] if args.columns else []  # --columns
        self.unmatched_told: set[str] = set()  # of them, those that matched nothing when laid out
        self.unused_told: set[str] = set()  # steptable.toml files said to apply to none of their runs
        self.arm_runs: Counter[str] = Counter()  # arm -> runs that have it (alert labels)
        self.tried: dict[str, int] = {}  # key -> the widest value a layout was made again for
        self.looked: set[str] = set()  # runs whose rows were looked at across (_first_look)
        self.ended: set[str] = set()  # runs whose StepLogger was closed
        self.far_told: set[str] = set()  # runs without a row clock told stalled (until they write again)
        self.replaced_seen: dict[str, int] = {}  # a run's RunStore.replaced alerts looked at so far
        self.end_told: dict[str, float] = {}  # run -> when it was closed, for the crash or interruption told
        self.logged: dict[str, str | None] = {}  # run -> the name of its logged schema when the layout was made
        self.first_view = True  # -n is for the runs found at the start: a run found later is new output in full
        self.read_rows = False  # a row was read (the status of a -f that ends: was anything readable found?)

    # -------------------------------------------------------------------------------------------- layout
    def _layouts(self, stores: Sequence[RunStore]) -> dict[str, _Layout]:
        """One layout per schema the runs are detected as (arms of one experiment share it), by run."""
        a = self.args
        named = get_schema(a.schema, near=a.paths) if a.schema else None
        patterns = self.patterns or None
        width = a.width
        if width is None:
            width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns if self.out.isatty() else DEFAULT_WIDTH
        # Only the fixed-width table is fitted: csv, jsonl and md are read by programs and carry every column.
        fitting = a.format == "text" and bool(width) and width > 0
        out: dict[str, _Layout] = {}
        names: list[tuple[str, str]] = []
        left_out = 0
        for schema, group in by_schema(stores, named):
            all_cols = widened(layout(group, schema, patterns=patterns), self.tried)
            if self._first_look(all_cols, group):
                all_cols = widened(all_cols, self.tried)
            names += [(c.key, c.header.strip()) for c in all_cols]
            cols = tuple(fit(all_cols, width)) if fitting else tuple(all_cols)
            left_out += len(all_cols) - len(cols)
            if a.format in ("csv", "md") and not patterns:  # every key the jsonl rows carry, the table's first
                cols += widened(_rest(group, schema, cols), self.tried)
            old = next((self.of[s.run] for s in group if s.run in self.of), None)
            lay = old if old is not None and old.cols == cols and old.schema is schema else _Layout(
                schema, cols, step_key_of(group))
            out.update((s.run, lay) for s in group)
        if left_out and not self.fit_told and not a.alerts_only:  # once: an agent must know columns are hidden
            self.fit_told = True
            self.err.write(f"steptable tail: {left_out} column(s) left out to fit {width} cells; --width 0 shows "
                           "all, --columns picks them\n")
        for e in unused_files(stores) if not a.schema else []:
            if str(e) not in self.unused_told:  # (said once, as the patterns are)
                self.unused_told.add(str(e))
                self.err.write(f"steptable tail: {sanitize(str(e))} (the file is not used)\n")
        for p in unmatched(patterns or [], names):
            if p not in self.unmatched_told:  # told once; a key that appears later may still match it
                self.unmatched_told.add(p)
                yet = " (yet)" if a.follow else ""  # (a key that appears later may still match it)
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
        first_view, self.first_view = self.first_view, False
        for run in [r for r in self.engines if r not in follower.stores]:
            del self.engines[run]  # its file is gone and no longer followed: it did not stall
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
            self.of = self._layouts(stores)  # (a changed layout gets its header: head_of is not it)
            # CSV's step column is "step" whatever the runs call it (rows carry their step as "step" too): one
            # name for a run keyed by ``iteration`` alone and beside a run keyed by ``step``
            lays = [self.of[s.run] for s in stores]
            want = dict.fromkeys("step" if c.key == lay.step_key else c.key for lay in lays for c in lay.cols)
            self.csv_want = list(want)  # the union of the runs' columns, first run's first
        for store in stores:
            self.arm_of[store.run] = store.arm
            self._emit_run(store, len(stores) > 1, first_view)
            self._tell_end(store)
        self.out.flush()

    def _tell_end(self, store: RunStore) -> None:
        """A run whose StepLogger's ``with`` block ended on a crash or an interruption: its alert (--alerts-only) or
        a note under its rows (text), once per close (a run resumed that dies again is told again), after the rows
        read with its description (one-shot and -f alike)."""
        with store.lock:
            info = store.meta.get("runinfo")
            end, closed, n = runinfo.ended_by(info), runinfo.closed_at(info), len(store)
            last = store.step_at(n - 1) if n else 0
        if end is None or closed is None or not n or self.end_told.get(store.run) == closed:
            return
        self.end_told[store.run] = closed
        if self.args.alerts_only:
            if (alert := end_alert(info, last)) is not None:
                self._alert(store.run, alert)
        elif self.args.format == "text":  # (as a resume is noted; jsonl, csv and md carry rows only)
            label = run_label(store, self.arm_runs.get(store.arm, 0) <= 1)  # (as its alerts name it)
            self.out.write(f"── {label}: {runinfo.end_words(end)} ──\n")
            self.need_head.add(store.run)  # rows of it after the note (a resume) are a table again

    def _emit_run(self, store: RunStore, multi: bool, first_view: bool) -> None:
        a, run = self.args, store.run
        note = ""
        walls: Sequence[float] = ()
        steps: Sequence[int] = ()
        # One consistent view: the follower thread may add a batch meanwhile. Only the rows to print are copied (a
        # run of a million rows costs what one of a thousand does), and nothing is written under the lock (a blocked
        # stdout must not stall the follower).
        with store.lock:
            n, version, resumes, generation = len(store), store.version, list(store.resumes), store.generation
            since = self.seen_version.get(run)
            lost = store.lost_since(since) if since is not None else None
            seen = self.versions.get(run)
            redo_upto: int | None = None  # rows printed before and changed since, up to this step, are printed again
            if run not in self.printed:
                first = max(n - a.last, 0) if (a.last and first_view and not a.alerts_only) else 0
                last = store.step_at(first - 1) if first else None
            else:
                last = self.printed[run]
                if seen is not None and (n < seen[1] or len(resumes) != seen[0] or generation != seen[2]):
                    # The file was truncated/replaced or the run resumed from a checkpoint: rows from there changed.
                    since_seen = resumes[seen[0] :] if generation == seen[2] else []
                    at = min(since_seen) if since_seen else None  # (several resumes since the last call: the earliest)
                    if not a.alerts_only and a.format == "text":
                        what = f"resumed at step {at}" if at is not None else "file reset"
                        note = f"── {sanitize(run)}: {what} ──\n"
                    if generation != seen[2] or at is None:
                        last = None
                        self.engines.pop(run, None)  # new content: its history starts again
                        self.replaced_seen.pop(run, None)  # (and its store's alerts of replaced rows)
                        self.printed.pop(run, None)
                    elif last is not None:
                        last = min(last, at - 1)
                        if run in self.engines:  # what it read was replaced: the rows held now, up to the resume
                            self.engines[run] = resumed_engine(store, at, old=self.engines[run])
                    self.need_head.add(run)
                if last is not None and lost is not None:  # more edits than the store lists: all rows from there again
                    last = min(last, lost - 1)
                # merged into a row already printed (tinker's eval line, a late metric) or inserted before it
                redo_upto = last
            missed: list[Alert] = []
            if a.alerts_only:  # rows a resume replaced before they were fed here (read after a restart): their alerts
                looked = self.replaced_seen.get(run, 0)
                fed_to = self.printed.get(run)
                missed = [x for x in store.replaced[looked:] if fed_to is None or x.step > fed_to]
                self.replaced_seen[run] = len(store.replaced)
            self.read_rows = self.read_rows or n > 0
            self.versions[run] = (len(resumes), n, generation)
            self.seen_version[run] = version
            first = 0 if last is None else min(store.index_of_step(last + 1), n)  # the first row past ``last``
            self.printed[run] = store.step_at(n - 1) if first < n else last
            again = {} if since is None or redo_upto is None else store.rows_edited(since, redo_upto, until=version)
            new = store.rows(first, n)
            if a.alerts_only:
                steps, walls = store.steps_between(first, n), store.wall_times_between(first, n)
        if note:
            self.out.write(note)
        if a.alerts_only:  # the rows as stored, as summary and the app scan them (an alias filled in by the layout
            # made tail alone watch tinker's un-namespaced kl_sample_train_v1: an E here, "alerts 0" there)
            if missed:
                self._label(store)
            for alert in missed:
                self._alert(run, alert)
            self._alerts(store, [(st, *again[st]) for st in sorted(again)], new, steps, walls, set(resumes))
            return
        derive = self.of[run].schema.derive
        rows = [derive(again[st][0]) for st in sorted(again)] + [derive(r) for r in new]
        if not rows:
            return
        lay = self.of[run]
        if a.format == "jsonl":
            # --columns here too; "step" (the run's step, whatever its file calls it) is kept, as in the table
            keep = {"step"} | {k for c in lay.cols for k in (c.key, *c.aliases)} if a.columns else None
            for r in rows:
                rec: dict[str, Any] = {"run": run, "arm": store.arm}
                for key, v in r.items():  # a row's own "run" (a W&B name) is kept as "run~2", never taken for ours
                    if not (key == "arm" and v == store.arm) and (keep is None or key in keep):
                        rec[unique_name(key, rec)] = v
                self.out.write(inert_json(encode_row(rec).decode("utf-8")))
        elif a.format == "csv":
            self._csv(store, rows, lay.cols)
        elif a.format == "md":
            self._md(store, rows, lay)
        else:
            self._text(store, rows, lay, multi)

    def _title(self, store: RunStore) -> str | None:
        """The block's label when its run differs from the last block's (None: same run). The first title of a run
        names its file too; later ones (tail -f over arms that take turns) only the arm, which is cheap."""
        run = store.run
        if run == self.block_run:
            return None
        self.block_run = run
        if run not in self.titled:
            self.titled.add(run)
            return f"{store.arm or run}" + (f" ({run})" if store.arm and store.arm != run else "")
        return run_label(store, self.arm_runs.get(store.arm, 0) <= 1)

    def _head_due(self, store: RunStore, lay: _Layout, first_block: bool) -> bool:
        """A header before the next row: a run's first block, a reset, a layout other than the last header's, or
        ``--header-every`` rows since it (counted over the stream, whichever runs they came from)."""
        every = self.args.header_every
        due = first_block or store.run in self.need_head or lay is not self.head_of
        return due or bool(every and self.since_head >= every)

    def _text(self, store: RunStore, rows: Sequence[Mapping[str, Any]], lay: _Layout, multi: bool) -> None:
        first_block = store.run not in self.titled
        title = self._title(store)
        # one run: no title (the command named it); live (-f) over a directory or several files, every run's rows
        # carry their name from the first on (other runs may appear later)
        if title is not None and (multi or self.live_many or not first_block):
            self.out.write(render.title_line(title, render.width(lay.cols) if first_block else 0).rstrip() + "\n")
        for r in rows:
            if self._head_due(store, lay, first_block):
                self.out.write(render.header(lay.cols) + "\n")
                self.head_of, self.since_head, first_block = lay, 0, False
                self.need_head.discard(store.run)
            self.out.write(lay.render_row(r) + "\n")
            self.since_head += 1

    def _csv(self, store: RunStore, rows: Sequence[Mapping[str, Any]], cols: Sequence[Col]) -> None:
        """One CSV for all runs: the header holds the union of their columns (a run without one leaves it empty).
        A column that appears later (under -f) is added at the end, with a new header line and a note on stderr:
        rows are never written under a header that does not match them."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        keys = self.csv_keys
        new = [k for k in self.csv_want if k not in keys] if keys is not None else []
        if keys is None or new:
            if keys is not None:
                shown = ", ".join(sanitize(k) for k in new[:5]) + (f" +{len(new) - 5}" if len(new) > 5 else "")
                self.err.write(f"steptable tail: new CSV column(s) {shown}: a new header line follows\n")
            keys = self.csv_keys = [*(keys or []), *(new if keys is not None else self.csv_want)]
            names: list[str] = ["run", "arm"]
            seen = set(names)  # the names' looks (as the table's headers are told apart)
            for k in keys:  # keys come from the files: made inert, and kept apart where they then read alike
                names.append(unique_name(csv_text(k), seen, look))
                seen.add(look(names[-1]))
            w.writerow(names)
        run, arm = csv_text(store.run), csv_text(store.arm)
        for r in rows:
            w.writerow([run, arm, *(csv_cell(r.get(k)) for k in keys)])
        self.out.write(buf.getvalue())

    def _md(self, store: RunStore, rows: Sequence[Mapping[str, Any]], lay: _Layout) -> None:
        """A labelled table per run; rows of the run and layout printed last continue its table (tail -f)."""
        cols = lay.cols
        title = self._title(store)
        if title is not None or store.run in self.need_head or lay is not self.head_of:
            heads = [md_escape(c.header.strip()) for c in cols]
            label = title if title is not None else run_label(store, self.arm_runs.get(store.arm, 0) <= 1)
            self.out.write(f"\n**{md_escape(label)}**\n\n| " + " | ".join(heads) + " |\n")
            self.out.write("|" + "|".join("---:" if c.align == "right" else ":---" for c in cols) + "|\n")
            self.head_of = lay
            self.need_head.discard(store.run)
        clocks = [i for i, c in enumerate(cols) if c.key in WALL_KEYS]
        for r in rows:
            cells = render.cells(cols, r)
            for i in clocks:  # a unix time as the time it is, not 1.8e9 on every row (csv and jsonl keep the number)
                if (t := epoch_seconds(r.get(cols[i].key))) is not None:
                    cells[i] = datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            self.out.write("| " + " | ".join(md_escape(x.strip()) for x in cells) + " |\n")

    def _alerts(
        self,
        store: RunStore,
        redo: Sequence[tuple[int, Mapping[str, Any], frozenset[str] | None]],
        rows: Sequence[Mapping[str, Any]],
        steps: Sequence[int],
        walls: Sequence[float],
        resumes: Collection[int] = (),
    ) -> None:
        """Feed the run's engine what changed in rows fed before (``redo``), then the new ``rows`` with their
        ``steps`` and wall times (aligned with them). The gap before a row at one of the run's ``resumes`` is the
        crash and the restart, not a stall (as ``alerts.scan`` takes it for summary and the app)."""
        eng = self.engines.setdefault(store.run, AlertEngine())
        if rows:
            self.far_told.discard(store.run)  # it wrote again: a later stall is told again
        self._label(store)
        for step, row, keys in redo:  # what changed in rows already fed: the cells merged in, or the inserted row
            for alert in eng.update(step, row if keys is None else {k: row[k] for k in keys if k in row}):
                self._alert(store.run, alert)
        for r, step, wall in zip(rows, steps, walls, strict=True):
            if step in resumes:
                eng.resumed()
            found = eng.check_stall(wall) if math.isfinite(wall) and step not in resumes else []  # a gap now over
            for alert in [*found, *eng.update(int(step), r, wall)]:
                self._alert(store.run, alert)

    def _label(self, store: RunStore) -> None:
        # the arm when no other run has it, else run/arm: two experiments' seed0 must not read as one
        self.labels[store.run] = run_label(store, self.arm_runs.get(store.arm, 0) <= 1)

    def check_stalls(self, now: float, stores: Collection[RunStore] = ()) -> None:
        """A stall of each run read, against ``now``: from its rows' clock, or for ``stores`` whose rows carry none,
        from the age of its file against its own step time (once, until it writes again)."""
        for run, eng in self.engines.items():
            if run in self.ended:
                continue  # its StepLogger was closed: it ended, it did not stall
            for alert in eng.check_stall(now):
                self._alert(run, alert)
        for store in stores:
            run = store.run
            fed = self.engines.get(run)
            if fed is not None and not fed.times_rows() and run not in self.ended and run not in self.far_told:
                if (far := clockless_stall(store, now)) is not None:
                    self.far_told.add(run)
                    self._alert(run, far)
        self.out.flush()

    def _alert(self, run: str, alert: Alert) -> None:
        """One alert in the chosen format: a text line, a JSON object, a CSV row (header before the first) or a
        markdown list item."""
        if alert.level == "E":  # before the line: a SIGTERM right after it must not lose the status
            self.error_alert = True
        label, fmt = self.labels.get(run, run), self.args.format
        if fmt == "jsonl":
            rec = {"run": run, "arm": self.arm_of.get(run, ""), "label": label, "step": alert.step,
                   "level": alert.level, "column": alert.column, "kind": alert.kind, "message": alert.message}
            self.out.write(inert_json(json.dumps(rec, ensure_ascii=False) + "\n"))
        elif fmt == "csv":
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            if not self.alert_head:
                self.alert_head = True
                w.writerow(["run", "arm", "step", "level", "column", "kind", "message"])
            w.writerow([csv_text(x) for x in (run, self.arm_of.get(run, ""))]
                       + [alert.step, alert.level, csv_text(alert.column), alert.kind, csv_text(alert.message)])
            self.out.write(buf.getvalue())
        elif fmt == "md":
            self.out.write(f"- {alert.level} {md_escape(f'[{label}] {alert.message_line()}')}\n")
        else:
            self.out.write(f"{alert.level} [{sanitize(label)}] {alert.message_line()}\n")


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
