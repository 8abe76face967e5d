"""The arms' tables taken together: which are shown, which one is in front, the picked column (the chart's, the one
p pins) lit in every table that has it, and the actions that go to every shown table (jump, follow)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from textual.screen import Screen
from textual.widget import Widget

from steptable.app.widgets.grid import StepGrid

if TYPE_CHECKING:
    from steptable.app.session import Session
    from steptable.app.widgets.arm import ArmPanel


class ArmsHost(Protocol):
    """What the app's parts that handle its arms need of it: the tables' screen, the widget with the focus, the arms'
    panels by run id, the session, and a way to show the session's state in the side panels again."""

    @property
    def main(self) -> Screen[Any]: ...

    @property
    def focused(self) -> Widget | None: ...

    @property
    def panels(self) -> Mapping[str, ArmPanel]: ...

    @property
    def session(self) -> Session: ...

    def refresh_panels(self) -> None: ...


class TablesHost(ArmsHost, Protocol):
    """What the tables need of the app: also a way to give the tables their columns again (a pin)."""

    def apply_columns(self) -> None: ...


class Tables:
    """The app's arms' tables as one: owned by the app, which hands it the grids' messages and the table actions."""

    def __init__(self, app: TablesHost) -> None:
        self.app = app

    def grids(self) -> list[StepGrid]:
        """The tables of the arms not hidden, in the arms' order."""
        hidden = self.app.session.hidden
        return [p.grid for rid, p in self.app.panels.items() if rid not in hidden]

    def focused_grid(self) -> StepGrid | None:
        """The table with the focus, else the first shown one."""
        f = self.app.focused
        if isinstance(f, StepGrid):
            return f
        grids = self.grids()
        return grids[0] if grids else None

    def _in_front(self) -> StepGrid | None:
        """The shown table with the focus on the tables' screen (also while a viewer is on top), if one has it."""
        return next((g for g in self.grids() if g is self.app.main.focused), None)

    # ---------------------------------------------------------------------------------------------- picked column

    def column_picked(self, grid: StepGrid, key: str) -> None:
        """The user moved ``grid``'s column cursor to ``key``."""
        self._pick(grid, key)
        self.app.refresh_panels()

    def widget_focused(self, widget: Widget) -> None:
        """``widget`` took the focus: a table's lit column becomes the picked one."""
        if isinstance(widget, StepGrid):
            self._take_lit(widget)
            self.app.refresh_panels()

    def _pick(self, grid: StepGrid, key: str) -> None:
        """``key`` is the picked column: the tables that have it light it (another trainer's without it keeps its
        own)."""
        self.app.session.selected = key
        for g in self.grids():
            if g is not grid and any(c.key == key for c in g.cols):
                g.select(key)

    def _take_lit(self, grid: StepGrid | None) -> None:
        """The column ``grid`` lights becomes the picked one: where several trainers' tables each light their own,
        p and the chart follow the table in front."""
        session = self.app.session
        if grid is not None and grid.selected is not None and grid.selected != session.selected:
            self._pick(grid, grid.selected)

    def keep_picked_shown(self) -> None:
        """A picked column that no shown table has (the arms that had it hidden) gives way to the lit column of the
        table in front, else of the first shown one: the chart must not ask for a column beside a table with one
        lit."""
        grids = self.grids()
        if grids and not any(c.key == self.app.session.selected for g in grids for c in g.cols):
            self._take_lit(self._in_front() or grids[0])

    # ---------------------------------------------------------------------------------------------- alert marks

    def mark_alerts(self, rid: str, alerts: Iterable[Any] | None = None, seeds: Iterable[str] = ()) -> None:
        """Run ``rid``'s table marks the cells ``alerts`` name (steptable.alerts.rules.Alert, or the session's
        events); None: every alert the session holds of the run and of ``seeds`` (a table made after its alerts were
        found; the table of a seed group's means marks its seeds': a seed gone NaN leaves the mean of the others
        finite, and the mark is what shows it)."""
        panel = self.app.panels.get(rid)
        if panel is None:  # (its table is made later: it takes them from the session then)
            return
        if alerts is None:
            of = {rid, *seeds}
            alerts = [e for e in self.app.session.log.alerts if e.run in of and e.step is not None]
        panel.grid.mark_alerts(list(alerts))

    # ---------------------------------------------------------------------------------------------- actions

    def pin(self) -> None:
        """The lit column of the table in front stays in front of every table (again: no longer)."""
        self._take_lit(self._in_front())
        self.app.session.toggle_pin(self.app.session.selected)
        self.app.apply_columns()

    def follow_all(self) -> None:
        for g in self.grids():
            g.action_follow()

    def show_steps(self, steps: Mapping[str, int]) -> None:
        """Each run's table in ``steps`` (run id -> step) shows that step at the top (the chart's crosshair: on an
        x axis other than the step, the arms are at different steps)."""
        for rid, step in steps.items():
            panel = self.app.panels.get(rid)
            if panel is not None and panel.grid.store is not None:
                panel.grid.scroll_to_index(panel.grid.store.index_of_step(step))

    def jump_to_step(self, step: int) -> None:
        """Every shown table shows ``step`` (or the first step after it) at the top; following pauses."""
        for g in self.grids():
            if g.store is not None:
                g.scroll_to_index(g.store.index_of_step(step))
