"""steptable.app.widgets.panels: the legend, diagnostics and chart panels: distinct arm labels for a sweep's
runs, the chart equal to a fresh build, read once per change, scrolled over many arms, numbers in one form."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from steptable.app.widgets import panels
from steptable.app.widgets.panels import ChartPanel, DiagnosticsPanel, LegendPanel, _ArmPanel, arm_labels
from steptable.table.formatting import display_width
from tests.app.helpers import (
    ARMS,
    SIZE,
    append,
    lines_of,
    make_runs,
    manual_app,
    row,
    screen_text,
    static_text,
    sync,
    write_rows,
)

pytestmark = pytest.mark.anyio

SWEEP = ("qwen7b_grpo_lr1e-6_kl0.01", "qwen7b_grpo_lr3e-6_kl0.01", "qwen7b_grpo_lr1e-5_kl0.01")


def _panel_labels(app: Any) -> tuple[list[str], list[str]]:
    """The chart's label of each arm (its line's first word) and the diagnostics header's cells."""
    chart = str(app.query_one(ChartPanel).body.render()).split("\n")[1:]
    diag = str(app.query_one(DiagnosticsPanel).body.render()).split("\n")
    return [line.split()[0] for line in chart], diag[1].split()


@pytest.mark.parametrize("width", [200, 80])
@pytest.mark.parametrize("nested", [False, True])
async def test_sweep_runs_get_distinct_chart_and_diagnostics_labels(tmp_path: Path, width: int, nested: bool) -> None:
    """A sweep's runs get distinct labels (cutting each name's middle to 16 cells would leave ``qwen7b_g…_kl0.01``
    three times), and runs under ``<run>/seed0/`` (one arm name, seed0) are labelled by what tells them apart, not
    by their whole run id with ``/metrics.jsonl``."""
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


def test_arm_labels_keep_names_that_are_not_file_paths_and_survive_empty_ones() -> None:
    """'Qwen/Qwen2.5-7B' stays whole (only a file path loses its file name), and a name that is empty once
    sanitized (a zero-width space, an escape) gets a label too (no IndexError in the chart)."""
    assert arm_labels(["Qwen/Qwen2.5-7B", "meta-llama/Llama-3.1-8B"], 40) == ["Qwen/Qwen2.5-7B",
                                                                             "meta-llama/Llama-3.1-8B"]
    assert arm_labels(["grpo/lr1e-6", "ppo/lr3e-6"], 40) == ["grpo/lr1e-6", "ppo/lr3e-6"]
    assert arm_labels(["a/metrics.jsonl", "b/metrics.jsonl"], 40) == ["a", "b"]
    for width in (1, 4, 16):
        got = arm_labels(["\u200b", "routeA", "\x1b[0m"], width)
        assert len(got) == 3 and all(got) and all(len(x) <= max(width, 2) for x in got)


