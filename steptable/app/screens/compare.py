"""Which arm wins, live: a table of metric rows and arm columns, the baseline's cells ``mean [lo, hi]`` (95%) and
the other arms' ``Δ [lo, hi]`` against it, green where the difference is better, red where worse (by the column's
direction; bold where there is none): its verdict, beyond chance once the metric's arms tested are counted (Holm's
procedure over them, which the title names; with one other arm, its interval excludes 0), as ``compare`` and
``summary`` say it. Seeds are grouped into arms; each arm's header gives its
seeds (n). Brought up to date every ``PERIOD`` seconds by :class:`steptable.compare.live.LiveCompare` (its cost does
not grow with the runs). ``x`` cycles the x axis (step, tokens, samples, time), ``b`` the baseline; the arrows
scroll a table wider or longer than the screen, the metric names and the arms' names staying in view; ``?`` lists the
keys."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from steptable.app.armrule import ArmRule
from steptable.app.screens.help import HELP_KEYS, OwnKeysHelp
from steptable.app.widgets.keys import KeyBar
from steptable.app.widgets.pinned import PinnedTable
from steptable.compare import X_NAMES, CompareError, Result
from steptable.compare.live import LiveCompare
from steptable.compare.render import family_words, interval_text, window_span, within_runs
from steptable.table.cells import cut_middle
from steptable.table.columns import aligned_width
from steptable.table.formatting import pad, sanitize

PERIOD = 1.0
_STYLE = {"better": "bold green", "worse": "bold red", "differs": "bold"}


#: the cells the pinned metric column takes at most (a longer name loses its middle: ``rewards/…/mean``), and how
#: far it grows where names cut to it read alike
NAME_MAX = 32
NAME_MAX_ALL = 96
NAME_ROOM_LEAST = 12  # ... and the least they are cut to in a narrow view


def _names(metrics: Sequence[str], most: int = NAME_MAX_ALL) -> list[str]:
    """The metric names as the pinned column shows them: cut in their middle to NAME_MAX cells, or to as many more
    as tell them apart (``actor/very_long_…_mean`` twice tells nothing), up to NAME_MAX_ALL and to ``most`` (the
    room the arms leave it)."""
    most = max(1, min(most, NAME_MAX_ALL))
    for cells in [*range(min(NAME_MAX, most), most, 8), most]:
        names = [cut_middle(m, cells) for m in metrics]
        if len(set(names)) == len(set(metrics)):
            return names
    return _apart(metrics, most)


def _common_start(texts: Sequence[str]) -> str:
    """The characters every one of ``texts`` starts with."""
    first, last = min(texts, default=""), max(texts, default="")  # (the two furthest apart: what they share, all do)
    same = next((i for i, (x, y) in enumerate(zip(first, last, strict=False)) if x != y), None)
    return first if same is None else first[:same]


def _apart(metrics: Sequence[str], most: int) -> list[str]:
    """Names alike when cut to ``most`` cells, each shown by where they differ, what they all share before and
    after it cut down to the room left (``…policy_0_clipped…``); where they differ in several places too far apart
    for the room, the words they all hold in the same place between are left out too (``train/…_0_…_a``)."""
    pre = _common_start(metrics)
    suf = _common_start([m[len(pre) :][::-1] for m in metrics])[::-1]
    mids = [m[len(pre) : len(m) - len(suf)] for m in metrics]
    if max(map(len, mids), default=0) > most - 2:
        mids = _collapsed(mids) or mids
    out = []
    for mid in mids:
        room = max(0, most - 2 - len(mid))  # (two ellipses)
        b = min(len(suf), room // 2)
        a = min(len(pre), room - b)
        b = min(len(suf), room - a)
        shown = ("…" if a < len(pre) else "") + pre[len(pre) - a :] + mid + suf[:b] + ("…" if b < len(suf) else "")
        out.append(cut_middle(shown, most))
    return out


_WORDS = re.compile(r"([/_.\-])")


def _collapsed(texts: Sequence[str]) -> list[str] | None:
    """``texts`` with each run of words (split at ``/ _ . -``) that all of them hold in the same place made one
    ``…`` (the separators at its ends kept); None where their words do not line up."""
    parts = [_WORDS.split(t) for t in texts]
    if len({len(p) for p in parts}) != 1:
        return None
    same = [len({p[i] for p in parts}) == 1 for i in range(len(parts[0]))]
    out = []
    for words in parts:
        shown, run = [], []
        for word, shared in zip([*words, ""], [*same, False], strict=True):
            if shared:
                run.append(word)
                continue
            text = "".join(run)
            if len(text) > 3:
                text = (text[0] if _WORDS.fullmatch(text[0]) else "") + "…" + (
                    text[-1] if _WORDS.fullmatch(text[-1]) else "")
            shown += [text, word]
            run = []
        out.append("".join(shown))
    return out


def compare_parts(live: LiveCompare, results: Sequence[Result], widths: dict[str, int] | None = None,
                  name_room: int = NAME_MAX_ALL) -> tuple[Text, Text, Text]:
    """The table (see the module doc) as three Texts: a title line; the metric column (a header then a name a
    row), which stays while the arms scroll sideways; and the arms' columns, line for line beside it (their names
    first, which stay while the rows scroll). ``widths``: each arm's column width so far, kept and updated (a
    column only widens: the columns stand still as digits come and go with each update). ``name_room``: the most
    cells the metric names take (:func:`_names`)."""
    w = live.window
    arms = list(dict.fromkeys(r.arm for r in results)) or list(live.groups)
    seeds = {g: len(ms) for g, ms in live.groups.items()}
    title = f"baseline {sanitize(live.baseline)}; x {sanitize(live.x)}"
    if w is not None:
        title += f", window {window_span(w, live.x == 'step')} ({w.how} of the common range" + (
            f": {sanitize(w.ended_by)})" if w.ended_by else ")")
    if within_runs(results):
        title += "; one seed each: intervals within runs, the seeds' spread unknown"
    if holm := family_words(results):
        title += f"; colours: {holm}"
    head = [f"{sanitize(a)} (n={seeds.get(a, 0)})" + (" mean [95% CI]" if a == live.baseline else " Δ [95% CI]")
            for a in arms]
    metrics = list(dict.fromkeys(r.metric for r in results))
    rows: list[list[tuple[str, str]]] = []
    by = {(r.metric, r.arm): r for r in results}
    for metric in metrics:
        row = []
        for a in arms:
            r = by.get((metric, a))
            if r is None:
                row.append(("", ""))
            elif a == live.baseline:
                row.append((interval_text(r.mean, r.lo, r.hi), ""))
            else:
                cell = interval_text(r.delta, r.delta_lo, r.delta_hi, signed=True)
                row.append((cell, _STYLE.get(r.verdict or "", "")))
        rows.append(row)
    names = _names([sanitize(m) for m in metrics], name_room)
    name_w = aligned_width(["metric", *names])
    left = Text(pad("metric", name_w, "left") + "  \n", style="bold", no_wrap=True)  # (the gap stays with it)
    for name in names:
        left.append(pad(name, name_w, "left") + "  \n")
    least = widths if widths is not None else {}
    for j, (a, h) in enumerate(zip(arms, head, strict=True)):
        least[a] = max(least.get(a, 0), aligned_width([h, *(r[j][0] for r in rows)]))
    cols = [least[a] for a in arms]
    right = Text(no_wrap=True)
    right.append("  ".join(pad(h, wd, "left") for h, wd in zip(head, cols, strict=True)).rstrip() + "\n",
                 style="bold")
    for cells in rows:
        for j, ((cell, style), wd) in enumerate(zip(cells, cols, strict=True)):
            right.append(("  " if j else "") + pad(cell, wd, "left"), style=style)
        right.append("\n")
    if not rows:
        right.append("no metric every arm logs yet\n")
    return Text(title, no_wrap=False), left, right


class CompareScreen(OwnKeysHelp, ModalScreen[None]):
    DEFAULT_CSS = """
    CompareScreen { align: center middle; }
    CompareScreen > Vertical { width: 95%; height: 85%; border: round $primary; background: $panel; }
    CompareScreen #compare-title { width: 100%; height: auto; margin-bottom: 1; }
    """

    HELP_NOTES: ClassVar[str] = (
        "mean [95% CI]: the baseline's mean over the window, its 95% interval; Δ [95% CI]: an arm's mean less the\n"
        "baseline's, with its 95% interval; n: the arm's seeds (runs alike but for a seed part of their names)\n"
        "green: better than the baseline beyond chance (the interval excludes 0, in the metric's good direction;\n"
        "several arms: beyond chance over all of the metric's arms, by Holm's procedure, as the title says)\n"
        "red: worse than the baseline beyond chance\n"
        "bold: different from the baseline beyond chance, for a metric without a good direction\n"
        "one seed per arm: chance is the runs' own noise (10 batch means); an arm of one seed beside arms of\n"
        "several is spread as their seeds are")

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,w,q", "close", "Close"),
        Binding("x", "next_x", "X axis", tooltip="step, tokens, samples, time"),
        Binding("b", "next_baseline", "Baseline", tooltip="the arm the others are compared with"),
        Binding("left", "sideways(-1)", "Scroll left", show=False, tooltip="the metric names stay"),
        Binding("right", "sideways(1)", "Scroll right", show=False),
        Binding("up", "rows(-1)", "Scroll up", show=False),
        Binding("down", "rows(1)", "Scroll down", show=False),
        Binding("pageup", "rows(-10)", "Page up", show=False),
        Binding("pagedown", "rows(10)", "Page down", show=False),
        HELP_KEYS,
    ]

    def __init__(self, runs: Callable[[], list[Any]], period: float = PERIOD, wanted: int | None = None,
                 rule: ArmRule | None = None) -> None:
        """``runs``: the runs' stores as they are now (called every ``period`` s); ``wanted``: how many runs the view
        was opened over, where their histories are still being read (until then, it says how many are read);
        ``rule``: which runs are seeds of one arm, and the baseline and x axis the view starts from (an unknown
        baseline: the first arm)."""
        super().__init__()
        self.runs = runs
        self.wanted = wanted
        self.period = period
        rule = rule or ArmRule()
        self.pattern = rule.pattern
        self.x = rule.x
        self.baseline: str | None = rule.baseline
        self.live: LiveCompare | None = None
        self._ids: tuple[int, ...] = ()
        self._widths: dict[str, int] = {}  # each arm's column width for this LiveCompare (compare_parts)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="compare-title")
            # the metric names stay while the arms' columns scroll sideways, the arms' names while the rows scroll
            yield PinnedTable(id="compare-table")
        yield KeyBar()

    def on_mount(self) -> None:
        self.update_table()
        self.set_interval(self.period, self.update_table)

    def update_table(self) -> None:
        """Bring the table up to date (a new LiveCompare when the runs, the x axis or the baseline changed)."""
        runs = [r for r in self.runs() if len(r)]
        ids = tuple(map(id, runs))
        if self.live is None or ids != self._ids:
            self.live, self._ids = LiveCompare(runs, self.baseline, x=self.x, pattern=self.pattern), ids
            if self.live.baseline not in self.live.groups and self.live.groups:
                self.live = LiveCompare(runs, None, x=self.x, pattern=self.pattern)
            self._widths.clear()
        if len(self.live.groups) < 2:
            if self.wanted is not None and len(runs) < self.wanted:
                self._show(Text(f"{len(runs)} of {self.wanted} runs with rows so far: the comparison fills in as "
                                "their histories are read"))
            else:
                self._show(Text("one arm only: nothing to compare (seeds of one arm are grouped)"))
            return
        try:
            results = self.live.update()
        except CompareError as e:
            self._show(Text(f"x {sanitize(self.x)}: {sanitize(str(e))}\n(x: another x axis, b: another baseline)"))
            return
        # (before its first layout, the box's width as its CSS makes it: 95% of the screen, less its border)
        view = self.query_one(PinnedTable).scrollable_content_region.width or self.app.size.width * 95 // 100 - 2
        # (the pinned names take half the view at most: past it, alike long names hid every arm, pinned off-screen)
        room = max(NAME_ROOM_LEAST, view // 2 - 2)
        self._show(*compare_parts(self.live, results, self._widths, room))

    def _show(self, title: Text, names: Text | None = None, table: Text | None = None) -> None:
        """The title (or a message: it wraps in the box) and, with a table, its two parts."""
        self.query_one("#compare-title", Static).update(title)
        self.query_one(PinnedTable).show(names or Text(), table or Text())

    # (at once, not at the next refresh: keys that come together, pasted or over a slow link, each move on from the
    # one before)
    def action_sideways(self, by: int) -> None:
        table = self.query_one(PinnedTable)
        table.scroll_to(x=table.scroll_x + 4 * by, animate=False, immediate=True)

    def action_rows(self, by: int) -> None:
        table = self.query_one(PinnedTable)
        table.scroll_to(y=table.scroll_y + by, animate=False, immediate=True)

    def action_next_x(self) -> None:
        self.x = X_NAMES[(X_NAMES.index(self.x) + 1) % len(X_NAMES)] if self.x in X_NAMES else "step"
        self.live = None
        self.update_table()

    def action_next_baseline(self) -> None:
        if self.live is None or not self.live.groups:
            return
        names = list(self.live.groups)
        self.baseline = names[(names.index(self.live.baseline) + 1) % len(names)]
        self.live = None
        self.update_table()

    def action_close(self) -> None:
        self.dismiss(None)
