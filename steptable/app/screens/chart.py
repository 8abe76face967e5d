"""The chart view: one or several metrics (a glob), every shown arm overlaid in its own colour (Okabe-Ito, told
apart by colour-blind readers) with a key, min/max per pixel column from the pyramid (spikes and NaN markers never
averaged away), labelled y ticks, the x axis of choice (step, tokens, samples, time), log y, smoothing over the
faint raw series, zoom and pan on x, and a crosshair that reads every arm's value and moves the tables there. Arms
that are seeds of one group (``steptable.compare.groups``) are drawn as the group's mean line and a band
(:mod:`steptable.app.charts.bands`: the 95% t interval across seeds per pixel column; ``g`` draws each seed instead).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Static

from steptable.app.charts.bands import BAND_WORDS, Band, Seed, Sums
from steptable.app.charts.draw import MARKER, Line, Styles, chart, x_range
from steptable.app.charts.series import Feeds, Series
from steptable.app.model import Store, filter_globs, key_matches
from steptable.app.screens.help import HELP_KEYS, OwnKeysHelp
from steptable.app.widgets.keys import KeyBar
from steptable.compare import X_NAMES, XError, group_runs
from steptable.table.formatting import fmt_auto, sanitize

#: Okabe & Ito's colour-blind-safe palette, in the order arms take it (dark backgrounds; light ones swap yellow
#: for black)
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#F0E442", "#0072B2", "#D55E00")
LIGHT = ("#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#000000", "#0072B2", "#D55E00")
MOST_METRICS = 4


@dataclass(frozen=True)
class Arm:
    run: str
    label: str
    store: Store
    rows: int


def default_metric(keys: Sequence[str]) -> str | None:
    """The metric a user most likely wants first: the run's reward, else its loss (the alert roles' keys, which
    cover the built-in schemas' names), else its first numeric-looking key after the step."""
    from steptable.alerts.rules import DEFAULT_ROLES

    have = set(keys)
    for role in ("reward", "loss"):
        for k in DEFAULT_ROLES[role]:
            if k in have:
                return k
    return next((k for k in keys if k not in ("step", "_step", "global_step")), None)


def metrics_for(pattern: str, keys: Sequence[str]) -> list[str]:
    """The keys a metrics glob names (``filter_globs``: a word without * matches anywhere), at most MOST_METRICS; a
    key matches as logged or as shown (made inert, as the prompt shows the pattern)."""
    globs = filter_globs(pattern)
    return [k for k in keys if any(key_matches(k, g) for g in globs)][:MOST_METRICS]


