"""The watch app: per-arm step tables, one column layout per trainer (its arms line up), with legend, diagnostics,
chart, generations, alerts. Thin: the Session holds the state, widgets draw through render, the Feed (its own
thread) only posts."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection
from typing import Any, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from steptable.app.actions import Actions
from steptable.app.armrule import RuleOf
from steptable.app.arrange import ArmsBox, Arrangement
from steptable.app.bindings import BINDINGS
from steptable.app.feed import Feed
from steptable.app.firstrows import FirstRows
from steptable.app.lockstep import Lockstep
from steptable.app.messages import AlertsFound, FeedProblem, PreviewReady, RunsChanged
from steptable.app.model import Store
from steptable.app.search import Search
from steptable.app.seedgroups import MeansReady, SeedGroups
from steptable.app.seek import Seek
from steptable.app.session import Session
from steptable.app.sweep import IndexChanged, Sweep, SweepFound
from steptable.app.tables import Tables
from steptable.app.themes import DEFAULT_THEME, load_themes
from steptable.app.viewers import Viewers
from steptable.app.widgets.arm import ArmPanel
from steptable.app.widgets.grid import StepGrid
from steptable.app.widgets.keys import KeyBar
from steptable.app.widgets.panels import ChartPanel, DiagnosticsPanel, LegendPanel
from steptable.app.widgets.status import StatusBar
from steptable.table.formatting import sanitize

Clock = Callable[[], float]


class StepTableApp(Actions):
    """The tables' screen and its panels. The app owns the widgets and the session, and hands the actions to its
    parts: ``arrangement`` (where arms and panels go), ``tables`` (the arms' tables together), ``viewers`` (the
    screens opened over them); what each key does is :class:`steptable.app.actions.Actions`."""

    TITLE = "steptable"
    CSS = """
    #arms { width: 1fr; height: 1fr; }
    #arms.side { layout: horizontal; }
    #arms.stacked { layout: vertical; }
    #arms.side > ArmPanel { border-right: vkey $panel; }
    #no-runs { width: 1fr; height: auto; padding: 1 2; color: $text-muted; }
    #legend-box { dock: right; width: 42%; height: 1fr; display: none; }
    #legend-box.-open { display: block; }
    ChartPanel, DiagnosticsPanel { display: none; }
    ChartPanel.-open, DiagnosticsPanel.-open { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = BINDINGS

    def __init__(
        self,
        feed: Feed,
        *,
        theme: str | None = None,
        schema: str | None = None,
        clock: Clock = time.time,
        tick: float = 1.0,
        stacked: bool | None = None,
        group: str | None = None,
    ) -> None:
        """``group``: ``watch --group`` (a valid pattern), over the runs' steptable.toml's (steptable.app.armrule)."""
        super().__init__()
        self.feed = feed
        self.arm_rule = RuleOf([str(p) for p in feed.paths], group)
        self.session = Session(schema_name=schema, near=[str(p) for p in feed.paths] or None)
        self.clock = clock
        self.tick = tick
        self.panels: dict[str, ArmPanel] = {}
        self.arrangement = Arrangement(self, stacked)
        self.tables = Tables(self)
        self.viewers = Viewers(self, self.tables)
        self.lockstep = Lockstep(self.tables)
        self.seek = Seek(self.tables, lambda: self.seedgroups.shown_runs())
        self.search = Search(self.tables, self.call_from_thread, self._refresh_status)
        self.sweep = Sweep(self, clock)
        self._stop = threading.Event()
        self.seedgroups = SeedGroups(self.session, self.post_message, self._stop, feed.paths,
                                     lambda: self.arm_rule().pattern)
        self._new_panels = False
        self._preview_panels: dict[str, ArmPanel] = {}  # panels of the first frame's previews, not taken yet
        self._first: list[PreviewReady] = []
        self._first_other: list[Message] = []
        #: callbacks run once the first data rows are on screen (``add``)
        self.first_rows = FirstRows(self, lambda: [p.grid for p in self.panels.values()])
        self.problem = ""
        self._want_theme = theme
        self._theme_problems: list[str] = []
        self.themes = load_themes(problems=self._theme_problems)
        for t in self.themes.values():
            self.register_theme(t)
        # Chosen before the first stylesheet pass: switching at mount would parse and apply all CSS twice.
        # An unknown name (said at mount) gets steptable's default, not Textual's own textual-dark.
        name = theme if theme in self.available_themes else DEFAULT_THEME
        if name in self.available_themes:  # (steptable's theme files could not be read: Textual's default)
            self.theme = name

    # ---------------------------------------------------------------------------------------------- layout

    def compose(self) -> ComposeResult:
        # the read-ahead's previews, if ready within a moment, are in the first frame (taken at mount)
        first = self.feed.first_messages()
        self._first = [m for m in first if isinstance(m, PreviewReady)]
        self._first_other = [m for m in first if not isinstance(m, PreviewReady)]
        with VerticalScroll(id="legend-box"):
            yield LegendPanel(id="legend")
        # scrollable: when the arms do not fit at a readable size they keep that size and the box scrolls
        with ArmsBox(self.arrangement.rearrange, id="arms", classes="side", can_focus=False):
            waiting = Static(self._waiting_text(), id="no-runs", markup=False)
            waiting.display = not self._first
            yield waiting
            for message in self._first:
                panel = self._preview_panels[message.run] = ArmPanel(message.run, message.run)
                if len(self._preview_panels) == 1:  # styled as focused from its mount
                    panel.add_class("-focused")
                yield panel
        yield ChartPanel(id="chart")
        yield DiagnosticsPanel(id="diagnostics")
        yield StatusBar(id="status")
        yield KeyBar()

    def _waiting_text(self) -> str:
        if opened := len(self.sweep.opened):  # (a sweep's runs opened from the list: their histories being read)
            return f"Reading the {opened} runs opened from the run list… (r: the list)"
        paths = ", ".join(self.feed.paths) or "the given paths"
        return sanitize(
            f"No runs under {paths} yet. steptable shows JSONL metrics files (metrics.jsonl, verl's file logger, "
            "tinker's metrics.jsonl...), HF/TRL trainer_state.json, CSV logs (Lightning, SB3) and console logs "
            "(.log/.txt/.out) with step:N lines; it keeps watching for them."
        )

    def on_mount(self) -> None:
        name = self._want_theme or DEFAULT_THEME
        if name not in self.available_themes:
            self.notify(f"unknown theme {name!r}; known: {', '.join(sorted(self.available_themes))}",
                        severity="warning", markup=False)  # names from the command line and theme files
        self._refresh_status()
        self.set_interval(self.tick, self._on_tick)
        self.first_rows.start()
        for problem in self._theme_problems:
            self.notify(problem, severity="warning", markup=False)
        # The feed's thread: a daemon thread rather than a Textual thread worker, whose executor is joined when the
        # app exits: quitting during the first parse of a 1 GB file must not wait for that parse to finish.
        self._feed_thread = threading.Thread(
            target=self.feed.run, args=(self._stop, self.post_message), name="steptable-follow", daemon=True
        )
        self._feed_thread.start()
        first, others, self._first, self._first_other = self._first, self._first_other, [], []
        for message in others:
            self.post_message(message)
        if first:
            self._take([(m.run, m.store, m.note) for m in first])
            self._after_data()
            self.call_after_refresh(self._preview_drawn)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)):
            self.feed.scanner.defer()  # the user acts: a history's alert scan waits, not the keys
        await super().on_event(event)

    def on_unmount(self) -> None:
        self._stop.set()
        self.first_rows.finish()

    # ---------------------------------------------------------------------------------------------- data in

    def on_runs_changed(self, message: RunsChanged) -> None:
        ids = self.feed.take()
        stores = self.feed.stores
        batch: list[tuple[str, Store, str | None]] = []
        for rid, store in stores.items():  # in discovery order, so arms keep their places
            if rid not in ids:
                continue
            run = self.session.runs.get(rid)
            if run is not None and run.preview is not None and len(store) == 0:
                continue  # keep the preview until the full parse has rows
            batch.append((rid, store, None))
        self._take(batch)
        self._take_groups()
        self._after_data()

    def on_preview_ready(self, message: PreviewReady) -> None:
        run = self.session.runs.get(message.run)
        if run is None or run.preview is not None or run.rows == 0:
            self._take([(message.run, message.store, message.note)])
            self._after_data()
        self.call_after_refresh(self._preview_drawn)

    def _preview_drawn(self, tries: int = 0) -> None:
        """Let the full parse start once the preview rows are on screen (it competes with drawing for the GIL)."""
        shown = all(p.grid.drawn_rows for rid, p in self.panels.items() if self.session.runs[rid].preview)
        if shown or tries > 20:
            self.feed.drawn.set()
        else:
            self.call_after_refresh(self._preview_drawn, tries + 1)

    def on_sweep_found(self, message: SweepFound) -> None:
        self.sweep.found()

    def on_index_changed(self, message: IndexChanged) -> None:
        self.sweep.changed()
        self._refresh_status()

    def on_alerts_found(self, message: AlertsFound) -> None:
        self.session.add_alerts(message.run, message.alerts, message.closed)
        self.tables.mark_alerts(message.run, message.alerts)
        if (gid := self.seedgroups.group_of(message.run)) not in (None, message.run):  # (a seed: its group's too)
            self.tables.mark_alerts(gid, message.alerts)
        self._refresh_status()

    def on_feed_problem(self, message: FeedProblem) -> None:
        text = sanitize(message.text)  # built from file names and contents
        if message.lasting:  # (one run's failure is a notice: the status line keeps the feed's own note)
            self.problem = text
        self.notify(text, severity="error", timeout=30, markup=False)
        self._refresh_status()

    def _take(self, batch: list[tuple[str, Store, str | None]]) -> None:
        if not self.screen_stack:  # the app is closing (rows parsed as it quit): nothing to show the runs in
            return
        arms = self.main.query_one("#arms")
        if not arms.is_attached:  # the app is closing (a TERM while it started): nothing to show the runs in
            return
        relayout = self.session.update_all(batch)
        for rid, _, _ in batch:
            if rid not in self.panels:
                composed = self._preview_panels.pop(rid, None)  # (in the first frame: mounted, styled)
                panel = self.panels[rid] = composed or ArmPanel(rid, rid)
                self._new_panels = True
                if len(self.panels) == 1:
                    self.call_after_refresh(panel.grid.focus)
                if composed is None:
                    self.main.query_one("#no-runs").display = False
                    if len(self.panels) == 1:  # styled as focused from its mount: no second styling pass
                        panel.add_class("-focused", update=False)
                    arms.mount(panel)
                self.tables.mark_alerts(rid, seeds=self.seedgroups.members.get(rid, ()))  # (alerts found before)
                relayout = True
        if relayout:
            self.apply_columns()
        now = self.clock()
        for rid, store, preview in batch:
            panel = self.panels[rid]
            panel.preview = preview
            made = panel.grid.store is not store
            panel.grid.set_rows(store, self.session.runs[rid].rows)
            if made and rid in self.seedgroups.members:  # (a group's table made again: its seeds' marks again)
                self.tables.mark_alerts(rid, seeds=self.seedgroups.members[rid])
                self._new_panels = True  # (its label names how many seeds)
            panel.refresh_title(now)

    def on_means_ready(self, message: MeansReady) -> None:
        self.seedgroups.finished(message)
        self._take_groups()
        self._after_data()

    def put_away(self, run_ids: Collection[str], hidden: Collection[str] | None = None) -> None:
        """Put these runs away (``Session.put_away``: a sweep's runs opened before and not picked now): their tables
        hide, the seed groups are made again without them; the other runs opened show again (``hidden``: the runs
        hidden instead, the others shown)."""
        self.session.put_away = set(run_ids)
        # (the seed groups' folds are added back by their update)
        self.session.hidden = set(run_ids) if hidden is None else set(hidden)
        self._take(self.seedgroups.update())
        self.arrangement.set_hidden(self.session.hidden)
        self._after_data()

    def _take_groups(self) -> None:
        """The seed groups' tables of means brought up to date with the rows just taken, and their folds shown."""
        hidden = set(self.session.hidden)
        self._take(self.seedgroups.update())
        if self.session.hidden != hidden:
            self.arrangement.set_hidden(self.session.hidden)

    def _after_data(self) -> None:
        if self._new_panels:  # arms arrived: labels may need the run id, the arrangement may change
            self._new_panels = False
            labels = self.session.labels()
            for rid, panel in self.panels.items():
                if panel.label != labels.get(rid, rid):
                    panel.label = labels.get(rid, rid)
                    panel.refresh_title(self.clock())
            self.arrangement.apply()
        self.refresh_panels()
        self._refresh_status()
        self.first_rows.check()
        while self.session.problems:  # (sanitized by the session)
            self.notify(self.session.problems.pop(0), severity="error", timeout=30, markup=False)

    def apply_columns(self) -> None:
        """Each arm's table gets its group's columns (one trainer's arms line up), the legend one part per group."""
        s = self.session
        tables = s.tables()
        shown = {c.key for _, cols, _ in tables for c in cols}
        for group, cols, fixed in tables:
            for rid in group.runs:
                if (panel := self.panels.get(rid)) is not None:
                    panel.grid.set_columns(cols, fixed, s.marked(cols, panel.grid.selected, shown),
                                          group.schema.derive)
        parts = ([(s.group_title(g), cols) for g, cols, _ in tables if cols] if len(tables) > 1
                 else [(None, cols) for _, cols, _ in tables[:1]] or [(None, ())])
        self.main.query_one(LegendPanel).show_parts(parts)
        self.arrangement.apply()
        self._refresh_status()  # (it shows the filter's match count)

    def refresh_panels(self) -> None:
        """The open chart and diagnostics panels show the shown runs they are about (another trainer's runs have
        none of their keys), at the picked column."""
        if not self.screen_stack:  # shutting down (a focus event can come after the screens are gone)
            return
        self.tables.keep_picked_shown()
        chart = self.main.query_one(ChartPanel)
        chart.key = self.session.selected
        self.arrangement.share_height()
        s = self.session
        for panel, runs in ((chart, s.chart_runs), (self.main.query_one(DiagnosticsPanel), s.diagnostics_runs)):
            if panel.has_class("-open"):
                rids = [rid for rid in runs() if rid in self.panels]
                panel.show_arms([(self.panels[rid].label, s.runs[rid].store, s.runs[rid].rows) for rid in rids],
                                s.panel_cols(set(rids)))

    def _refresh_status(self) -> None:
        if not self.screen_stack or not self.is_running:
            return
        s = self.session
        try:
            bar = self.main.query_one(StatusBar)
            waiting = self.main.query_one("#no-runs", Static)
        except NoMatches:  # shutting down
            return
        if waiting.display:  # (a sweep's runs opened since: being read)
            waiting.update(self._waiting_text())
        note = " · ".join(filter(None, (self.problem or self.feed.note(), self.seedgroups.note())))
        bar.show(s.events(recent=3), s.status_counts(), note, (s.pattern, s.filter_matches()) if s.pattern else None,
                 self.search.status)

    def _on_tick(self) -> None:
        if not self.screen_stack or not self.is_running:
            return
        now = self.clock()
        stalls = self.session.check_stalls(now)
        labels = self.session.labels() if self.seedgroups.members else {}
        groups = self.seedgroups
        for rid, panel in self.panels.items():
            store = panel.grid.store
            if rid in groups.members or rid in groups.means:  # (a group's table is judged by its seeds: no file)
                panel.stalled, panel.idle, seed = groups.quiet(rid, stalls, self.session.idle)
                panel.quiet_seed = labels.get(seed, seed) if seed is not None else None
                panel.gone = False
            else:
                panel.stalled, panel.idle = stalls.get(rid), self.session.idle.get(rid)
                panel.gone = store is not None and not os.path.exists(store.path)  # deleted, or its directory renamed
            panel.refresh_title(now)
        gone = {rid for rid, p in self.panels.items() if p.gone}
        if gone != groups.gone:  # (a seed gone leaves its group's means; one back again joins them)
            groups.gone = gone
            self._take_groups()
            self._after_data()
        else:
            self._refresh_status()

    @property
    def main(self) -> Screen[Any]:
        """The tables' screen (the bottom of the stack), also while a viewer or a prompt is on top."""
        return self.screen_stack[0]

    # ---------------------------------------------------------------------------------------------- grids

    @on(StepGrid.ViewChanged)
    def _view_changed(self, message: StepGrid.ViewChanged) -> None:
        for panel in self.panels.values():
            if panel.grid is message.grid:
                panel.refresh_title(self.clock())

    @on(StepGrid.Moved)
    def _grid_moved(self, message: StepGrid.Moved) -> None:
        if self.screen_stack:  # (a table's last scroll can arrive after the app closed its screens)
            self.lockstep.moved(message.grid)

    @on(StepGrid.ColumnPicked)
    def _column_picked(self, message: StepGrid.ColumnPicked) -> None:
        self.tables.column_picked(message.grid, message.key)

    @on(events.DescendantFocus)
    def _widget_focused(self, event: events.DescendantFocus) -> None:
        self.tables.widget_focused(event.widget)
