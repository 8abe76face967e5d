"""The run list: the home screen of a path that holds more runs than fit as tables (a sweep). One line per run
(steptable.app.widgets.runlist), the sweep's status line above it; filter by name or config, sort by any column,
select runs and open them as tables (their histories are read then, in the background) or compare them (``w``), pin
runs to the top."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input, Static

from steptable.app.model import key_matches
from steptable.app.runrows import STATS, Entry, FilterError, Judge, ListState, StateMemo, patched, shown
from steptable.app.screens.help import HELP_KEYS, OwnKeysHelp
from steptable.app.widgets.keys import KeyBar
from steptable.app.widgets.runlist import RunList
from steptable.table.formatting import sanitize


class ListHost(Protocol):
    def entries(self) -> list[Entry]: ...

    def sweep_line(self, now: float, judge: Judge) -> str: ...

    def open_runs(self, run_ids: Sequence[str]) -> None: ...

    def compare_runs(self, run_ids: Sequence[str]) -> None: ...

    def can_close_list(self) -> bool: ...

    def metric_defaults(self) -> list[str]: ...


class RunsScreen(OwnKeysHelp, Screen[None]):
    """See the module docstring. ``refresh_list`` shows the index as it is now (the app calls it as it changes)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", tooltip="runs by name (glob, substring, re:REGEX) or config (lr=1e-5)"),
        Binding("space", "select", "Select", tooltip="select the run (again: unselect)"),
        Binding("enter", "open", "Open", tooltip="the selected runs (or this one) as tables, charts, compare"),
        Binding("w", "compare", "Compare", tooltip="open the selected runs (two or more) and say which arm wins"),
        Binding("o", "sort", "Sort", tooltip="by the next column (O: this column the other way)"),
        Binding("O", "reverse", "Reverse", show=False),
        Binding("m", "stat", "Stat", tooltip="metric columns: last value, mean of the newest rows, best"),
        Binding("k", "metrics", "Metrics", tooltip="which metric columns (globs)"),
        Binding("p", "pin", "Pin", tooltip="keep the run at the top (again: unpin)"),
        Binding("a", "select_shown", "Select shown", show=False, tooltip="select every run the filter shows"),
        Binding("escape", "close", "Tables", tooltip="back to the open tables"),
        HELP_KEYS,
    ]
    #: seconds between two redraws of the ages and states where no run changed
    AGES_S = 5.0
    DEFAULT_CSS = """
    RunsScreen #sweep { height: 1; width: 1fr; background: $panel; color: $text-muted; padding: 0 1; }
    RunsScreen #filter { display: none; }
    RunsScreen #filter.-open { display: block; }
    RunsScreen #list-note { height: 1; width: 1fr; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, host: ListHost, metrics: Sequence[str] = (), clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.host = host
        self.state = ListState(metrics=list(metrics))
        self._chosen = bool(metrics)  # metric columns given or set by the user: never replaced by the defaults
        self.clock = clock
        self.listed: list[Entry] = []
        self.judge = StateMemo()
        self._view: tuple[object, ...] | None = None  # the state ``listed`` was made for
        self._seen: dict[str, Any] = {}  # run id -> the digest it had in ``listed``
        self._order = ["name", "state", "age", "rows", "step", "alerts", "format"]

    def compose(self) -> ComposeResult:
        yield Static("", id="sweep", markup=False)
        yield Input(placeholder="filter: name glob, substring, re:REGEX, key=value (config)", id="filter")
        yield RunList(id="runs")
        yield Static("", id="list-note", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(RunList).focus()
        self.refresh_list()
        self.set_interval(self.AGES_S, self._aged)

    def _aged(self) -> None:
        """Time passed: the ages and states shown again (a sweep whose runs all ended changes no file, and its list
        kept the ages and states of its last change)."""
        if self.is_current:
            self.refresh_list()

    @property
    def runlist(self) -> RunList:
        return self.query_one(RunList)

    def refresh_list(self) -> None:
        """Filter and sort the index's runs and show them with the sweep's line. Where only the runs changed (not
        the filter, sort or pins), the runs new or with a new digest (or none yet) are placed in the list as it was
        (steptable.app.runrows.patched): a new run in a sweep of thousands does not sort them all again. Until the
        user sets the metric columns (or they were given), they are the host's defaults as soon as it knows any."""
        now = self.clock()
        entries = self.host.entries()
        s = self.state
        if not self._chosen and not s.metrics:  # (the runs' keys are known once their digests are read)
            s.metrics = self.host.metric_defaults()
        view = (s.pattern, s.sort, s.reverse, s.stat, tuple(s.metrics), tuple(sorted(s.higher.items())),
                tuple(s.pinned))
        seen = {e.run_id: e.digest for e in entries}
        try:
            listed = None
            if view == self._view:
                old = self._seen
                changed = [r for r, d in seen.items() if d is None or old.get(r) is not d]
                listed = patched(self.listed, entries, changed, s, now, self.judge)
            self.listed = shown(entries, s, now, self.judge) if listed is None else listed
            self._view, self._seen = view, seen
            problem = ""
        except FilterError as e:
            self._view = None
            problem = f" · {e}"
        self.runlist.show(self.listed, self.state, now, self.judge)
        # (both lines are one row of the screen's width whatever they say: no layout pass of the screen for them)
        self.query_one("#sweep", Static).update(sanitize(self.host.sweep_line(now, self.judge)), layout=False)
        sel = len(self.state.selected)
        self.query_one("#list-note", Static).update(sanitize(
            f"{len(self.listed)} of {len(entries)} shown" + (f" (filter: {self.state.pattern})" if self.state.pattern
                                                               else "")
            + f" · {sel} selected · metrics: {self.state.stat}" + problem), layout=False)

    # ---------------------------------------------------------------------------------------------- actions

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("-open")
        box.value = self.state.pattern
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.state.pattern = event.value
            self.refresh_list()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            if not event.value:
                event.input.remove_class("-open")
            self.runlist.focus()

    def action_select(self) -> None:
        rid = self.runlist.current
        if rid is not None:
            self.state.toggle(rid)
            self.runlist.move_to(self.runlist.cursor + 1)
            self.refresh_list()

    def action_select_shown(self) -> None:
        self.state.selected |= {e.run_id for e in self.listed}
        self.refresh_list()

    def action_pin(self) -> None:
        rid = self.runlist.current
        if rid is not None:
            self.state.pin(rid)
            self.refresh_list()

    def action_sort(self) -> None:
        names = [*self._order, *self.state.metrics]
        i = names.index(self.state.sort) if self.state.sort in names else -1
        self.state.sort, self.state.reverse = names[(i + 1) % len(names)], False
        self.refresh_list()

    def action_reverse(self) -> None:
        self.state.reverse = not self.state.reverse
        self.refresh_list()

    def sort_by(self, column: str) -> None:
        self.state.sort_by(column)
        self.refresh_list()

    def action_stat(self) -> None:
        self.state.stat = STATS[(STATS.index(self.state.stat) + 1) % len(STATS)]
        self.refresh_list()

    def action_metrics(self) -> None:
        from steptable.app.screens.prompt import PromptScreen

        def done(answer: str | None) -> None:
            if answer is None:
                return
            self.set_metrics(answer)

        self.app.push_screen(PromptScreen("metric columns", ", ".join(self.state.metrics), "reward*, loss",
                                          "globs over the runs' keys"), done)

    def set_metrics(self, answer: str) -> None:

        keys = list(dict.fromkeys(k for e in self.host.entries() if e.digest is not None for k in e.digest.keys))
        pats = [p.strip() for p in answer.replace(",", " ").split() if p.strip()]
        self.state.metrics = list(dict.fromkeys(k for p in pats for k in keys if key_matches(k, p)))[:8]
        self._chosen = True
        self.refresh_list()

    def action_open(self) -> None:
        chosen = [e.run_id for e in self.host.entries() if e.run_id in self.state.selected]
        if not chosen and self.runlist.current is not None:
            chosen = [self.runlist.current]
            self.state.selected.add(chosen[0])
        if chosen:
            self.host.open_runs(chosen)

    def action_compare(self) -> None:
        """The selected runs opened, then the compare view over them alone (it fills in as their histories are
        read)."""
        chosen = [e.run_id for e in self.host.entries() if e.run_id in self.state.selected]
        if len(chosen) < 2:
            self.notify("select two runs or more to compare (space; a: every run the filter shows)")
            return
        self.host.compare_runs(chosen)

    def action_close(self) -> None:
        box = self.query_one("#filter", Input)
        if box.has_focus:
            self.runlist.focus()
            return
        if self.host.can_close_list():
            self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[Any, ...]) -> bool | None:
        if action == "close":
            return self.host.can_close_list() or self.query_one("#filter", Input).has_focus
        return True