class ChartScreen(OwnKeysHelp, ModalScreen[None]):
    DEFAULT_CSS = """
    ChartScreen { align: center top; }
    ChartScreen > #chart-body { width: 100%; height: 75%; background: $panel; color: $foreground; padding: 0 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,C", "close", "Close"),
        HELP_KEYS,
        Binding("left", "cross(-1)", "◀", show=False, tooltip="crosshair left: reads each arm, moves the tables"),
        Binding("right", "cross(1)", "▶", show=False, tooltip="crosshair right"),
        Binding("shift+left", "pan(-1)", "Pan ◀", show=False, tooltip="the view a quarter width left"),
        Binding("shift+right", "pan(1)", "Pan ▶", show=False, tooltip="the view a quarter width right"),
        Binding("plus,equals_sign", "zoom(0.5)", "Zoom in", tooltip="x around the crosshair"),
        Binding("minus", "zoom(2.0)", "Zoom out"),
        Binding("0", "reset", "All x", tooltip="the whole run"),
        Binding("y", "log", "Log y"),
        Binding("m", "smooth", "Smooth", tooltip="EMA over the faint raw series"),
        Binding("x", "next_x", "X axis", tooltip="step, tokens, samples, time"),
        Binding("slash", "metrics", "Metrics", tooltip="which metrics: globs"),
        Binding("g", "bands", "Seeds", tooltip="a seed group as its mean and 95% band, or each seed's line"),
    ]

    def __init__(
        self,
        arms: Callable[[], list[Arm]],
        key: str | None,
        moved: Callable[[dict[str, int]], None] | None = None,
        period: float = 1.0,
    ) -> None:
        super().__init__()
        self.arms = arms
        self.pattern = key or ""
        self.moved = moved
        self.period = period
        self.x_name = "step"
        self.log_y = False
        self.smoothed = False
        self.view: tuple[float, float] | None = None  # None: the whole run (and it grows with it)
        self.cross: int | None = None
        self.feeds = Feeds(self._built)  # a long run's first build in a thread: the keys keep working
        self.banded = True  # seed groups as their mean and band (g: each seed's own line)
        self._sums: dict[tuple[int, str, str], tuple[object, Sums]] = {}
        self.body = Static("", id="chart-body", markup=False)

    def compose(self) -> ComposeResult:
        yield self.body
        yield KeyBar()

    def on_mount(self) -> None:
        self.redraw()
        self.set_interval(self.period, self.redraw)

    def on_resize(self, event: events.Resize) -> None:
        self.redraw()

    # ---------------------------------------------------------------------------------------------- drawing

    def _styles(self) -> Styles:
        dark = self.app.current_theme.dark if self.app.current_theme is not None else True
        palette = OKABE_ITO if dark else LIGHT
        error = self.app.theme_variables.get("error", "red")
        return Styles(arms=[Style(color=c) for c in palette], alert=Style(color=error, bold=True),
                      axis=Style(dim=True), cross=Style(reverse=True))

    def metrics(self, arms: Sequence[Arm]) -> list[str]:
        keys = list(dict.fromkeys(k for a in arms for k in a.store.keys))
        if not self.pattern:
            self.pattern = default_metric(keys) or ""
        return metrics_for(self.pattern, keys)

    def groups(self, arms: Sequence[Arm]) -> list[tuple[str, list[Arm]]]:
        """The arms by seed group (a group of one where an arm has no seed siblings), in the arms' order."""
        by = {id(a.store): a for a in arms}
        return [(name, [by[id(m.run)] for m in ms]) for name, ms in group_runs([a.store for a in arms]).items()]

    def _built(self) -> None:
        """(From the building thread) a series is ready: draw it."""
        try:
            self.app.call_from_thread(self.redraw)
        except RuntimeError:  # the app has closed meanwhile
            pass

    def _lines(self, arms: Sequence[Arm], key: str) -> tuple[list[Line], list[Band], list[str]]:
        """One metric's lines (an arm alone, or each seed with ``g``) and seed groups' bands, and the arms that
        cannot be drawn on this x (or not yet: a long run's view being built) and why."""
        lines, bands, problems = [], [], []
        for name, members in self.groups(arms):
            seeds = []
            for a in members:
                try:
                    s = self.feeds.ready(a.store, key, self.x_name, a.rows, self.smoothed)
                except XError as e:
                    problems.append(f"{a.label}: {e}")
                    continue
                if s is None:
                    problems.append(f"{a.label}: building the view of {len(a.store):,} rows…")
                    continue
                if len(members) > 1 and self.banded:
                    seeds.append(Seed(s.xs, s.raw, self._sums_of(a.store, key, s)))
                else:
                    lines.append(Line(a.label, s.xs, s.raw, s.smooth if self.smoothed else None))
            if seeds:
                bands.append(Band(f"{name} mean (n={len(seeds)})", seeds))
        return lines, bands, problems

    def _sums_of(self, store: Store, key: str, s: Series) -> Sums:
        """The prefix sums of a seed's values, beside its series: extended by its new rows, made again with it."""
        k = (id(store), key, self.x_name)
        got = self._sums.get(k)
        if got is None or got[0] is not s.raw:  # (a series built again from the store: a rewritten file, a resume)
            got = self._sums[k] = (s.raw, Sums())
        sums = got[1]
        if len(sums) < len(s.raw):
            sums.extend(store.cells_between(key, len(sums), len(s.raw)))
        return sums

    def redraw(self) -> None:
        """Draw the chart again for the body's size (also brings the series up to date: new rows are appended)."""
        width, height = self.body.content_region.width, self.body.content_region.height
        if width < 20 or height < 8:
            return
        arms = self.arms()
        self.feeds.keep([a.store for a in arms])
        live = {id(a.store) for a in arms}
        self._sums = {k: v for k, v in self._sums.items() if k[0] in live}
        keys = self.metrics(arms)
        styles = self._styles()
        if not keys:
            out = [self._key([a.label for a in arms], False, styles)]
            out.append(Text(f"no column matches {sanitize(self.pattern)!r} (/ picks metrics)"))
            self.body.update(Group(*out))
            return
        each = max((height - 3) // len(keys), 8)
        charted = [(key, *self._lines(arms, key)) for key in keys]
        first_lines, first_bands = charted[0][1], charted[0][2]
        out = [self._key([ln.label for ln in first_lines] + [b.label for b in first_bands], bool(first_bands),
                         styles)]
        view = self.view or _span(charted) or (0.0, 1.0)
        for key, lines, bands, problems in charted:
            title = sanitize(f"{key}{' (log y)' if self.log_y else ''}{' · smoothed' if self.smoothed else ''}")
            if problems:
                title += sanitize(" · " + "; ".join(problems))
            out += chart(title, lines, view, width, each, styles, log=self.log_y, cross=self.cross, fmt_x=self.x_name,
                         bands=[(len(lines) + j, b) for j, b in enumerate(bands)])
        out.append(self._readout(arms, keys))
        self.body.update(Group(*out))

    def _key(self, labels: Sequence[str], banded: bool, styles: Styles) -> Text:
        """Every colour's meaning: one per line or seed group (in the chart's colour order), what a group's band
        is, the NaN marker, the crosshair, the faint raw series."""
        out = Text("Chart (C closes) · ", style="bold", no_wrap=True, overflow="ellipsis")
        for i, label in enumerate(labels):
            out.append("■ ", styles.arms[i % len(styles.arms)])
            out.append(sanitize(label) + "  ")
        if banded:
            out.append(BAND_WORDS + "  ")
        out.append(MARKER, styles.alert)
        out.append(" NaN/inf  ")
        out.append(" ", styles.cross)
        out.append(" crosshair" + ("  faint: raw (smoothing on)" if self.smoothed else ""))
        return out

    def _view(self) -> tuple[float, float] | None:
        if self.view is not None:
            return self.view
        return _span([(k, *self._lines(self.arms(), k)) for k in self.metrics(self.arms())])

    def _plot_width(self) -> int:
        from steptable.app.charts.draw import GUTTER

        return max(self.body.content_region.width - GUTTER, 4)

    def _cross_x(self) -> float | None:
        view = self._view()
        if view is None or self.cross is None:
            return None
        x0, x1 = view
        return x0 + (self.cross + 0.5) / self._plot_width() * (x1 - x0)

    def _readout(self, arms: Sequence[Arm], keys: Sequence[str]) -> Text:
        """At the crosshair: each arm's step and value of every metric (the row at or before the crosshair's x)."""
        x = self._cross_x()
        out = Text(no_wrap=True, overflow="ellipsis")
        if x is None:
            out.append("◀ ▶ crosshair · shift+◀ ▶ pan · + - zoom · 0 all · y log · m smooth · x axis · / metrics",
                       style="dim")
            return out
        out.append(f"{self.x_name} {fmt_auto(x, 4).strip()}:", style="bold")
        for i, a in enumerate(arms):
            row = self._row_at(a, x)
            if row is None:
                continue
            vals = " ".join(f"{sanitize(k)}={_value(a.store, row, k)}" for k in keys)
            out.append(f"  {sanitize(a.label)} @{a.store.step_at(row)} {vals}",
                       self._styles().arms[i % len(self._styles().arms)])
        return out

    def _row_at(self, arm: Arm, x: float) -> int | None:
        keys = self.metrics([arm])
        if not keys:
            return None
        try:
            s = self.feeds.ready(arm.store, keys[0], self.x_name, arm.rows)
        except XError:
            return None
        if s is None:  # still building
            return None
        row = bisect_right(s.xs, x, 0, min(len(s.xs), len(s.raw))) - 1
        return row if row >= 0 else None

    # ---------------------------------------------------------------------------------------------- keys

    def action_cross(self, delta: int) -> None:
        w = self._plot_width()
        self.cross = w // 2 if self.cross is None else min(max(self.cross + delta, 0), w - 1)
        self.redraw()
        x = self._cross_x()
        if x is not None and self.moved is not None:
            steps = {}
            for a in self.arms():
                row = self._row_at(a, x)
                if row is not None:
                    steps[a.run] = a.store.step_at(row)
            self.moved(steps)

    def action_pan(self, direction: int) -> None:
        view = self._view()
        if view is None:
            return
        x0, x1 = view
        shift = (x1 - x0) / 4 * direction
        self.view = (x0 + shift, x1 + shift)
        self.redraw()

    def action_zoom(self, factor: float) -> None:
        view = self._view()
        if view is None:
            return
        x0, x1 = view
        centre = self._cross_x() if self.cross is not None else (x0 + x1) / 2
        assert centre is not None
        half = max((x1 - x0) * factor / 2, 1e-9)
        self.view = (centre - half, centre + half)
        self.redraw()

    def action_reset(self) -> None:
        self.view = None
        self.redraw()

    def action_log(self) -> None:
        self.log_y = not self.log_y
        self.redraw()

    def action_smooth(self) -> None:
        self.smoothed = not self.smoothed
        self.redraw()

    def action_next_x(self) -> None:
        self.x_name = X_NAMES[(X_NAMES.index(self.x_name) + 1) % len(X_NAMES)]
        self.view = None
        self.redraw()

    def action_metrics(self) -> None:
        from steptable.app.screens.prompt import PromptScreen

        def done(pattern: str | None) -> None:
            if pattern is not None and pattern.strip():
                self.pattern = pattern.strip()
                self.redraw()

        self.app.push_screen(PromptScreen("Chart metrics (globs, comma or space separated; up to 4 charts):",
                                          self.pattern, "loss rew*"), done)

    def action_bands(self) -> None:
        self.banded = not self.banded
        self.redraw()

    def action_close(self) -> None:
        self.dismiss(None)


def _span(charted: Sequence[tuple[str, list[Line], list[Band], list[str]]]) -> tuple[float, float] | None:
    """The x every line and band of the charts spans."""
    spans = [r for _, lines, bands, _ in charted for r in (x_range(lines), *(b.x_range() for b in bands))
             if r is not None]
    return (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None


def _value(store: Store, row: int, key: str) -> str:
    try:
        v = store.value(row, key)
    except IndexError:
        return "-"
    if v is None:
        return "-"
    x = v if isinstance(v, float) else math.nan
    return fmt_auto(x, 4).strip() if isinstance(v, float) else sanitize(str(v))
