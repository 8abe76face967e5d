"""The app's actions that open another screen: column filter and jump prompts, the generations viewer, the events
list, the comparison of arms, the keys' help. The screens are imported when first opened, not on the way to the
first frame."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App

if TYPE_CHECKING:
    from steptable.app.session import Session
    from steptable.app.widgets.grid import StepGrid


class ViewerActions(App[int]):
    """Mixed into StepTableApp, which provides the members declared here."""

    session: Session

    def _apply_columns(self) -> None:
        raise NotImplementedError

    def jump_to_step(self, step: int) -> None:
        raise NotImplementedError

    def focused_grid(self) -> StepGrid | None:
        raise NotImplementedError

    def key_help(self) -> list[tuple[str, str]]:
        raise NotImplementedError

    def action_help(self) -> None:
        from steptable.app.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.key_help()))

    def action_filter(self) -> None:
        from steptable.app.screens.prompt import PromptScreen

        def done(pattern: str | None) -> None:
            if pattern is not None:
                self.session.pattern = pattern.strip()
                self._apply_columns()

        self.push_screen(
            PromptScreen("Show columns matching (globs, comma or space separated; empty shows all):",
                         self.session.pattern, "rew* kl* loss", "a word without * matches anywhere in the key"),
            done,
        )

    def action_jump(self) -> None:
        from steptable.app.screens.prompt import PromptScreen

        self.push_screen(PromptScreen("Jump to step:", "", "e.g. 1200"), self._jump)

    def _jump(self, answer: str | None) -> None:
        if not answer:
            return
        try:
            step = int(float(answer.strip()))
        except (ValueError, OverflowError):  # "x", "nan"; "inf", "1e400"
            self.notify(f"not a step: {answer!r}", severity="warning", markup=False)  # typed text: never markup
            return
        self.jump_to_step(step)

    def action_events(self) -> None:
        from steptable.app.screens.events import EventsScreen

        self.push_screen(EventsScreen(self.session.events()))

    def action_compare(self) -> None:
        """Which arm wins: window means and differences against a baseline arm, brought up to date live."""
        from steptable.app.screens.compare import CompareScreen

        self.push_screen(CompareScreen(lambda: [r.store for r in self.session.runs.values()]))

    def action_generations(self) -> None:
        """Completions of the visible arms that have generations side files, at the step on screen."""
        from steptable.app.screens.generations import GenerationsScreen
        from steptable.app.sidefiles import side_paths

        labels = self.session.labels()
        sources = []
        for rid, run in self.session.runs.items():
            files = side_paths(run.store.side_files or {})
            if files and rid not in self.session.hidden:
                sources.append((labels.get(rid, rid), files))
        if not sources:
            self.notify("no generations side files (generations.jsonl, *_rollout_summaries.jsonl, "
                        "rich_completions/*.json) in these runs")
            return
        grid = self.focused_grid()
        step = None
        if grid is not None and grid.store is not None and not grid.follow:
            # rows as last taken: the follower may have emptied the store since (a rewritten file)
            last = min(grid.rows, len(grid.store)) - 1
            try:
                step = int(grid.store.step_at(min(grid.top_index, last))) if last >= 0 else None
            except IndexError:
                step = None
        self.push_screen(GenerationsScreen(sources, step))
