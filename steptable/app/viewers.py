"""The app's actions that open another screen over the tables: column filter and jump prompts, the generations
viewer, the events list, the comparison of arms, the keys' help. The screens are imported when first opened, not on
the way to the first frame."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from textual.notifications import SeverityLevel
from textual.screen import Screen

if TYPE_CHECKING:
    from steptable.app.armrule import ArmRule
    from steptable.app.search import Search
    from steptable.app.seedgroups import SeedGroups
    from steptable.app.session import Session
    from steptable.app.tables import Tables
    from steptable.app.widgets.status import Event

_R = TypeVar("_R")


class ViewerHost(Protocol):
    """What the viewers need of the app."""

    @property
    def session(self) -> Session: ...

    @property
    def arm_rule(self) -> Callable[[], ArmRule]: ...

    @property
    def seedgroups(self) -> SeedGroups: ...

    def push_screen(self, screen: Screen[_R], callback: Callable[[_R | None], None] | None = None) -> Any: ...

    def notify(self, message: str, *, severity: SeverityLevel = "information", markup: bool = True) -> None: ...

    def apply_columns(self) -> None: ...

    def key_help(self) -> list[tuple[str, str]]: ...


class Viewers:
    """Opens the screens; owned by the app, which hands it the actions. ``tables``: the tables a jump moves and
    whose step the generations viewer opens at."""

    def __init__(self, app: ViewerHost, tables: Tables) -> None:
        self.app = app
        self.tables = tables

    def help(self) -> None:
        from steptable.app.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self.app.key_help()))

    def filter(self) -> None:
        from steptable.app.screens.prompt import PromptScreen

        def done(pattern: str | None) -> None:
            if pattern is None:
                return
            if self.app.session.set_filter(pattern):
                self.app.apply_columns()
            else:  # typed text: never markup
                self.app.notify(f"no column matches {pattern.strip()!r}: the columns stay as they were",
                                severity="warning", markup=False)

        self.app.push_screen(
            PromptScreen("Show columns matching (globs, comma or space separated; empty shows all):",
                         self.app.session.pattern, "rew* kl* loss", "a word without * matches anywhere in the key"),
            done,
        )

    def search(self, search: Search) -> None:
        from steptable.app.screens.prompt import PromptScreen

        def done(text: str | None) -> None:
            if text is not None:
                search.find(text)

        self.app.push_screen(PromptScreen("Search cells and column names (ignoring case; n / N: next, previous):",
                                          search.finder.text, "e.g. nan, 0.25, kl"), done)

    def jump(self) -> None:
        from steptable.app.screens.prompt import PromptScreen

        self.app.push_screen(PromptScreen("Jump to step:", "", "e.g. 1200"), self._jump)

    def _jump(self, answer: str | None) -> None:
        if not answer:
            return
        try:
            step = int(float(answer.strip()))
        except (ValueError, OverflowError):  # "x", "nan"; "inf", "1e400"
            self.app.notify(f"not a step: {answer!r}", severity="warning", markup=False)  # typed text: never markup
            return
        self.tables.jump_to_step(step)

    def events(self) -> None:
        from steptable.app.screens.events import EventsScreen

        def done(event: Event | None) -> None:
            if event is not None and event.step is not None:
                self.tables.jump_to_step(event.step)

        self.app.push_screen(EventsScreen(self.app.session.events()), done)

    def compare(self) -> None:
        """Which arm wins: window means and differences against a baseline arm, brought up to date live."""
        from steptable.app.screens.compare import CompareScreen

        self.app.push_screen(CompareScreen(lambda: list(self.app.seedgroups.distinct_runs().values()),
                                           rule=self.app.arm_rule()))

    def chart(self) -> None:
        """The chart view of the picked column (else the run's reward or loss), every shown arm overlaid; its
        crosshair moves the tables."""
        from steptable.app.screens.chart import Arm, ChartScreen
        from steptable.app.seedgroups import is_group

        session = self.app.session

        def arms() -> list[Arm]:
            labels = session.labels()
            folded = self.app.seedgroups.folded_seeds()  # (drawn as their group's band)
            return [Arm(rid, labels.get(rid, rid), r.store, r.rows) for rid, r in session.runs.items()
                    if (rid not in session.hidden or rid in folded) and r.rows and not is_group(rid)]

        self.app.push_screen(ChartScreen(arms, None, self.tables.show_steps))

    def generations(self) -> None:
        """Completions of the shown arms that have generations side files, at the step on screen; those of a run
        hidden as a copy of a shown one (the same training through another logger: its TensorBoard text beside
        its W&B run) are that run's, and those of the seeds of a group shown as its table of means are each seed's
        (the table of means has no samples of its own)."""
        from steptable.app.screens.generations import GenerationsScreen
        from steptable.app.sidefiles import GenSource, side_paths, table_steps
        from steptable.ingest.readers.trackiotraces import has_traces

        session = self.app.session
        labels = session.labels()
        sources = []
        copy_of = self.app.seedgroups.copies.of
        shown = self.app.seedgroups.shown_runs()
        for rid, run in session.runs.items():
            kept = copy_of.get(rid)
            if (kept or rid) not in shown:
                continue
            files = side_paths(run.store.side_files or {})
            meta = getattr(run.store, "meta", {})
            name = meta.get("trackio_run")  # (a trackio run's; its tables and texts, as they are now)
            tables, texts = list(meta.get("trackio_tables") or ()), list(meta.get("texts") or ())
            traces = (Path(run.store.path), name) if isinstance(name, str) and (
                tables or has_traces(run.store.path, name)) else None
            if files or traces or texts:
                steps = table_steps(meta)  # (a W&B run's tables)
                sources.append(GenSource(labels.get(kept or rid, kept or rid), files, steps, traces, texts, tables))
        if not sources:
            self.app.notify("no generations side files (generations.jsonl, *_rollout_summaries.jsonl, "
                            "rich_completions/*.json, verl's <rollout_data_dir>/<step>.jsonl, TRL's "
                            "completions/*.parquet, a W&B run's tables, a trackio run's traces and tables, "
                            "TensorBoard text) in these runs")
            return
        grid = self.tables.focused_grid()
        step = None
        if grid is not None and grid.store is not None and not grid.follow:
            # rows as last taken: the follower may have emptied the store since (a rewritten file)
            last = min(grid.rows, len(grid.store)) - 1
            try:
                step = int(grid.store.step_at(min(grid.top_index, last))) if last >= 0 else None
            except IndexError:
                step = None
        self.app.push_screen(GenerationsScreen(sources, step))
