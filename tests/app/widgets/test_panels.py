"""The watch app's arm labels in the chart and diagnostics for a sweep's runs, the footer after a theme change, an
unknown --theme, the panels on a short terminal, and the columns' places when a key arrives."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from steptable.app.session import Session
from steptable.app.themes import DEFAULT_THEME
from steptable.app.widgets.keys import KeyBar
from steptable.app.widgets.panels import ChartPanel, DiagnosticsPanel, arm_labels
from steptable.ingest.files.follow import load
from steptable.table.formatting import display_width
from tests.app.helpers import make_runs, manual_app, row, screen_text, sync, write_rows

pytestmark = pytest.mark.anyio

SWEEP = ("qwen7b_grpo_lr1e-6_kl0.01", "qwen7b_grpo_lr3e-6_kl0.01", "qwen7b_grpo_lr1e-5_kl0.01")


# ------------------------------------------------------------------------------------------ labels that tell runs apart


def _panel_labels(app: Any) -> tuple[list[str], list[str]]:
    """The chart's label of each arm (its line's first word) and the diagnostics header's cells."""
    chart = str(app.query_one(ChartPanel).body.render()).split("\n")[1:]
    diag = str(app.query_one(DiagnosticsPanel).body.render()).split("\n")
    return [line.split()[0] for line in chart], diag[1].split()


