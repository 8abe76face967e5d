"""How `steptable tail` writes on its stream: runs' rows as the fixed-width table, JSONL, CSV or markdown, and alerts
and rows lost for good (gaps) in the same format, with what the stream printed last (block titles and headers, the
CSV header's columns). What is printed and when (new rows, edits, resets, resumes, layouts, alert engines) is
steptable.cli.tailout's Tail.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

from steptable.alerts.engine import Alert
from steptable.ingest import RunStore
from steptable.ingest.gaps import Gap
from steptable.ingest.parsed import WALL_KEYS, epoch_seconds
from steptable.logger.rowjson import json_line
from steptable.schemas import Schema
from steptable.schemas.headers import look
from steptable.summary.report import run_label
from steptable.table import render
from steptable.table.columns import Col
from steptable.table.formatting import md_escape, sanitize, unique_name
from steptable.table.outcells import csv_cell, csv_text, inert_json

#: the ``kind`` of a JSONL line that says rows were lost (every other line is a row or an alert)
GAP_KIND = "steptable.gap"


class Layout:
    """The columns of one schema group, their compiled row renderer and the key of the step column (the runs' own
    step key, ``iteration``, where they all share it)."""

    def __init__(self, schema: Schema, cols: tuple[Col, ...], step_key: str) -> None:
        self.schema, self.cols, self.step_key = schema, cols, step_key
        self.render_row = render.compile_row(cols)


class Printer:
    """Writes runs' rows and alerts on one stream in the chosen ``--format``, each block titled and headed where the
    run or layout changes from the last printed block."""

    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
        self.args = args
        self.out, self.err = out, err
        self.csv_keys: list[str] | None = None  # the columns of the CSV header printed last (they only grow)
        self.csv_want: list[str] = []  # the union of the runs' columns, in order: what the header should hold
        self.alert_head = False  # the CSV header of alert lines was printed
        # text and md: a title (and a header) only where the run or layout changes from the last printed block
        self.block_run: str | None = None  # the run of the last printed block
        self.head_of: Layout | None = None  # the layout of the last printed header
        self.since_head = 0  # rows printed since that header
        self.titled: set[str] = set()  # runs whose full title was printed (later titles are short)
        self.need_head: set[str] = set()  # runs whose next block needs a header again (a reset, a resume)
        self.live_many = bool(args.follow) and (len(args.paths) > 1 or any(os.path.isdir(p) for p in args.paths))
        self.arm_runs: Counter[str] = Counter()  # arm -> runs that have it (alert labels)

    def laid_out(self, lays: Sequence[Layout]) -> None:
        """The runs were laid out again: the columns the CSV header should hold."""
        # CSV's step column is "step" whatever the runs call it (rows carry their step as "step" too): one
        # name for a run keyed by ``iteration`` alone and beside a run keyed by ``step``
        want = dict.fromkeys("step" if c.key == lay.step_key else c.key for lay in lays for c in lay.cols)
        self.csv_want = list(want)  # the union of the runs' columns, first run's first

    def rows(self, store: RunStore, rows: Sequence[Mapping[str, Any]], lay: Layout, multi: bool) -> None:
        """A run's rows (derived, in order) in the chosen format."""
        a, run = self.args, store.run
        if a.format == "jsonl":
            keep = self.jsonl_keep(lay)
            lines = []
            for r in rows:
                rec: dict[str, Any] = {"run": run, "arm": store.arm}
                for key, v in r.items():  # a row's own "run" (a W&B name) is kept as "run~2", never taken for ours
                    if not (key == "arm" and v == store.arm) and (keep is None or key in keep):
                        rec[unique_name(key, rec)] = v
                lines.append(json_line(rec))
            # (one write for the rows given: encode_row's bytes as text, made inert; each step is per character)
            self.jsonl_text("".join(lines))
        elif a.format == "csv":
            self._csv(store, rows, lay.cols)
        elif a.format == "md":
            self._md(store, rows, lay)
        else:
            self._text(store, rows, lay, multi)

    def jsonl_keep(self, lay: Layout) -> set[str] | None:
        """The keys of a row that JSONL prints (None: all): --columns here too; "step" (the run's step, whatever
        its file calls it) is kept, as in the table."""
        return {"step"} | {k for c in lay.cols for k in (c.key, *c.aliases)} if self.args.columns else None

    def jsonl_text(self, lines: str) -> None:
        """JSONL lines as :func:`~steptable.logger.rowjson.encode_row` encodes them, made inert; in one write."""
        if not lines.isascii():  # (what inert_json escapes and lone surrogates are all past ASCII)
            lines = inert_json(lines.encode("utf-8", "replace").decode("utf-8"))
        self.out.write(lines)

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

    def _head_due(self, store: RunStore, lay: Layout, first_block: bool) -> bool:
        """A header before the next row: a run's first block, a reset, a layout other than the last header's, or
        ``--header-every`` rows since it (counted over the stream, whichever runs they came from)."""
        every = self.args.header_every
        due = first_block or store.run in self.need_head or lay is not self.head_of
        return due or bool(every and self.since_head >= every)

    def _text(self, store: RunStore, rows: Sequence[Mapping[str, Any]], lay: Layout, multi: bool) -> None:
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

    def _md(self, store: RunStore, rows: Sequence[Mapping[str, Any]], lay: Layout) -> None:
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

    def gap(self, store: RunStore, gap: Gap) -> None:
        """Rows of ``store``'s run lost for good, in-band in the chosen format: a text notice line; a markdown
        quote between two tables (the rows after it get their header again); a JSON object whose ``kind`` is
        ``steptable.gap`` and that has no ``step`` (a row reader skips it); a CSV line of one field starting with
        ``#`` (skipped by readers told ``#`` starts a comment, e.g. pandas' ``comment="#"``), no comma or quote."""
        fmt, label = self.args.format, run_label(store, self.arm_runs.get(store.arm, 0) <= 1)
        text = f"{sanitize(label)}: {gap.message()}"
        if fmt == "jsonl":
            rec = {"kind": GAP_KIND, "run": store.run, "arm": store.arm, "file": gap.file,
                   "after_byte": gap.after_byte, "after_step": gap.after_step, "before_step": gap.before_step,
                   "message": text}
            self.out.write(inert_json(json.dumps(rec, ensure_ascii=False) + "\n"))
        elif fmt == "csv":
            self.out.write("# steptable: " + text.replace(",", ";").replace('"', "'") + "\n")
        elif fmt == "md":
            self.out.write(f"\n> **{md_escape(text)}**\n")
            self.need_head.add(store.run)
        else:
            self.out.write(f"── {text} ──\n")
            self.need_head.add(store.run)

    def alert(self, run: str, arm: str, label: str, alert: Alert) -> None:
        """One alert in the chosen format: a text line, a JSON object, a CSV row (header before the first) or a
        markdown list item."""
        fmt = self.args.format
        if fmt == "jsonl":
            rec = {"run": run, "arm": arm, "label": label, "step": alert.step,
                   "level": alert.level, "column": alert.column, "kind": alert.kind, "message": alert.message}
            self.out.write(inert_json(json.dumps(rec, ensure_ascii=False) + "\n"))
        elif fmt == "csv":
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            if not self.alert_head:
                self.alert_head = True
                w.writerow(["run", "arm", "step", "level", "column", "kind", "message"])
            w.writerow([csv_text(x) for x in (run, arm)]
                       + [alert.step, alert.level, csv_text(alert.column), alert.kind, csv_text(alert.message)])
            self.out.write(buf.getvalue())
        elif fmt == "md":
            self.out.write(f"- {alert.level} {md_escape(f'[{label}] {alert.message_line()}')}\n")
        else:
            self.out.write(f"{alert.level} [{sanitize(label)}] {alert.message_line()}\n")
