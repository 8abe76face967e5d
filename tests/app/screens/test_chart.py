"""The chart view (C): a one-point spike at full height and a NaN marker on a 100k-row run, axes with labels, every
arm overlaid with a key, zoom keeping the spike, the crosshair moving the tables; tick choice and metric choice."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import pytest

from steptable.app.charts.draw import MARKER, nice_ticks
from steptable.app.screens.chart import ChartScreen, default_metric, metrics_for
from tests.app.helpers import manual_app, screen_text, sync

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


async def built(pilot: Any) -> ChartScreen:
    """The chart view on screen once the series its threads build are drawn."""
    screen = pilot.app.screen
    assert isinstance(screen, ChartScreen)
    for _ in range(2000):  # (bounded: a build of 100k rows takes well under a second)
        if screen.feeds.items and not any(s.building for s in screen.feeds.items.values()):
            break
        await pilot.pause(0.01)
    await pilot.pause()
    await pilot.pause()
    return screen


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
        screen = await built(pilot)
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
        await built(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


@pytest.mark.anyio
async def test_a_long_run_is_built_in_a_thread_while_the_keys_work(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The first build of a long series runs in a thread: the chart says it is building, the keys keep working
    (here while the build is held), and the chart is drawn when it is done."""
    from steptable.app.charts import series

    hold = threading.Event()
    real = series.Series.update

    def held_update(self: series.Series, rows: int, smooth: bool = False) -> None:
        if threading.current_thread() is not threading.main_thread():
            assert hold.wait(30)
        real(self, rows, smooth)

    monkeypatch.setattr(series.Series, "update", held_update)
    monkeypatch.setattr(series, "BACKGROUND_ROWS", 1_000)
    app, follower, _ = manual_app(big_runs(tmp_path, n=5_000))
    async with app.run_test(size=(120, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("C")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChartScreen)
        assert "building the view of 5,000 rows" in screen_text(app)
        await pilot.press("y", "m")  # keys are taken while the series are being built
        assert screen.log_y and screen.smoothed
        hold.set()
        await built(pilot)
        text = screen_text(app)
        assert "building" not in text and MARKER in text and "(log y)" in text


def seed_runs(root: Path, n: int = 600) -> Path:
    """vanilla (one run) and routeA in 3 seeds (routeA_seed1..3): a seed group."""
    for arm, lift in (("vanilla", 0.0), ("routeA_seed1", 0.1), ("routeA_seed2", 0.12), ("routeA_seed3", 0.08)):
        p = root / arm / "metrics.jsonl"
        p.parent.mkdir(parents=True)
        with p.open("w") as f:
            for s in range(n):  # the seeds differ a little
                reward = 0.3 + lift + 0.1 * math.sin(s / 40) + 0.02 * math.sin(s / 7 + lift * 50)
                f.write(json.dumps({"step": s, "reward": reward}) + "\n")
    return root


@pytest.mark.anyio
async def test_a_seed_group_is_drawn_as_its_mean_and_band_and_g_draws_each_seed(tmp_path: Path) -> None:
    from steptable.app.charts.bands import BAND_WORDS

    app, follower, _ = manual_app(seed_runs(tmp_path))
    async with app.run_test(size=(140, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("C")
        screen = await built(pilot)
        key = screen_text(app).splitlines()
        key_line = next(ln for ln in key if "Chart (C closes)" in ln)
        assert "routeA mean (n=3)" in key_line and BAND_WORDS in key_line and "routeA_seed1" not in key_line
        lines, bands, _ = screen._lines(screen.arms(), "reward")
        assert [ln.label for ln in lines] == ["vanilla"] and len(bands) == 1 and len(bands[0].seeds) == 3
        band, mean = bands[0].buckets(0.0, 599.0, 20)
        assert all(b.lo < m.lo < b.hi for b, m in zip(band, mean, strict=True))  # three seeds differ: a band
        for seed in (1, 2, 3):  # new rows: the band's seeds follow them
            with (tmp_path / f"routeA_seed{seed}" / "metrics.jsonl").open("a") as f:
                f.write(json.dumps({"step": 600, "reward": 5.0}) + "\n")
        await sync(pilot, follower)
        screen.redraw()
        _, bands, _ = screen._lines(screen.arms(), "reward")
        assert all(s.rows == 601 for s in bands[0].seeds)
        assert bands[0].buckets(600.0, 601.0, 1)[1][0].lo == 5.0  # the mean of the seeds' new rows
        await pilot.press("g")
        await pilot.pause()
        key_line = next(ln for ln in screen_text(app).splitlines() if "Chart (C closes)" in ln)
        assert "routeA_seed1" in key_line and BAND_WORDS not in key_line


def test_seed_group_band_snapshot(snap_compare: Any, tmp_path: Path) -> None:
    app, follower, _ = manual_app(seed_runs(tmp_path), now=1e12)

    async def run_before(pilot: Any) -> None:
        await sync(pilot, follower)
        await pilot.press("C")
        await built(pilot)

    assert snap_compare(app, terminal_size=(140, 40), run_before=run_before)


@pytest.mark.anyio
async def test_the_metrics_prompt_shows_a_hostile_key_inert_and_its_answer_keeps_the_chart(tmp_path: Path) -> None:
    """The chart opens on the run's only metric, a key holding a clipboard write, a screen clear, a bidi override
    and an 8-bit CSI; / prefills the prompt with it made inert, and that answer as it is still charts the key."""
    key = "acc\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e\x9b31m"
    p = tmp_path / "a" / "metrics.jsonl"
    p.parent.mkdir(parents=True)
    p.write_text("".join(json.dumps({"step": s, key: float(s)}) + "\n" for s in range(50)))
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("C")
        screen = await built(pilot)
        assert screen.metrics(screen.arms()) == [key]
        await pilot.press("slash")
        await pilot.pause()
        text = screen_text(app)
        assert "acc31m" in text and not any(bad in text for bad in ("\x1b", "\x07", "\u202e", "\x9b"))
        await pilot.press("enter")
        screen = await built(pilot)
        assert screen.pattern == "acc31m" and screen.metrics(screen.arms()) == [key]


@pytest.mark.anyio
async def test_an_x_axis_the_runs_lack_is_said_after_every_redraw(tmp_path: Path) -> None:
    """x to tokens on runs with no token counts: the first drawing said why each chart was empty, the next one (y, a
    row of another arm, a resize) drew the empty chart alone, as if the runs had no values."""
    from tests.app.helpers import make_runs

    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=(150, 50)) as pilot:
        await sync(pilot, follower)
        await pilot.press("C")
        await built(pilot)
        await pilot.press("x")
        await pilot.pause()
        assert "absorb: no numeric any of num_tokens" in screen_text(app)
        await pilot.press("y")
        await pilot.pause()
        shown = screen_text(app)
        assert "(log y)" in shown and "absorb: no numeric any of num_tokens" in shown, shown