async def test_legend_and_diagnostics(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("l")
        assert app.query_one("#legend-box").display and app.query_one(LegendPanel).display
        shown = screen_text(app)
        assert "Legend" in shown and "how well dot(act, v_act)" in shown and "; higher is better" in shown
        await pilot.press("l")
        assert not app.query_one("#legend-box").display

        await pilot.press("d")
        diag = app.query_one(DiagnosticsPanel)
        text = static_text(diag.body)
        for key in ("auroc", "cos", "qmass", "keep", "resid", "rout", "tlo", "thi", "stale"):
            assert key in text
        assert all(label in text for label in ARMS)
        assert "▁" in text or "█" in text
        await pilot.press("d")
        assert not diag.display


CHART_SIZE = (150, 40)


def _fresh_text(panel: _ArmPanel, width: int) -> str:
    """What a panel with no caches and no earlier summaries builds from the same inputs."""
    fresh = ChartPanel() if isinstance(panel, ChartPanel) else DiagnosticsPanel()
    fresh.arms, fresh.cols = list(panel.arms), dict(panel.cols)
    if isinstance(panel, ChartPanel) and isinstance(fresh, ChartPanel):
        fresh.key = panel.key
    return fresh.build(width).plain


def _check(panel: _ArmPanel) -> str:
    """The text on screen equals a fresh build's at the panel's width (the one its redraw used)."""
    width = max(panel.scrollable_content_region.width - 2, 40)
    shown = str(panel.body.render())
    assert shown == panel.build(width).plain
    assert shown == _fresh_text(panel, width)
    return shown


async def _go_to(pilot: Any, key: str, way: str = "right") -> None:
    app = pilot.app
    for _ in range(40):
        if app.session.selected == key:
            await pilot.pause()
            return
        await pilot.press(way)
    raise AssertionError(f"column {key} not reached")


@pytest.mark.anyio
async def test_chart_text_equals_a_fresh_build_after_appends_restart_and_switching(tmp_path: Path) -> None:
    root = make_runs(tmp_path, steps=60)
    app, follower, _ = manual_app(root, now=1e12)
    async with app.run_test(size=CHART_SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("d")
        await pilot.press("c")
        await pilot.pause()
        chart, diag = app.query_one(ChartPanel), app.query_one(DiagnosticsPanel)
        seen: dict[str, str] = {}
        for key in ("rew", "gt_s", "loss"):  # a float column, a column of (n, d) pairs, another float column
            await _go_to(pilot, key)
            seen[key] = _check(chart)
            _check(diag)
        for key in ("gt_s", "rew", "gt_s"):  # back and forth: nothing changed, the same text
            way = "left" if list(seen).index(key) < list(seen).index(app.session.selected or "") else "right"
            await _go_to(pilot, key, way)
            assert _check(chart) == seen[key]

        for i, arm in enumerate(ARMS):  # appends: new rows and a new max
            append(root, arm, 60, 90, arm_i=i)
        write_rows(root / "routeA" / "metrics.jsonl", [{**row(1, 90), "gt_s": [16, 16], "rew": 9.5}])
        await sync(pilot, follower)
        text = _check(chart)
        assert text != seen["gt_s"] and "steps 0-90" in text
        _check(diag)
        await _go_to(pilot, "rew", "left")
        assert "max +9.5" in _check(chart)

        # a restart: the file rewritten with as many rows as before, other values (same row count, same width)
        path = root / "routeA" / "metrics.jsonl"
        before = _check(chart)
        path.write_text("")
        await sync(pilot, follower)
        _check(chart)
        write_rows(path, ({**row(1, s), "rew": -2.0 + s / 100} for s in range(91)))
        await sync(pilot, follower)
        after = _check(chart)
        assert after != before and "min -2" in after
        _check(diag)
        await _go_to(pilot, "gt_s")
        _check(chart)
        await _go_to(pilot, "rew", "left")
        assert _check(chart) == after


@pytest.mark.anyio
async def test_a_column_picked_again_reads_no_column(tmp_path: Path, monkeypatch: Any) -> None:
    """Switching back to a charted column with no new rows reads no column again (the old chart copied and
    downsampled every arm's column on every redraw); an arm that grew is read again, alone."""
    app, follower, _ = manual_app(make_runs(tmp_path, steps=300), now=1e12)  # (more rows than the sparkline's cells)
    async with app.run_test(size=CHART_SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        chart = app.query_one(ChartPanel)
        await _go_to(pilot, "rew")
        await pilot.press("right")
        await pilot.pause()
        reads: list[tuple[str, int, int]] = []
        real = panels.extremes

        def counted(pyramid: Any, rows: int, buckets: int) -> list[float]:
            reads.append((app.session.selected or "", rows, buckets))
            return real(pyramid, rows, buckets)

        monkeypatch.setattr(panels, "extremes", counted)
        await pilot.press("left")  # back to rew: cached
        await pilot.pause()
        assert app.session.selected == "rew" and reads == []
        _check(chart)
        reads.clear()  # (the fresh build _check compares with reads every arm)
        append(tmp_path, "absorb", 300, 301, arm_i=2)  # one arm grows: only its series is read again
        await sync(pilot, follower)
        assert [(key, n) for key, n, _ in reads] == [("rew", 301)], reads
        _check(chart)


async def test_chart_survives_a_store_emptied_before_the_app_hears_of_it(tmp_path: Path) -> None:
    root = make_runs(tmp_path, arms=("a",))
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(120, 32)) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        (root / "a" / "metrics.jsonl").write_text(json.dumps(row(0, 0)) + "\n")  # the trainer restarted
        follower.real.scan()  # the follower thread re-read it; its RunsChanged is not handled yet
        await pilot.resize_terminal(110, 30)  # the chart redraws with the old row count
        await pilot.press("right")
        await pilot.pause()
        assert app.is_running and app._exception is None
        await sync(pilot, follower)
        assert "steps 0-0" in str(app.query_one(ChartPanel).body.render())


async def test_diagnostics_and_status_rows_stay_on_their_lines(tmp_path: Path) -> None:
    arms = [f"arm{i:02d}" for i in range(10)]
    root = make_runs(tmp_path, steps=50, arms=arms)
    bad = "{not json " + "x" * 200 + "\n"
    write_rows(root / "arm00" / "metrics.jsonl", [], bad * 3)
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("d")
        await pilot.pause()
        shown = lines_of(app, "Routing diagnostics", 11)
        # 10 arms do not fit 120 cells: blocks of arms one under another, each row with its key in view (scrolled
        # sideways, the rows had lost their key names)
        assert "arms in blocks of" in shown[0]
        assert shown[1].split()[:2] == ["arm00", "arm01"]
        for line, key in zip(shown[2:], ("auroc", "cos", "qmass", "keep", "resid", "rout", "tlo", "thi", "stale"),
                             strict=True):
            assert line.split()[0] == key and len(line.split()) >= 3, line  # the key's values on its own row
        panel = app.query_one(DiagnosticsPanel)
        assert panel.max_scroll_x == 0 and panel.max_scroll_y > 0 and panel.allow_focus()
        text = str(panel.body.render())
        assert "arm09" in text and text.count("\nauroc") == 2  # the second block names its keys too

        status = lines_of(app, "● ", 4)
        assert status[0].lstrip().startswith("●") and all(line.lstrip().startswith("B arm00") for line in status[1:])


async def test_chart_of_many_arms_scrolls_and_says_so(tmp_path: Path) -> None:
    arms = [f"arm{i:02d}" for i in range(30)]
    app, follower, _ = manual_app(make_runs(tmp_path, steps=20, arms=arms), stacked=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        chart = app.query_one(ChartPanel)
        assert "13 of 30 arms in view" in lines_of(app, "Chart of", 1)[0]
        assert chart.max_scroll_y > 0 and chart.allow_focus()
        chart.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert any(line.lstrip().startswith("arm29") for line in screen_text(app).split("\n"))


async def test_chart_labels_keep_the_end_of_sweep_names(tmp_path: Path) -> None:
    arms = tuple(f"grpo_qwen2.5-7b_lr1e-6_kl0.001_trial{i}" for i in range(3))  # (seed{i}: one seed group)
    app, follower, _ = manual_app(make_runs(tmp_path, steps=20, arms=arms))
    async with app.run_test(size=(120, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        chart = str(app.query_one(ChartPanel).body.render())
        assert all(f"trial{i}" in chart for i in range(3))


async def test_a_column_a_filter_brought_in_can_be_charted(tmp_path: Path) -> None:
    from steptable import Col, StepLogger

    cols = [Col("step", 4, "step", "d"), Col("rew", 6, "rew", ".2f"),
            Col("gen", 6, "gen", None, "seconds generating", stream=False)]
    with StepLogger(cols, run_dir=tmp_path / "a", arm="a", console=False, alerts=False) as sl:
        for s in range(5):
            sl.log({"step": s, "rew": 0.5, "gen": 12.0 + s})
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await sync(pilot, follower)
        await pilot.press("F", "g", "e", "n", "enter")
        await pilot.pause()
        app.session.selected = "gen"
        await pilot.press("c")
        await pilot.pause()
        text = str(app.query_one(ChartPanel).body.render())
        assert "Chart of gen" in text and "max 16" in text


async def test_chart_numbers_of_a_fraction_column_in_one_form(tmp_path: Path) -> None:
    """min .71875 over max .688: the automatic format filled spare cells with digits."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("right", "right", "right", "c")  # hack_s, an n/d column
        await pilot.pause()
        chart = app.query_one(ChartPanel)
        assert chart.key == "hack_s" and chart.cols["hack_s"].fmt == "frac"
        text = str(chart.build(110))
    numbers = re.findall(r"(?:min|max|last) (\S+)", text)
    assert len(numbers) == 9 and all(re.fullmatch(r"\d\.\d{3}", n) for n in numbers), numbers


async def test_an_arm_that_never_logged_a_key_shows_no_nan_for_it(tmp_path: Path) -> None:
    """vanilla logs no routing diagnostics: the diagnostics panel said NaN under every key for it, and the chart of
    such a column min NaN max NaN last NaN, as if it had logged a NaN. Its cells are empty; the routed arms' stay."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=(200, 50)) as pilot:
        await sync(pilot, follower)
        await pilot.press("d")
        diag = static_text(app.query_one(DiagnosticsPanel).body).split("\n")
        assert [line.split()[0] for line in diag[2:]] == ["auroc", "cos", "qmass", "keep", "resid", "rout", "tlo",
                                                          "thi", "stale"]
        assert not any("NaN" in line for line in diag), "\n".join(diag)
        assert all(len(re.findall(r"[-+]?\d*\.?\d+ ", line)) == 2 for line in diag[2:])  # routeA's and absorb's
        await pilot.press("d", "c")
        await _go_to(pilot, "auroc")
        chart = _check(app.query_one(ChartPanel)).split("\n")[1:]
        vanilla = next(line for line in chart if line.startswith("vanilla"))
        assert "NaN" not in vanilla and "not in this run's rows" in vanilla
        assert all("last" in line for line in chart if not line.startswith("vanilla"))
