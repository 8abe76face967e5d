"""The keys of the tables' screen: the app's bindings, the actions that work on that screen only (not over a viewer),
and the lines of the keys' help."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from steptable.app.screens.help import Display, key_lines
from steptable.app.widgets.grid import StepGrid

#: the app's bindings (StepTableApp.BINDINGS); the tables' own are StepGrid's
BINDINGS: list[BindingType] = [
    Binding("q", "quit", "Quit"),
    # ctrl+c quits too (Textual makes it copy, and only says how to quit): priority, over any screen's copy
    Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    Binding("question_mark,f1", "help", "Help", tooltip="this list of keys"),
    Binding("l", "toggle_legend", "Legend", tooltip="what each column means"),
    Binding("d", "toggle_diagnostics", "Diag", tooltip="routing diagnostics per arm, with their course"),
    Binding("c", "toggle_chart", "Chart", tooltip="the lit column over steps, one line per arm"),
    Binding("C", "chart_view", "Chart view", show=False,
            tooltip="metrics over x, arms overlaid: axes, zoom, crosshair"),
    # (the keys that open a prompt are priority: handled as they come, the prompt is up before the next key, which
    # goes into it; not priority, they went to the table first and came back after the keys typed with them)
    Binding("slash", "search", "Search", priority=True,
            tooltip="find text in cells and column names, ignoring case (the cell found: underlined, reversed)"),
    Binding("n", "search_next(True)", "Next match", show=False, tooltip="the search's next match (wraps)"),
    Binding("N", "search_next(False)", "Prev match", show=False, tooltip="the search's previous match (wraps)"),
    Binding("F", "filter", "Filter", priority=True, tooltip="show only the columns matching globs"),
    Binding("colon,g", "jump", "Jump", priority=True, tooltip="go to a step"),
    Binding("p", "pin", "Pin", tooltip="keep the lit column in front (again: unpin it)"),
    Binding("s", "switch_layout", "Layout", tooltip="arms side by side or stacked"),
    Binding("v", "generations", "Gens", tooltip="the samples (generations side files) at the step on screen"),
    Binding("f", "follow_all", "Follow all", show=False, tooltip="every table follows its newest rows"),
    Binding("e", "events", "Events", show=False, tooltip="every alert, stall and bad line so far"),
    Binding("w", "compare", "Compare", show=False, tooltip="which arm wins: window means, 95% CIs, Δ vs baseline"),
    Binding("k", "lockstep", "Lockstep", show=False, tooltip="every arm's table moves with the one in front"),
    Binding("right_square_bracket", "seek_alert(True)", "Next alert", show=False,
            tooltip="every table goes to the next step with an alert"),
    Binding("left_square_bracket", "seek_alert(False)", "Prev alert", show=False,
            tooltip="every table goes to the previous step with an alert"),
    Binding("right_curly_bracket", "seek_nonfinite(True)", "Next NaN", show=False,
            tooltip="every table goes to the next step with a NaN or inf in a shown column"),
    Binding("left_curly_bracket", "seek_nonfinite(False)", "Prev NaN", show=False,
            tooltip="every table goes to the previous step with a NaN or inf in a shown column"),
    Binding("o", "seed_group", "Seeds", show=False,
            tooltip="a seed group's table of means opens into its seeds' tables, and back"),
    Binding("right_parenthesis", "seek_regime(True)", "Next regime", show=False,
            tooltip="every table goes to the next step where the lit column changed regime"),
    Binding("left_parenthesis", "seek_regime(False)", "Prev regime", show=False,
            tooltip="every table goes to the previous step where the lit column changed regime"),
    Binding("r", "runs", "Runs", show=False, tooltip="a sweep's run list: filter, sort, pick runs to show"),
    Binding("0", "show_all_arms", "All arms", show=False, tooltip="show the hidden arms again"),
    *(Binding(str(k), f"toggle_arm({k - 1})", f"Arm {k}", show=False, tooltip="hide or show that arm")
      for k in range(1, 10)),
]

#: the actions of ``BINDINGS`` that work (and show in the footer) on the tables' screen only
MAIN_ACTIONS = frozenset(
    b.action.partition("(")[0] for b in BINDINGS if isinstance(b, Binding) and b.action != "quit"
)


def key_help(palette_key: str, display: Display) -> list[tuple[str, str]]:
    """(keys, what they do) of the tables' screen: the table's own keys, the app's, the command palette's (on
    ``palette_key``); keys written as ``display`` writes them."""
    palette = Binding(palette_key, "command_palette", "Commands",
                      tooltip="every action by name, the theme, screenshots")
    rows = Binding("up,down,pageup,pagedown", "scroll_rows", "Rows", tooltip="scroll (following stops)")
    tables = Binding("tab,shift+tab", "focus_table", "Tables",
                     tooltip="the next / previous table: p and the chart take its marked column")
    own = [b for b in (*StepGrid.BINDINGS, *BINDINGS) if isinstance(b, Binding)]
    return key_lines([rows, tables, *own, palette], display)
