"""The chart view (C): a one-point spike at full height and a NaN marker on a 100k-row run, axes with labels, every
arm overlaid with a key, zoom keeping the spike, the crosshair moving the tables; the drawing's pieces alone."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from rich.style import Style

from steptable.app.charts.draw import GUTTER, MARKER, Line, Styles, chart, nice_ticks
from steptable.app.screens.chart import ChartScreen, default_metric, metrics_for
from steptable.ingest.pyramid import Pyramid
from tests.app.helpers import manual_app, screen_text, sync

STYLES = Styles(arms=[Style(color="red"), Style(color="blue")], alert=Style(color="yellow"), axis=Style(dim=True),
                cross=Style(reverse=True))
SPIKE, NAN = 77_777, 33_333


def big_runs(root: Path, n: int = 100_000) -> Path:
    """Two arms of loss ~1; arm a has one value of 1000 at step 77777 and a NaN at step 33333."""
    for arm, off in (("a", 0.0), ("b", 0.1)):
        p = root / arm / "metrics.jsonl"
        p.parent.mkdir(parents=True)
        with p.open("w") as f:
            for s in range(n):
                loss = 1.0 + off + 0.01 * math.sin(s / 500)
                if arm == "a" and s == SPIKE:
                    loss = 1000.0
                if arm == "a" and s == NAN:
                    loss = math.nan
                f.write(json.dumps({"step": s, "ref_eq": s * 0.001, "loss": loss}) + "\n")
    return root


def _plot(lines: list[Any]) -> list[str]:
    return [t.plain[GUTTER:] for t in lines[2:-2]]  # (title, marker row; x axis and labels)


@pytest.mark.parametrize("view", [(0, 999_999), (700_000, 800_000), (777_700, 777_900), (777_777, 777_778)])
def test_a_spike_of_one_point_in_a_million_reaches_the_top_at_every_zoom(view: tuple[int, int]) -> None:
    n = 1_000_000
    vals = [1.0] * n
    vals[777_777] = 25.0
    line = Line("a", [float(i) for i in range(n)], Pyramid(vals))
    out = chart("t", [line], (float(view[0]), float(view[1])), 80, 20, STYLES)
    plot = _plot(out)
    top = plot[0]
    assert top.strip(), "nothing on the plot's top row: the spike was averaged away"
    tall = [c for c in range(len(top)) if top[c] != " "]
    assert all(plot[-1][c] != " " or plot[-2][c] != " " for c in tall) or view[1] - view[0] < 5  # a full bar


def test_nan_marker_and_labelled_axes() -> None:
    vals: list[float | None] = [float(i % 7) for i in range(1000)]
    vals[500] = math.nan
    vals[600] = None  # absent: no marker
    out = chart("t", [Line("a", [float(i) for i in range(1000)], Pyramid(vals))], (0.0, 999.0), 60, 14, STYLES)
    marks = out[1].plain[GUTTER:]
    assert marks.count(MARKER) == 1 and abs(marks.index(MARKER) - 500 * (60 - GUTTER) / 1000) <= 1
    assert any(s.style == STYLES.alert for s in out[1].spans)
    ys = [t.plain[: GUTTER - 2].strip() for t in out[2:-2] if t.plain[GUTTER - 1] == "┤"]
    assert "0" in ys and "6" in ys
    assert "500" in out[-1].plain and "(step)" in out[-1].plain


def test_log_y_and_overlay_colours() -> None:
    x = [float(i) for i in range(100)]
    a = Line("a", x, Pyramid([10.0 ** (i / 20) for i in range(100)]))
    b = Line("b", x, Pyramid([1.0] * 100))
    out = chart("t", [a, b], (0.0, 99.0), 60, 14, STYLES, log=True)
    ys = [t.plain[: GUTTER - 2].strip() for t in out[2:-2] if t.plain[GUTTER - 1] == "┤"]
    assert {"1", "100", "10k"} <= set(ys)  # ticks at decades, evenly apart
    colours = {str(s.style.color.name) for t in out[2:-2] for s in t.spans
               if isinstance(s.style, Style) and s.style.color is not None}
    assert {"red", "blue"} <= colours


def test_ticks_and_metric_choice() -> None:
    assert nice_ticks(0.0, 1.0, 5) == [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
    assert nice_ticks(3.0, 3.0, 4) == [3.0]
    assert default_metric(["step", "ref_eq", "loss", "reward"]) == "reward"
    assert default_metric(["step", "ref_eq", "actor/pg_loss"]) == "actor/pg_loss"
    assert default_metric(["step", "ref_eq"]) == "ref_eq"
    assert metrics_for("loss", ["step", "loss", "actor/pg_loss", "x"]) == ["loss", "actor/pg_loss"]
    assert metrics_for("nothing*", ["loss"]) == []


@pytest.mark.anyio
async def test_chart_view_opens_on_loss_shows_spike_and_crosshair_moves_tables(tmp_path: Path) -> None:
    app, follower, _ = manual_app(big_runs(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("C")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChartScreen)
        assert screen.metrics(screen.arms()) == ["loss"]  # not the first column (ref_eq)
        text = screen_text(app)
        assert MARKER in text  # the NaN marker
        ticks = [float(t.split("┤")[0]) for t in text.splitlines() if "┤" in t and t.split("┤")[0].strip()]
        assert max(ticks) >= 800  # the spike sets the y axis: it is drawn, not averaged away
        await pilot.press("right")  # the crosshair appears mid-plot: every table goes to its step
        await pilot.pause()
        tops = {rid: p.grid.store.step_at(p.grid.top_index) for rid, p in app.panels.items() if p.grid.store}
        assert len(set(tops.values())) == 1 and 40_000 < next(iter(tops.values())) < 60_000
        assert not any(p.grid.follow for p in app.panels.values())
        for _ in range(6):
            await pilot.press("plus")
        await pilot.pause()
        assert screen.view is not None and screen.view[1] - screen.view[0] < 2_000


def test_chart_view_snapshot(snap_compare: Any, tmp_path: Path) -> None:
    app, follower, _ = manual_app(big_runs(tmp_path), now=1e12)

    async def run_before(pilot: Any) -> None:
        await sync(pilot, follower)
        await pilot.press("C")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
