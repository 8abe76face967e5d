"""What `steptable tail` prints: the Tail that finds runs' new rows (and rows changed in place, reset or resumed), lays
their columns out and feeds their alerts, for one stream. How rows and alerts are written in each format (the table,
JSONL, CSV or markdown) is steptable.cli.tailformats; the command itself (arguments, one-shot and follow loops) is
steptable.cli.tail.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any, TextIO

from steptable.alerts.engine import Alert, earlier_end_alerts, end_alert
from steptable.cli.reading import named, tell_problems
from steptable.cli.tailalerts import TailAlerts, Told
from steptable.cli.tailcursor import Mark, Since
from steptable.cli.tailformats import Layout, Printer
from steptable.cli.tailjsonl import jsonl_lines, plain
from steptable.cli.tailkeep import for_args, holds_for, needed
from steptable.cli.taillayout import DEFAULT_WIDTH, TailLayouts
from steptable.cli.tailsince import Changed, Places, cells_at
from steptable.ingest import Follower, RunStore
from steptable.ingest.copies import Copies, left_out
from steptable.schemas.registry import logged_schema
from steptable.summary.report import run_label
from steptable.table import runinfo
from steptable.table.cells import first_few
from steptable.table.formatting import sanitize

__all__ = ["DEFAULT_WIDTH", "ROW_BATCH", "Tail"]

ROW_BATCH = 2048  # rows built and printed at a time


class Tail:
    """Prints what is new in each run since the last call of :meth:`emit`."""

    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
        self.args = args
        self.out, self.err = out, err
        self.seen_version: dict[str, int] = {}  # run -> store.version when it was last printed (for its edits)
        self.printer = Printer(args, out, err)  # the rows and alerts in the chosen format, and what it printed last
        self.versions: dict[str, tuple[int, int, int]] = {}  # run -> (resumes, len, generation) seen: resets
        self.errors_seen = 0
        self.of: dict[str, Layout] = {}  # run -> the layout of its schema group
        self.layouts = TailLayouts(args, out, err)
        self.keys_seen: set[str] = set()
        self.gaps_told: dict[str, int] = {}  # run -> its store's gaps printed
        self.replaced_seen: dict[str, int] = {}  # a run's RunStore.replaced alerts looked at so far
        self.earlier_told: set[tuple[str, int, str]] = set()  # (run, step, message) of earlier ends told
        self.closes_told: dict[str, set[float]] = {}  # run -> the closes whose crash or interruption was told
        self.logged: dict[str, str | None] = {}  # run -> the name of its logged schema when the layout was made
        self.first_view = True  # -n is for the runs found at the start: a run found later is new output in full
        self.read_rows = False  # a row was read (the status of a -f that ends: was anything readable found?)
        self.since: Since | None = getattr(args, "since", None)  # only rows and alerts after each run's mark in it
        self.page: int = getattr(args, "page", None) or 0  # with --since or -n: at most this many rows (0: all)
        self.places = Places(self.since, self.page)  # where each run starts after the cursor, and is left
        self.printed = self.places.printed
        self.alerts = TailAlerts(self.printer)
        self.only: str | None = getattr(args, "run", None)  # only the runs of this id or arm
        self.copies = Copies(args.paths)  # (one training through several loggers is printed once)
        self.copies_told: set[str] = set()
        # -n: 20 by default, every row past the cursor with --since
        self.last: int = args.last if args.last is not None else (0 if self.since is not None else 20)

    def check_stalls(self, now: float, stores: Collection[RunStore] = ()) -> None:
        """Tell the stalls of ``stores`` against ``now`` (TailAlerts.check_stalls), then flush."""
        self.alerts.check_stalls(now, stores)
        self.out.flush()

    def projection(self) -> Any:
        """The keep test of the stores to read (None: every key's; steptable.cli.tailkeep.for_args)."""
        return for_args(self.args, self.layouts.patterns)

    def projection_holds(self, stores: Sequence[RunStore]) -> bool:
        """Stores read under :meth:`projection` print what stores of every key would (tailkeep.holds_for)."""
        return holds_for(self.args, self.layouts.patterns, stores)

    def chosen(self, follower: Follower) -> list[RunStore]:
        """The runs to print (all, or those --run names by id or arm), by id; a run with the same rows as another
        (steptable.ingest.copies) only where its file or its id is named."""
        only = self.only
        every = follower.stores
        stores = self.copies.distinct(every, () if only is None else (only,))
        asked = {k for k in self.copies.of.keys() - self.copies_told if only is None or only in (k, every[k].arm)}
        if asked:  # (the copies of the runs --run asks for)
            self.copies_told |= asked
            self.err.write(f"steptable tail: {left_out(len(asked))}\n")
        return [s for _, s in sorted(stores.items())] if only is None else named(
            [s for _, s in sorted(stores.items())], only)

    def cursor(self, follower: Follower) -> str | None:
        """The cursor to read on from, for the runs chosen (Places.cursor): one run's ``STEP:CELLS[:EDITS]@KEY``,
        or a token of every run's mark; None when nothing was read and no --since given."""
        return self.places.cursor(self.chosen(follower))

    def short_of(self, follower: Follower) -> tuple[int, bool] | None:
        """(the highest last step of the chosen runs, whether they all ended) where each run's mark in --since is
        past its last step (Places.short_of); else None."""
        return self.places.short_of(self.chosen(follower), self.alerts.ended)

    # -------------------------------------------------------------------------------------------- output
    def filter_missed(self) -> bool:
        """Every --columns pattern matched nothing (a typo: the table shows the step column alone)."""
        return self.layouts.filter_missed()

    def emit(self, follower: Follower) -> None:
        """Print what changed in ``follower``'s runs since the last call: new bad lines (stderr), then per run its
        new rows, rows edited or replaced since, and how its logger ended (or, with --alerts-only, their alerts),
        laying the runs out again first where keys, widths or a logged schema changed."""
        stores = self.chosen(follower)
        self.places.alone = len(stores) == 1
        first_view, self.first_view = self.first_view, False
        self.alerts.keep_only(follower.stores)
        self.printer.arm_runs = Counter(s.arm for s in stores)
        self.alerts.ended = {s.run for s in stores if runinfo.closed_at(s.meta.get("runinfo")) is not None}
        count, kept = follower.problems_after(self.errors_seen)  # (the list keeps only the latest)
        if count - self.errors_seen > len(kept):
            self.err.write(f"steptable: {count - self.errors_seen - len(kept)} more bad line(s) before these not "
                           "shown\n")
        tell_problems(kept, self.err, stores if getattr(self.args, "run", None) else None)
        self.errors_seen = count
        if not stores:
            return
        keys = {k for s in stores for k in s.keys}
        outgrown = self.layouts.outgrown(stores, self.of, self.versions)  # (first: it notes the widths new rows need)
        logged = {s.run: ls.name if (ls := logged_schema(s)) is not None else None for s in stores}
        if keys != self.keys_seen or any(s.run not in self.of for s in stores) or outgrown or logged != self.logged:
            # (a StepLogger's description that arrived or changed lays its run out with its own columns)
            self.logged = logged
            # New runs or keys (a sparse eval column appearing late), or steps past the step column's width: lay
            # out again and re-print the header of each run whose layout changed.
            unkept: dict[str, list[str]] = {}
            if follower.keep is not None and not self.projection_holds(stores):
                # (-f: new keys made a key the projection left out one to print: kept from now on, its cells of
                # the rows read before absent; a one-shot read never gets here: it is read again whole first)
                follower.keep = None
                for s in stores:
                    with s.lock:
                        unkept[s.run] = s.keep_every_key()
            self.keys_seen = keys
            # (a changed layout gets its header: the printer's head_of is not it)
            self.of = self.layouts.lay_out(stores, self.of)
            for s in stores:
                self._tell_unkept(s, unkept.get(s.run, ()))
            self.printer.laid_out([self.of[s.run] for s in stores])  # (the columns of the CSV header)
        if self.filter_missed() and not self.args.follow:
            return  # (a typo in --columns: a table of the step alone is not an answer; the status says so)
        if self.page and not self.args.alerts_only and not self.args.follow:
            self.places.pages = pages(self.page, {s.run: self._pending(s, first_view) for s in stores})
        for store in stores:
            self.alerts.arm_of[store.run] = store.arm
            self._emit_run(store, len(stores) > 1, first_view)
            self._tell_end(store)
        self.out.flush()

    def _tell_unkept(self, store: RunStore, gone: Sequence[str]) -> None:
        """Say (stderr) which of the keys ``gone`` (left out by the projection until now) the run's new layout
        prints: their cells in the rows read before now are empty, though the file holds them."""
        printed = self._printed_keys(self.of[store.run])
        shown = sorted(k for k in gone if printed is None or k in printed)
        if shown:
            names = first_few([sanitize(k) for k in shown])
            self.err.write(f"steptable tail: {sanitize(store.arm or store.run)}: {names} now printed but not kept "
                           "before: empty in the rows read so far (a one-shot tail reads them)\n")

    def _tell_end(self, store: RunStore) -> None:
        """A run whose StepLogger's ``with`` block ended on a crash or an interruption: its alert (--alerts-only) or
        a note under its rows (text), once per close (a run resumed that dies again is told again), after the rows
        read with its description (one-shot and -f alike)."""
        with store.lock:
            info = store.meta.get("runinfo")
            end, closed, n = runinfo.ended_by(info), runinfo.closed_at(info), len(store)
            last = store.step_at(n - 1) if n else 0
        if self.args.alerts_only:  # how the process before a resume ended (the resumed one rewrote the description)
            for before in earlier_end_alerts(info, self.closes_told.get(store.run, ())):
                if (said := (store.run, before.step, before.message)) not in self.earlier_told:
                    self.earlier_told.add(said)
                    self.alerts.tell(store.run, before)
        told = self.closes_told.setdefault(store.run, set())
        if end is None or closed is None or not n or closed in told:
            return
        told.add(closed)
        if self.args.alerts_only:
            if (alert := end_alert(info, last)) is not None:
                self.alerts.tell(store.run, alert)
        elif self.args.format == "text":  # (as a resume is noted; jsonl, csv and md carry rows only)
            label = run_label(store, self.printer.arm_runs.get(store.arm, 0) <= 1)  # (as its alerts name it)
            self.out.write(f"── {label}: {runinfo.end_words(end)} ──\n")
            self.printer.need_head.add(store.run)  # rows of it after the note (a resume) are a table again

    def _pending(self, store: RunStore, first_view: bool) -> int:
        """About how many rows of ``store`` there are to print (after its cursor, of the last -n), for its share of
        a page (rows a resume or an edit brings again are not counted: the share is at least 1)."""
        with store.lock:
            n = len(store)
            if store.run in self.printed:
                last = self.printed[store.run]
                return n if last is None else n - min(store.index_of_step(last + 1), n)
            first = max(n - self.last, 0) if self.last and first_view else 0
            if (m := self.places.mark(store)) is not None:
                first = max(first, self.places.after_cursor(store, m))
            return n - first

    def _emit_run(self, store: RunStore, multi: bool, first_view: bool) -> None:
        a, run = self.args, store.run
        note = aside = ""
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
            gaps = store.gaps[self.gaps_told.get(run, 0) :]  # rows lost for good since the last call: said in-band
            self.gaps_told[run] = len(store.gaps)
            redo_upto: int | None = None  # rows printed before and changed since, up to this step, are printed again
            redo: list[int] = []  # steps of rows before --since changed since its cursor was taken
            if run not in self.printed:
                first = max(n - self.last, 0) if (self.last and first_view and not a.alerts_only) else 0
                mark = self.places.mark(store)
                changed = self.places.changed(store, mark)
                back = None if a.alerts_only else self.places.went_back(
                    store, n, mark, changed, run in self.alerts.ended,
                    sanitize(run_label(store, self.printer.arm_runs.get(store.arm, 0) <= 1)))
                if a.alerts_only and mark is not None:  # (every row is fed: those told before are not told)
                    self.alerts.told[run] = told_of(store, mark, changed)
                if back is not None:
                    self.places.back.add(run)
                    first = max(first, store.index_of_step(back[0]))
                    if a.format == "text":
                        note = f"── {back[1]} ──\n"
                    else:  # (in-band it would break JSONL and CSV)
                        aside = f"steptable tail: {back[1]}\n"
                elif mark is not None and not a.alerts_only:  # (alerts: every row fed, those after it told)
                    first = max(first, self.places.after_cursor(store, mark))
                if changed is not None and not a.alerts_only:  # (those printed from ``first`` on come once)
                    upto = store.step_at(first) if first < n else None
                    redo = sorted({st for st in changed[2] if upto is None or st < upto})
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
                        self.alerts.restart(run)  # new content: its history starts again
                        self.replaced_seen.pop(run, None)  # (and its store's alerts of replaced rows)
                        self.printed.pop(run, None)
                    elif last is not None:
                        last = min(last, at - 1)
                        self.alerts.resumed(store, at)  # what it read was replaced: the rows held now
                    self.printer.need_head.add(run)
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
            self.places.edits_seen[run] = store.earlier_changes.count
            first = 0 if last is None else min(store.index_of_step(last + 1), n)  # the first row past ``last``
            stop = n
            if self.page and not a.alerts_only and not a.follow:
                stop = min(n, first + self.places.pages[run])  # (the earliest rows after the cursor or of the last
                # -n: the next page starts after them)
                if stop < n:
                    aside += (f"steptable tail: {n - stop} more row(s) of {sanitize(run)} after step "
                              f"{store.step_at(stop - 1)}\n")
            self.printed[run] = store.step_at(stop - 1) if first < stop else last
            again = {} if since is None or redo_upto is None else store.rows_edited(since, redo_upto, until=version)
            for st in redo:  # (rows a cursor's count says changed after it was taken)
                if (i := store.index_of_step(st)) < n and store.step_at(i) == st:
                    again[st] = (store.row(i), None)
            if a.alerts_only:
                new = store.rows(first, n)
                steps, walls = store.steps_between(first, n), store.wall_times_between(first, n)
            else:  # only the keys printed, copied now; their rows are built a batch at a time below
                cut = store.cut(self._printed_keys(self.of[run]), first, stop)
        if note:
            self.out.write(note)
        if aside:
            self.err.write(aside)
        for gap in gaps if not a.alerts_only else ():
            self.printer.gap(store, gap)
        if a.alerts_only:  # the rows as stored, as summary and the app scan them (not derived: an alias the layout
            # fills in would be watched here alone, and tail's alerts would differ from theirs)
            if missed:
                self.alerts.label(store)
            for alert in missed:
                self.alerts.tell(run, alert, rows=False)
            self.alerts.feed(store, [(st, *again[st]) for st in sorted(again)], new, steps, walls, set(resumes))
            return
        derive = self.of[run].schema.derive
        if again:
            self.printer.rows(store, [derive(again[st][0]) for st in sorted(again)], self.of[run], multi)
        lay = self.of[run]
        keep = self.printer.jsonl_keep(lay) if a.format == "jsonl" else None
        fast = a.format == "jsonl" and plain(lay.schema, keep)
        for lo in range(0, len(cut), ROW_BATCH):  # a long run's rows go out as they are built, never all held at once
            if fast and (text := jsonl_lines(run, store.arm, cut, lo, lo + ROW_BATCH, keep)) is not None:
                self.printer.jsonl_text(text)
            else:
                self.printer.rows(store, [derive(r) for r in cut.rows(lo, lo + ROW_BATCH)], lay, multi)

    def _printed_keys(self, lay: Layout) -> set[str] | None:
        """The stored keys the printed rows are made of (None: all of them, jsonl without --columns): the layout's
        columns, their aliases and what their derived values are computed from (closed over: an alias of a
        derived column's input counts), the step."""
        a = self.args
        if a.format == "jsonl" and not a.columns:
            return None
        csv = [*self.printer.csv_want, *(self.printer.csv_keys or ())] if a.format == "csv" else []
        return needed(lay.cols, lay.schema, lay.step_key, csv)


def pages(page: int, pending: Mapping[str, int]) -> dict[str, int]:
    """Each run's share of a page of ``page`` rows (0: all), ``pending`` the rows each has to print: as even as can
    be, at least 1 each, what a run has no rows for going to the others (one seed still going among 39 ended gets
    the whole page; a page a run would be 40 pages to an agent)."""
    out: dict[str, int] = {}
    left = page
    for i, run in enumerate(sorted(pending, key=lambda r: pending[r])):  # (the fewest first: their rest is shared)
        share = max(left // (len(pending) - i), 1) if page else 0
        out[run] = share
        left = max(left - min(pending[run], share), 0)
    return out


def told_of(store: RunStore, mark: Mark, changed: Changed | None) -> Told:
    """What ``mark`` says was told of the run's alerts (TailAlerts.Told): those up to its step, but for the rows
    ``changed`` since (Places.changed) and its own row where it holds more cells than the mark counted. Called
    under the store's lock."""
    again = set(changed[2]) if changed is not None else set()
    if mark.cells is not None and (cells := cells_at(store, mark.step)) is not None and cells > mark.cells:
        again.add(mark.step)
    froms = [x for x in changed[:2] if x is not None] if changed is not None else []
    return Told(mark.step, frozenset(again), min(froms) if froms else None)
