"""The state of a watch session, apart from widgets: runs shown, their column layouts (one per trainer: the arms of
one experiment share one), filter / pins / hidden arms, and (its EventLog, eventlog.py) alerts, stalls and bad lines.
Pure (no textual); the app calls it and hands the results to widgets."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from steptable.app.eventlog import EventLog
from steptable.app.grouping import Group, RunSchemas, group_runs, groups_for
from steptable.app.layouts import named_columns
from steptable.app.model import Store, display_order, filter_cols, filter_globs
from steptable.app.widgets.status import Event
from steptable.table.cells import first_few
from steptable.table.columns import Col

if TYPE_CHECKING:  # (imported when first needed: the first frame does not wait for them)
    from steptable.alerts.activity import Activity
    from steptable.alerts.engine import Alert
    from steptable.schemas import Schema


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
    groups: list[Group] = field(default_factory=list)  # in the order of their first run
    pattern: str = ""
    pins: list[str] = field(default_factory=list)
    hidden: set[str] = field(default_factory=set)
    #: runs the user put away (opened from a sweep's list, not picked since): hidden, and counted in no seed
    #: group's means and no compare view of the tables
    put_away: set[str] = field(default_factory=set)
    selected: str | None = None  # the column picked last (the chart's); a table without it keeps its own
    _group_of: dict[str, Group] = field(default_factory=dict)
    _grouped: tuple[tuple[str, int, int, int, int], ...] = ()  # what the runs were grouped for (see _regroup)
    _tried: dict[str, int] = field(default_factory=dict)  # key -> the widest value a new layout was made for
    # id(store) -> key -> the largest magnitude its notation was asked again for (schemas.notation_left)
    _extremes: dict[int, dict[str, float]] = field(default_factory=dict)
    _lows: dict[int, dict[str, int]] = field(default_factory=dict)  # the same, the row a decay was asked about at
    _named: Schema | None = None
    _bad_turn: int = 0
    problems: list[str] = field(default_factory=list)  # to be said once each (the app takes them as notices)
    _said: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._schemas = RunSchemas(self._say)  # each run's schema, found again only when it may have changed
        self.log = EventLog(self.runs, self.labels)  # alerts, stalls and bad lines

    # ------------------------------------------------------------------------------------------------ runs

    def update(self, run_id: str, store: Store, preview: str | None = None) -> bool:
        """Take the latest state of a run; True when a column layout changed (new keys, a run's group)."""
        return self.update_all([(run_id, store, preview)])

    def update_all(self, items: Sequence[tuple[str, Store, str | None]]) -> bool:
        """``update`` for a batch of runs (run id, store, preview note), grouped once (grouping looks at every
        run). Runs new in the batch are laid out in turn, as if they had come one by one: a later arm's first look,
        its keys placed after the earlier runs'."""
        known = set(self.runs)
        seen = [(run_id, *self._note(run_id, store, preview)) for run_id, store, preview in items]
        before = {rid: g.layout for rid, g in self._group_of.items()}
        made = [g.layout for g in self.groups]
        regrouped = self._regroup()
        waiting = {rid for rid, _, _ in seen if rid not in known}
        for rid, was, n in seen:
            waiting.discard(rid)
            group = self._group_of[rid]
            store = self.runs[rid].store
            self._lay_out(group, waiting, self._outgrown(group, store, was, n))
            if was == 0 and self._outgrown(group, store, was, n):
                # the layout was first made just now: the first look across the run (as tail takes it) widens it
                self._lay_out(group, waiting, True)
        for group in self.groups if regrouped else ():  # (one a run left)
            self._lay_out(group)
        changed = any(g.layout and g.layout is not before.get(rid) for rid, g in self._group_of.items())
        if changed:  # (the files looked for again only for a layout made again: not for each arm that joins one)
            self._laid_out(any(g.layout and all(g.layout is not m for m in made) for g in self.groups))
        return changed

    def _note(self, run_id: str, store: Store, preview: str | None) -> tuple[int, int]:
        """The run's new state; its row count before and now."""
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
        return before, n

    def _regroup(self) -> bool:
        """Group the runs again when one came, changed its keys or got a StepLogger's description (its own
        columns); True when grouped again. A group that keeps a run keeps its layout and measured keys."""
        from steptable.schemas.registry import logged_schema

        shape = tuple((rid, id(r.store), r.store.generation, len(r.store.keys), id(logged_schema(r.store)))
                      for rid, r in self.runs.items())
        if shape == self._grouped:
            return False
        self._grouped = shape
        stores = [r.store for r in self.runs.values()]
        self._schemas.keep(stores)
        rid_of = {id(r.store): rid for rid, r in self.runs.items()}
        named = self._named_schema() if self.schema_name else None
        # (a steptable.toml beside some runs that cannot be used: said once, they get their best built-in)
        grouped = group_runs(stores, named, self._schemas.of)
        self.groups = groups_for([(schema, [rid_of[id(x)] for x in g]) for schema, g in grouped], self._group_of)
        self._group_of = {rid: g for g in self.groups for rid in g.runs}
        return True

    def _say(self, text: str) -> None:
        from steptable.table.formatting import sanitize

        if text not in self._said:
            self._said.add(text)
            self.problems.append(sanitize(text))  # names paths and keys from the disk

    def _outgrown(self, group: Group, store: Store, before: int, n: int) -> bool:
        """New rows hold a value its column has no room for (``####``, an integer cut to a compact form), one the
        group's layout has not been made again for yet (a value that stays too wide after that does not ask again)."""
        from steptable.schemas import cells_outgrown, first_look, notation_left

        if not group.layout or not 0 <= before < n:
            return False
        try:
            left = False
            if before:  # a live run's few new rows
                # a number outside its column's notation: the notation is chosen again over the column
                left = notation_left(group.layout, store, max(before, n - 200), n,
                                     self._extremes.setdefault(id(store), {}), self._lows.setdefault(id(store), {}))
                grown = cells_outgrown(group.layout, store, max(before, n - 200), n)
            else:  # a run seen for the first time: rows across it (first_look)
                grown = first_look(group.layout, store, n)
        except IndexError:  # the follower emptied the store since n was taken (a rewritten file)
            return False
        grown = {k: w for k, w in grown.items() if w > self._tried.get(k, 0)}
        self._tried.update(grown)
        return bool(grown) or left

    def _lay_out(self, group: Group, waiting: Collection[str] = (), outgrown: bool = False) -> bool:
        """Make the group's layout again where its runs' keys changed or a value or step outgrew a column (``waiting``:
        runs of the batch not taken yet)."""
        from steptable.schemas import noted, steps_outgrown, widened
        from steptable.schemas.arrange import EMPTY_KEY_NOTE

        stores = [self.runs[rid].store for rid in group.runs if rid not in waiting]
        keys = frozenset(k for s in stores for k in s.keys)
        if keys == group.keys and group.layout and not outgrown and not steps_outgrown(group.layout, stores):
            return False
        if not any(len(s) for s in stores):
            return False  # no data yet: widths would be guesses
        group.keys = keys
        group.layout = noted(widened(group.layouts.layout(stores, group.schema), self._tried), stores)
        if "" in keys:  # no column can show it (a column needs a key): said once, as the console and tail say it
            self._say(EMPTY_KEY_NOTE)
        return True

    def _laid_out(self, relaid: bool) -> None:
        """After a run's layout changed: the unused steptable.toml files said (where a layout was made again), the
        picked column still one shown."""
        if relaid:  # a user's file that redefines columns: the notices say which (once each)
            for g in self.groups:
                if g.schema.source != "built-in":
                    self._say(f"columns from schema file {g.schema.source} (schema {g.schema.name})")
        if relaid and not self.schema_name:
            from steptable.schemafiles.resolve import unused_files
            from steptable.schemas import SchemaFileError

            try:
                for e in unused_files([r.store for r in self.runs.values()]):  # (said once each, as a file's problems)
                    self._say(f"{e} (the file is not used)")
            except SchemaFileError:  # a file that cannot be read at all: said when the run was detected
                pass
        if not any(c.key == self.selected for g in self.groups for c in g.layout):
            first = next((g.layout for g in self.groups if g.layout), ())
            self.selected = first[1].key if len(first) > 1 else None

    @property
    def layout(self) -> tuple[Col, ...]:
        """The first group's layout (a session of one trainer's runs has one)."""
        return self.groups[0].layout if self.groups else ()

    def schema(self, run_id: str | None = None) -> Schema:
        """The schema run ``run_id`` is shown with; without one, the one every run is shown with: the named one, else
        the only group's (generic before any run, and for several trainers' runs, which share none)."""
        from steptable.schemas import GENERIC

        group = self._group_of.get(run_id) if run_id is not None else None
        if group is not None:
            return group.schema
        if self.schema_name:
            return self._named_schema()
        return self.groups[0].schema if len(self.groups) == 1 else GENERIC

    def _named_schema(self) -> Schema:
        from steptable.schemafiles.resolve import get_schema
        from steptable.schemas import SchemaFileError

        if self._named is None and self.schema_name:
            try:
                self._named = get_schema(self.schema_name, near=self.near)
            except (SchemaFileError, KeyError) as e:  # checked at start; a file that went bad since
                self._say(str(e.args[0]) if isinstance(e, KeyError) else str(e))
                self._named = get_schema("generic")
        return self._named or get_schema("generic")

    def group_title(self, group: Group) -> str:
        """``verl columns (lr1e6, lr3e6)``: whose a legend is, where the runs are of several trainers."""
        labels = self.labels()
        return f"{group.schema.name} columns ({first_few([labels.get(rid, rid) for rid in group.runs])}):"

    def labels(self) -> dict[str, str]:
        """Run id -> the name its table goes by: its arm; where arms are shared (seeds of one arm), its run id, less
        a file name that says nothing (``absorb_seed1``, not ``absorb_seed1/metrics.jsonl``: a title cut to its
        width kept the file name and lost the seed) where that leaves the names apart."""
        names = [r.store.arm or rid for rid, r in self.runs.items()]
        dup = {n for n in names if names.count(n) > 1}
        out = {rid: (_short_id(rid) if n in dup else n) for (rid, r), n in zip(self.runs.items(), names, strict=True)}
        taken = list(out.values())
        return {rid: (rid if taken.count(label) > 1 else label) for rid, label in out.items()}

    def visible(self) -> list[str]:
        return [rid for rid in self.runs if rid not in self.hidden]

    def toggle_arm(self, index: int, skip: Collection[str] = ()) -> str | None:
        """Hide / show the ``index``-th run (0-based) of those not in ``skip`` (the runs the seed groups fold
        away: the keys count the tables a user can show); never hides the last visible one. Returns its id."""
        ids = [rid for rid in self.runs if rid not in skip]
        if not 0 <= index < len(ids):
            return None
        rid = ids[index]
        if rid in self.hidden:
            self.hidden.discard(rid)
        elif len(self.visible()) > 1:
            self.hidden.add(rid)
        return rid

    # ------------------------------------------------------------------------------------------------ columns

    def columns(self, run_id: str | None = None) -> tuple[tuple[Col, ...], int]:
        """The columns run ``run_id``'s table shows (the first group's without one), in display order, and how many
        stay fixed when scrolling sideways."""
        group = self._group_of.get(run_id) if run_id is not None else None
        group = group if group is not None else self.groups[0] if self.groups else None
        return self._columns(group) if group is not None else ((), 1)

    def tables(self) -> list[tuple[Group, tuple[Col, ...], int]]:
        """Each group with the columns its tables show and how many stay fixed (``columns``, once per group)."""
        return [(g, *self._columns(g)) for g in self.groups]

    def _columns(self, group: Group) -> tuple[tuple[Col, ...], int]:
        cols = filter_cols(self._with_hidden(group), self.pattern, keep=self.pins)
        shown = display_order(cols, self.pins)
        fixed = 1 + sum(1 for k in self.pins if any(c.key == k for c in shown[1:]))
        return shown, fixed

    def marked(self, cols: Sequence[Col], current: str | None, shown: Collection[str]) -> str | None:
        """The column a table of ``cols`` marks: the one picked last, unless only other trainers' tables have it
        (``shown``: the keys of every table): then the one it marked before (``current``), else its first after the
        step column."""
        key = self.selected
        if key not in shown or any(c.key == key for c in cols):
            return key
        if any(c.key == current for c in cols):
            return current
        return cols[1].key if len(cols) > 1 else None

    def chart_runs(self) -> list[str]:
        """The visible runs the chart shows: those whose tables have the picked column (one trainer's: all)."""
        key = self.selected
        having = [g for g, cols, _ in self.tables() if any(c.key == key for c in (*g.layout, *cols))]
        return self._visible_in(having or self.groups)

    def diagnostics_runs(self) -> list[str]:
        """The visible runs the diagnostics panel shows: those of the groups that log routing diagnostics."""
        from steptable.schemas.routing import DIAGNOSTIC_KEYS

        having = [g for g in self.groups if not g.keys.isdisjoint(DIAGNOSTIC_KEYS)]
        return self._visible_in(having or self.groups)

    def _visible_in(self, groups: Sequence[Group]) -> list[str]:
        ids = {rid for g in groups for rid in g.runs}
        return [rid for rid in self.visible() if rid in ids]

    def panel_cols(self, run_ids: Collection[str]) -> tuple[Col, ...]:
        """The columns of these runs' groups a side panel may show (with those a filter brought in: they can be
        charted); a key in several groups as its first group lays it out."""
        out: dict[str, Col] = {}
        for g in self.groups:
            if any(rid in run_ids for rid in g.runs):
                for c in (*g.layout, *self._columns(g)[0]):
                    out.setdefault(c.key, c)
        return tuple(out.values())

    def _with_hidden(self, group: Group) -> tuple[Col, ...]:
        """The group's layout, and with a filter the columns it keeps out (a StepLogger's dump-only timings, hidden
        keys) that the filter names: as ``tail --columns`` and ``legend`` say, a filter reaches every key."""
        pats = filter_globs(self.pattern)
        shown = {c.key for c in group.layout}
        pinned = [k for k in self.pins if k not in shown]  # (a column pinned under a filter stays after it)
        if not (pats or pinned) or not group.layout:
            return group.layout
        key = (tuple(pats), tuple(pinned), group.keys, group.layout)
        if group.hidden_for is not None and group.hidden_for[0] == key:
            return group.hidden_for[1]
        stores = [self.runs[rid].store for rid in group.runs]
        extra = named_columns(stores, group.schema, shown, pats, pinned)
        cols = (*group.layout, *extra)
        group.hidden_for = (key, cols)
        return cols

    def filter_matches(self) -> int:
        """How many columns the filter shows (distinct keys, each table's step column not counted); every column
        without a filter."""
        return len({c.key for _, cols, _ in self.tables() for c in cols[1:]})

    def set_filter(self, pattern: str) -> bool:
        """Show the columns matching ``pattern``; one that matches no column (with runs to match) is not taken and
        the filter stays as it was: False."""
        before = self.pattern
        self.pattern = pattern.strip()
        if self.pattern and self.groups and not self.filter_matches():
            self.pattern = before
            return False
        return True

    def toggle_pin(self, key: str | None) -> None:
        if key is None or any(g.layout and key == g.layout[0].key for g in self.groups):
            return
        if key in self.pins:
            self.pins.remove(key)
        else:
            self.pins.append(key)

    # ------------------------------------------------------------------------------------------------ events

    @property
    def alerts(self) -> list[Event]:
        return self.log.alerts

    @property
    def counts(self) -> dict[str, int]:
        return self.log.counts

    @property
    def stalls(self) -> dict[str, float]:
        return self.log.stalls

    @property
    def idle(self) -> dict[str, Activity]:
        return self.log.idle

    def add_alerts(self, run_id: str, alerts: Sequence[Alert], closed: float | None = None) -> None:
        self.log.add_alerts(run_id, alerts, closed)

    def check_stalls(self, now: float) -> dict[str, float]:
        return self.log.check_stalls(now)

    def bad_total(self) -> int:
        return self.log.bad_total()

    def events(self, recent: int | None = None) -> list[Event]:
        return self.log.events(recent)

    def status_counts(self) -> dict[str, int]:
        return self.log.status_counts()


def _short_id(run_id: str) -> str:
    """``run_id`` without its last part where that is a metrics file of a generic name (``metrics.jsonl``)."""
    from steptable.ingest.files.discover import GENERIC_STEMS  # (only where arms are shared)

    head, _, name = run_id.rpartition("/")
    stem, dot, _ = name.partition(".")
    return head if head and dot and stem.lower() in GENERIC_STEMS else run_id
