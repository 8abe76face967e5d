"""The state of a watch session, apart from widgets: runs shown, the shared column layout, filter / pins / hidden
arms, alerts, stalls and bad lines. Pure (no textual); the app calls it and hands the results to widgets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from steptable.app.layouts import Layouts
from steptable.app.model import (
    INTERVAL_WINDOW,
    Store,
    display_order,
    ended,
    filter_cols,
    filter_globs,
    stalled_for,
    usual_interval,
)
from steptable.app.widgets.status import Event, bad_line
from steptable.columns import Col

if TYPE_CHECKING:  # (imported when first needed: the first frame does not wait for them)
    from steptable.alerts import Alert
    from steptable.schemas import Schema

MAX_ALERTS = 5000
FIRST_LOOK = 20  # rows of a newly seen run checked for values wider than the layout's columns


class _Picked:
    """``count`` rows spread evenly over a store's first ``n`` (the last one included), as rows 0..count-1."""

    def __init__(self, store: Store, n: int, count: int) -> None:
        self.store = store
        k = min(n, count)
        self.rows = [(n - 1) * j // max(k - 1, 1) for j in range(k)]

    def value(self, i: int, key: str) -> Any:
        return self.store.value(self.rows[i], key)


@dataclass
class Run:
    store: Store
    rows: int = 0
    generation: int = -1
    preview: str | None = None  # a note while this is the tail preview of a file still being parsed
    bad_seen: int = 0  # the store's bad-line count at the last update
    bad_turn: int = 0  # when (the session's count of updates that brought bad lines) it last grew


@dataclass
class Session:
    schema_name: str | None = None
    near: Sequence[str] | None = None  # where a named schema is looked for (the watched paths), as tail does
    runs: dict[str, Run] = field(default_factory=dict)
    layout: tuple[Col, ...] = ()
    pattern: str = ""
    pins: list[str] = field(default_factory=list)
    hidden: set[str] = field(default_factory=set)
    selected: str | None = None
    alerts: list[Event] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    stalls: dict[str, float] = field(default_factory=dict)
    _keys: frozenset[str] = frozenset()
    _tried: dict[str, int] = field(default_factory=dict)  # key -> the widest value a new layout was made for
    _schema: Schema | None = None
    _layouts: Layouts = field(default_factory=Layouts)  # each key measured once, not again for every new key
    _bad_turn: int = 0
    _hidden_for: tuple[Any, tuple[Col, ...]] | None = None  # (filter, keys, layout) -> the columns it shows
    problems: list[str] = field(default_factory=list)  # to be said once each (the app takes them as notices)
    _alerted: set[tuple[str, str, int, str, str, str]] = field(default_factory=set)
    _said: set[str] = field(default_factory=set)

    # ------------------------------------------------------------------------------------------------ runs

    def update(self, run_id: str, store: Store, preview: str | None = None) -> bool:
        """Take the latest state of a run; True when the column layout changed (new keys)."""
        run = self.runs.get(run_id)
        if run is None or run.store is not store:
            run = self.runs[run_id] = Run(store)
        before, n = run.rows, len(store)
        if store.bad_count != run.bad_seen:  # a bad line carries no time: the session notes when it saw them
            run.bad_seen = store.bad_count
            self._bad_turn += 1
            run.bad_turn = self._bad_turn
        run.preview = preview
        run.rows = n
        run.generation = store.generation
        logged = self._logged(store)
        return self._relayout(self._outgrown(store, before, n) or logged)

    def _logged(self, store: Store) -> bool:
        """A StepLogger description (steptable.json) arrived or changed for this run: its columns are the layout's
        from now on (unless a schema was named). True when the schema changes."""
        from steptable.schemas.registry import logged_schema

        found = logged_schema(store)
        if self.schema_name or found is None or found is self._schema:
            return False
        logged = {id(s): s for r in self.runs.values() if (s := logged_schema(r.store)) is not None}
        if len(logged) > 1:  # runs logged with different column sets: the app has one layout, so none of theirs
            fallback = self._detected()
            changed = fallback is not self._schema
            self._schema = fallback
            return changed
        self._schema = found
        return True

    def _detected(self) -> Schema:
        from steptable.schemas import get_schema

        first = next((r.store for r in self.runs.values() if r.store.keys), None)
        return get_schema("generic") if first is None else self._detect(first)

    def _run_schema(self, store: Store) -> Schema:
        """The run's schema: its StepLogger's own, else the best-fitting one (see _detect)."""
        from steptable.schemas.registry import logged_schema

        return logged_schema(store) or self._detect(store)

    def _detect(self, store: Store) -> Schema:
        """The best-fitting schema; where a steptable.toml beside the run cannot be used, the best built-in one,
        and the file's problem said once (tail stops at it; a watch session goes on with the runs it can show)."""
        from steptable.schemas import SchemaFileError, detect

        try:
            return detect(store.path, store.keys)
        except SchemaFileError as e:
            self._say(str(e))
            return detect(store.path, store.keys, user=False)

    def _say(self, text: str) -> None:
        from steptable.formatting import sanitize

        if text not in self._said:
            self._said.add(text)
            self.problems.append(sanitize(text))  # names paths and keys from the disk

    def _outgrown(self, store: Store, before: int, n: int) -> bool:
        """New rows hold a value its column has no room for (``####``, an integer cut to a compact form), one the
        layout has not been made again for yet (a value that stays too wide after that does not ask again)."""
        from steptable.schemas import cells_outgrown

        if not self.layout or not 0 <= before < n:
            return False
        try:
            if before:  # a live run's few new rows
                grown = cells_outgrown(self.layout, store, max(before, n - 200), n)
            else:  # a run seen for the first time: rows across it, as a layout samples them (not its last 200:
                # with 200 keys, each new arm cost 40k formatted cells on the UI thread)
                grown = cells_outgrown(self.layout, _Picked(store, n, FIRST_LOOK), 0, min(n, FIRST_LOOK))
        except IndexError:  # the follower emptied the store since n was taken (a rewritten file)
            return False
        grown = {k: w for k, w in grown.items() if w > self._tried.get(k, 0)}
        self._tried.update(grown)
        return bool(grown)

    def _relayout(self, outgrown: bool = False) -> bool:
        from steptable.schemas import steps_outgrown, widened

        keys = frozenset(k for r in self.runs.values() for k in r.store.keys)
        stores = [r.store for r in self.runs.values()]
        if keys == self._keys and self.layout and not outgrown and not steps_outgrown(self.layout, stores):
            return False
        if not any(len(s) for s in stores):
            return False  # no data yet: widths would be guesses

        self._keys = keys
        self.layout = widened(self._layouts.layout(stores, self.schema()), self._tried)
        if not self.schema_name:
            from steptable.schemas import SchemaFileError
            from steptable.schemas.registry import unused_files

            try:
                for e in unused_files(stores):  # (said once each, as a file's problems are)
                    self._say(f"{e} (the file is not used)")
            except SchemaFileError:  # a file that cannot be read at all: said when the run was detected
                pass
        if self.selected not in {c.key for c in self.layout}:
            self.selected = self.layout[1].key if len(self.layout) > 1 else None
        return True

    def schema(self) -> Schema:
        from steptable.schemas import SchemaFileError, get_schema

        if self._schema is None:
            if self.schema_name:
                try:
                    self._schema = get_schema(self.schema_name, near=self.near)
                except (SchemaFileError, KeyError) as e:  # checked at start; a file that went bad since
                    self._say(str(e.args[0]) if isinstance(e, KeyError) else str(e))
                    self._schema = get_schema("generic")
            else:
                first = next((r.store for r in self.runs.values() if r.store.keys), None)
                if first is None:
                    return get_schema("generic")
                self._schema = self._run_schema(first)
        return self._schema

    def labels(self) -> dict[str, str]:
        names = [r.store.arm or rid for rid, r in self.runs.items()]
        dup = {n for n in names if names.count(n) > 1}
        return {rid: (rid if n in dup else n) for (rid, r), n in zip(self.runs.items(), names, strict=True)}

    def visible(self) -> list[str]:
        return [rid for rid in self.runs if rid not in self.hidden]

    def toggle_arm(self, index: int) -> str | None:
        """Hide / show the ``index``-th run (0-based); never hides the last visible one. Returns its id."""
        ids = list(self.runs)
        if not 0 <= index < len(ids):
            return None
        rid = ids[index]
        if rid in self.hidden:
            self.hidden.discard(rid)
        elif len(self.visible()) > 1:
            self.hidden.add(rid)
        return rid

    # ------------------------------------------------------------------------------------------------ columns

    def columns(self) -> tuple[tuple[Col, ...], int]:
        """The columns every table shows, in display order, and how many stay fixed when scrolling sideways."""
        cols = filter_cols(self._with_hidden(), self.pattern, keep=self.pins)
        shown = display_order(cols, self.pins)
        fixed = 1 + sum(1 for k in self.pins if any(c.key == k for c in shown[1:]))
        return shown, fixed

    def _with_hidden(self) -> tuple[Col, ...]:
        """The layout, and with a filter the columns it keeps out (a StepLogger's dump-only timings, hidden keys)
        that the filter names: as ``tail --columns`` and ``legend`` say, a filter reaches every key."""
        pats = filter_globs(self.pattern)
        shown = {c.key for c in self.layout}
        pinned = [k for k in self.pins if k not in shown]  # (a column pinned under a filter stays after it)
        if not (pats or pinned) or not self.layout:
            return self.layout
        key = (tuple(pats), tuple(pinned), self._keys, self.layout)
        if self._hidden_for is not None and self._hidden_for[0] == key:
            return self._hidden_for[1]
        import glob
        from fnmatch import fnmatchcase

        from steptable.app.layouts import KeysOnly
        from steptable.schemas import layout

        schema = self.schema()
        headers = {c.key: c.header.strip() for c in (*schema.cols, *schema.extra)}

        def wanted(k: str) -> bool:  # (matched before measured: a sweep of 200 keys measures only these)
            return k not in shown and (k in pinned or any(fnmatchcase(k, g) or fnmatchcase(headers.get(k, ""), g)
                                                          for g in pats))

        views = [KeysOnly(r.store, [k for k in r.store.keys if wanted(k)]) for r in self.runs.values()]
        extra = [c for c in layout(views, schema, patterns=[*pats, *map(glob.escape, pinned)]) if c.key not in shown]
        cols = (*self.layout, *extra)
        self._hidden_for = (key, cols)
        return cols

    def toggle_pin(self, key: str | None) -> None:
        if key is None or (self.layout and key == self.layout[0].key):
            return
        if key in self.pins:
            self.pins.remove(key)
        else:
            self.pins.append(key)

    # ------------------------------------------------------------------------------------------------ events

    def add_alerts(self, run_id: str, alerts: Sequence[Alert]) -> None:
        """Alerts the scanner found; one it found before (its file read again after a reset, the same rows) is not
        counted twice."""
        label = self.labels().get(run_id, run_id)
        for a in alerts:
            seen = (run_id, a.level, a.step, a.column, a.kind, a.message)
            if seen in self._alerted:
                continue
            if len(self._alerted) >= 4 * MAX_ALERTS:
                self._alerted.clear()
            self._alerted.add(seen)
            self.counts[a.level] = self.counts.get(a.level, 0) + 1
            self.alerts.append(Event(a.level, label, a.message_line()))
        del self.alerts[:-MAX_ALERTS]

    def check_stalls(self, now: float) -> dict[str, float]:
        """Runs not written for much longer than their usual row interval: run id -> seconds since the last row."""
        self.stalls = {}
        for rid, r in self.runs.items():
            if r.preview is None and not ended(r.store):  # a run whose StepLogger was closed has ended
                gap = stalled_for(r.store.wall_times_between(-INTERVAL_WINDOW - 1), r.store.last_update, now)
                if gap is not None:
                    self.stalls[rid] = gap
        return self.stalls

    def bad_total(self) -> int:
        return sum(r.store.bad_count for r in self.runs.values())

    def events(self, recent: int | None = None) -> list[Event]:
        """Stalled runs first, then errors, bad lines and warnings, newest first within each (all when no limit)."""
        from steptable.alerts import fmt_age

        labels = self.labels()
        out = []
        for rid, gap in self.stalls.items():
            r = self.runs[rid]
            med = usual_interval(r.store.wall_times_between(-INTERVAL_WINDOW - 1))
            usual = f" (usual {med:.3g}s/row)" if med is not None and math.isfinite(med) else ""
            out.append(Event("S", labels[rid], f"stalled: no row for {fmt_age(gap)}{usual}"))
        errors = [e for e in reversed(self.alerts) if e.level == "E"]
        warnings = [e for e in reversed(self.alerts) if e.level != "E"]
        bad: list[Event] = []
        # the runs whose bad lines came last first
        by_age = sorted(self.runs.items(), key=lambda item: -item[1].bad_turn)
        for rid, r in by_age:
            kept, newest, total = r.store.bad_lines()
            # the store keeps the first bad lines and the newest: newest first, then a line for the ones between
            later = newest[len(newest) - min(total - len(kept), len(newest)):]
            lines = [*reversed(later), *reversed(kept)]
            if recent is not None:
                lines = lines[:recent]
            between = total - len(kept) - len(later)
            for i, b in enumerate(lines):
                if between > 0 and i == len(later):
                    bad.append(Event("B", labels[rid], f"{between:,} more bad lines between these (not kept)"))
                bad.append(Event("B", labels[rid], bad_line(b.path, b.lineno, b.reason)))
        out += errors + bad + warnings
        return out if recent is None else out[:recent]

    def status_counts(self) -> dict[str, int]:
        return {**self.counts, "S": len(self.stalls), "B": self.bad_total()}
