"""What the tables' screen's keys do: each action handed to the part of the app that does it (the bindings:
steptable.app.bindings), the actions that work on that screen only, and the command palette's entries for them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from steptable.app.arrange import Arrangement
from steptable.app.bindings import MAIN_ACTIONS, key_help
from steptable.app.lockstep import Lockstep
from steptable.app.screens.help import key_text
from steptable.app.search import Search
from steptable.app.seedgroups import SeedGroups
from steptable.app.seek import Seek
from steptable.app.session import Session
from steptable.app.sweep import Sweep
from steptable.app.tables import Tables
from steptable.app.viewers import Viewers
from steptable.app.widgets.arm import ArmPanel
from steptable.app.widgets.grid import StepGrid


class Actions(App[int]):
    """The app's actions (``action_*``), over the parts :class:`steptable.app.app.StepTableApp` makes."""

    panels: dict[str, ArmPanel]
    session: Session
    arrangement: Arrangement
    tables: Tables
    viewers: Viewers
    lockstep: Lockstep
    seek: Seek
    search: Search
    sweep: Sweep
    seedgroups: SeedGroups

    def _take_groups(self) -> None:
        """The seed groups brought up to date and their folds shown (the app's)."""
        raise NotImplementedError

    def action_help(self) -> None:
        self.viewers.help()

    def action_filter(self) -> None:
        self.viewers.filter()

    def action_search(self) -> None:
        self.viewers.search(self.search)

    def action_search_next(self, forward: bool) -> None:
        self.search.next(forward)

    def action_jump(self) -> None:
        self.viewers.jump()

    def action_events(self) -> None:
        self.viewers.events()

    def action_chart_view(self) -> None:
        self.viewers.chart()

    def action_generations(self) -> None:
        self.viewers.generations()

    def action_compare(self) -> None:
        self.viewers.compare()

    def action_runs(self) -> None:
        self.sweep.show_list()

    def action_toggle_legend(self) -> None:
        self.arrangement.toggle_legend()

    def action_toggle_diagnostics(self) -> None:
        self.arrangement.toggle_diagnostics()

    def action_toggle_chart(self) -> None:
        self.arrangement.toggle_chart()

    def action_switch_layout(self) -> None:
        self.arrangement.switch_layout()

    def action_toggle_arm(self, index: int) -> None:
        self.arrangement.toggle_arm(index, self.seedgroups.folded)
        self.sweep.bring_back(self.session.put_away - self.session.hidden)  # (a run put away, shown by its key)

    def action_show_all_arms(self) -> None:
        self.sweep.bring_back()
        self.arrangement.show_all_arms()
        self._take_groups()  # (the seed groups fold their seeds again: every arm is every table, not every run)

    def action_pin(self) -> None:
        self.tables.pin()

    def action_lockstep(self) -> None:
        self.notify("lockstep " + ("on: the tables move together" if self.lockstep.toggle() else "off"))

    def action_seek_alert(self, forward: bool) -> None:
        if (why := self.seek.alert(forward)) is not None:
            self.notify(why)

    def action_seek_nonfinite(self, forward: bool) -> None:
        if (why := self.seek.nonfinite(forward)) is not None:
            self.notify(why)

    def action_seed_group(self) -> None:
        """The seed group's table in front opens into its seeds' tables; a seed's table folds them back. The tables
        shown in its place are at the step it was at (or follow their newest rows, as it did)."""
        grid = self.tables.focused_grid()
        rid = next((r for r, p in self.panels.items() if p.grid is grid), None)
        step = self.seek.here(grid) if grid is not None and not grid.follow else None
        target = self.seedgroups.toggle(rid) if rid is not None else None
        if target is None:
            self.notify("not a seed group: runs that differ only by a seed part (routeA_seed1, routeA_seed2) form one")
            return
        self.arrangement.set_hidden(self.session.hidden)
        gid = self.seedgroups.group_of(target)
        now_shown = [target] if target == gid else self.seedgroups.members.get(gid or "", [target])
        grids = [p.grid for r in now_shown if (p := self.panels.get(r)) is not None]
        self.call_after_refresh(self._place_shown, grids, step, self.panels.get(target))

    def _place_shown(self, grids: list[StepGrid], step: int | None, focus: ArmPanel | None) -> None:
        """``grids`` at ``step`` at the top (None: following their newest rows), then the focus to ``focus``."""
        for g in grids:
            if g.store is None:
                continue
            if step is None:
                g.action_follow()
            elif g.rows:
                g.scroll_to_index(g.store.index_of_step(step))
        if focus is not None:
            focus.grid.focus()

    def action_seek_regime(self, forward: bool) -> None:
        if (why := self.seek.regime(forward)) is not None:
            self.notify(why, markup=False)  # (it names a column)

    def action_follow_all(self) -> None:
        self.tables.follow_all()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The table actions work (and show in the footer) on the main screen only, not over a viewer."""
        if len(self.screen_stack) > 1 and action in MAIN_ACTIONS:
            return False
        return True

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            if isinstance(b, Binding) and b.action not in ("quit",) and not b.action.startswith("toggle_arm"):
                keys = f"key {key_text(b, self.get_key_display)}"
                yield SystemCommand(b.description, f"{b.tooltip} ({keys})" if b.tooltip else keys,
                                    self._runner(b.action))

    def key_help(self) -> list[tuple[str, str]]:
        """(keys, what they do) of the tables' screen: the table's own keys, the app's, the command palette's."""
        return key_help(self.COMMAND_PALETTE_BINDING, self.get_key_display)

    def _runner(self, action: str) -> Callable[[], Any]:
        return lambda: self.run_action(action)