@pytest.mark.parametrize("width", [200, 80])
@pytest.mark.parametrize("nested", [False, True])
async def test_sweep_runs_get_distinct_chart_and_diagnostics_labels(tmp_path: Path, width: int, nested: bool) -> None:
    """Cutting each name's middle to 16 cells left ``qwen7b_g…_kl0.01`` three times; runs under ``<run>/seed0/``
    (one arm name, seed0) were labelled by their whole run id, ``/metrics.jsonl`` included."""
    for i, name in enumerate(SWEEP):
        write_rows(tmp_path / name / ("seed0" if nested else "") / "metrics.jsonl", (row(i, s) for s in range(40)))
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(width, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("c", "d")
        await pilot.pause()
        chart, diag = _panel_labels(app)
        for labels in (chart, diag):
            assert len(labels) == 3 and len(set(labels)) == 3, labels
            assert not any("metrics.jsonl" in label or "…" in label for label in labels), labels
            assert all(any(p in label for label in labels) for p in ("lr1e-6", "lr3e-6", "lr1e-5")), labels


def test_arm_labels_drop_what_all_share_only_as_far_as_needed() -> None:
    assert arm_labels(SWEEP, 40) == list(SWEEP)  # they fit: whole
    assert arm_labels(SWEEP, 16) == ["lr1e-6", "lr3e-6", "lr1e-5"]  # whole words shared at both ends dropped
    assert arm_labels(SWEEP, 5) == ["1e-6", "3e-6", "1e-5"]  # then characters
    nested = [f"{n}/seed0/metrics.jsonl" for n in SWEEP]
    assert arm_labels(nested, 31) == [f"{n}/seed0" for n in SWEEP]  # (a file name says nothing)
    assert arm_labels(nested, 30) == ["lr1e-6", "lr3e-6", "lr1e-5"]
    # a name that is all of another's start keeps a character; one arm keeps its name, cut in the middle
    assert arm_labels(["run", "run_v2"], 4) == ["n", "n_v2"]
    assert arm_labels(["a_x_b", "a_b"], 3) == ["x_b", "b"] and arm_labels(["a_x_b", "a_b"], 2) == ["x…", "b"]
    assert arm_labels(["a_very_long_arm_name_number_00"], 16) == ["a_very_l…mber_00"]
    # however short the width, distinct names stay distinct where the width allows it
    names = [f"grpo_qwen2.5-7b_lr1e-6_kl0.001_t1.0_bs512_seed{i}" for i in range(12)]
    for w in range(4, 30):
        out = arm_labels(names, w)
        assert len(set(out)) == len(out) and all(display_width(x) <= w for x in out), (w, out)


# ------------------------------------------------------------------------------------------ themes


def _footer_colours(app: Any) -> set[tuple[Any, Any]]:
    bar = app.query_one(KeyBar)
    strip = app.screen._compositor.render_strips()[bar.region.y]
    return {(seg.style.bgcolor, seg.style.color) for seg in strip if seg.style and seg.text.strip()}


async def test_footer_takes_the_new_theme_colours(tmp_path: Path) -> None:
    """The key bar drew its bindings once per change of bindings: a theme picked in the command palette left the
    footer in the old theme's colours."""
    root = make_runs(tmp_path)
    seen = {}
    for start, switch in (("light", None), ("dark", "light")):
        app, follower, _ = manual_app(root, theme=start)
        async with app.run_test(size=(120, 30)) as pilot:
            await sync(pilot, follower)
            if switch:
                app.theme = switch  # what the palette's theme picker does
                await pilot.pause()
                await pilot.pause()
            seen[start] = _footer_colours(app)
    assert seen["light"] and seen["dark"] == seen["light"]


async def test_an_unknown_theme_falls_back_to_steptables_default(tmp_path: Path) -> None:
    root = make_runs(tmp_path)
    app, follower, _ = manual_app(root, theme="nosuch")
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await sync(pilot, follower)
        assert app.theme == DEFAULT_THEME  # not Textual's textual-dark
        assert any("unknown theme 'nosuch'" in str(n.message) for n in app._notifications)


# ------------------------------------------------------------------------------------------ short terminals


def _last_rows_shown(app: Any) -> int:
    """Table lines showing the last step (39) on screen."""
    return len(re.findall(r"^\s+39\s+[+-]", screen_text(app), re.M))


@pytest.mark.parametrize(("arms", "size", "keys"), [(("a_very_long_arm_name",), (60, 15), "d"),
                                                    (("vanilla", "routeA", "absorb"), (80, 24), "dc")])
async def test_open_panels_leave_every_arm_table_rows(tmp_path: Path, arms: tuple[str, ...], size: tuple[int, int],
                                                      keys: str) -> None:
    """Each panel took up to 14 lines: at 60x15 the diagnostics hid every row of the table, at 80x24 with both
    panels open only the first of three stacked arms could be seen."""
    root = make_runs(tmp_path, arms=arms)
    app, follower, _ = manual_app(root)
    async with app.run_test(size=size) as pilot:
        await sync(pilot, follower)
        assert _last_rows_shown(app) == len(arms)
        await pilot.press(*keys)
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert "Routing diagnostics" in text and ("Chart of" in text) == ("c" in keys)
        assert _last_rows_shown(app) == len(arms), text
        assert all(name in text for name in arms), text


async def test_the_chart_counts_the_arms_in_view_at_its_height(tmp_path: Path) -> None:
    arms = [f"arm{i:02d}" for i in range(6)]
    root = make_runs(tmp_path, arms=arms)
    app, follower, _ = manual_app(root, stacked=False)
    async with app.run_test(size=(300, 12)) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        chart = app.query_one(ChartPanel)
        assert chart.rows < len(arms) + 1 and chart.size.height <= chart.rows
        assert f"{chart.rows - 1} of 6 arms in view" in str(chart.body.render())


# ------------------------------------------------------------------------------------------ a new key's place


def test_a_new_key_goes_after_the_columns_shown(tmp_path: Path) -> None:
    """Ranked keys were sorted again with every new key: one more informative than the ones shown (``kl``) landed
    between them and pushed them sideways."""
    def rows(keys: dict[str, Any], n: int) -> list[dict[str, Any]]:
        return [{"step": s, **{k: (f(s) if callable(f) else f) for k, f in keys.items()}} for s in range(n)]

    base = {"aaa": 0.5, "bbb": 1.0, "ccc": lambda s: round(math.sin(s * 1.7) % 1, 4)}
    write_rows(tmp_path / "A" / "metrics.jsonl", rows(base, 50))
    session = Session()
    for rid, store in load(tmp_path).items():
        session.update(rid, store)
    before = [c.key for c in session.layout]
    assert before == ["step", "ccc", "aaa", "bbb"]
    write_rows(tmp_path / "B" / "metrics.jsonl", rows({**base, "kl": lambda s: round(10 * math.cos(s * 2.3), 3)}, 50))
    for rid, store in load(tmp_path).items():
        session.update(rid, store)
    assert [c.key for c in session.layout] == [*before, "kl"]


def test_arm_labels_keep_names_that_are_not_file_paths_and_survive_empty_ones() -> None:
    """'Qwen/Qwen2.5-7B' became 'Qwen' (the last part of any name was taken for a file name), and a name that is
    empty once sanitized (a zero-width space, an escape) crashed the chart with an IndexError."""
    assert arm_labels(["Qwen/Qwen2.5-7B", "meta-llama/Llama-3.1-8B"], 40) == ["Qwen/Qwen2.5-7B",
                                                                             "meta-llama/Llama-3.1-8B"]
    assert arm_labels(["grpo/lr1e-6", "ppo/lr3e-6"], 40) == ["grpo/lr1e-6", "ppo/lr3e-6"]
    assert arm_labels(["a/metrics.jsonl", "b/metrics.jsonl"], 40) == ["a", "b"]
    for width in (1, 4, 16):
        got = arm_labels(["\u200b", "routeA", "\x1b[0m"], width)
        assert len(got) == 3 and all(got) and all(len(x) <= max(width, 2) for x in got)
