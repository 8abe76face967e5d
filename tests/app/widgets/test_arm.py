"""steptable.app.widgets.arm: an arm's title (rows, age, bad lines, follow state, resumed, how its run ended)
over its table, one table per arm on one layout."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from steptable.app.widgets.arm import ArmPanel
from steptable.ingest import Follower
from steptable.table import render
from tests.app.helpers import (
    ARMS,
    SIZE,
    T0,
    lines_of,
    make_runs,
    manual_app,
    row,
    screen_text,
    static_text,
    sync,
    write_rows,
)
from tests.logger.helpers import CUSTOM_COLS, log_rows, logged_run, raising

pytestmark = pytest.mark.anyio


async def test_one_table_per_arm_same_layout(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        panels = list(app.query(ArmPanel))
        assert [p.label for p in panels] == sorted(ARMS)  # discovery order: sorted directories
        layouts = {tuple(c.key for c in p.grid.cols) for p in panels}
        assert len(layouts) == 1  # every arm shows the same columns in the same order
        cols = panels[0].grid.cols
        assert cols[0].key == "step" and "auroc" in {c.key for c in cols}
        for p in panels:
            assert p.grid.rows == 40
            title = static_text(p.title_bar)
            assert p.label in title and "40 rows" in title and "5s ago" in title and "following" in title
        # the newest row is on screen, formatted by render (same text as the stdout row)
        grid = panels[0].grid
        last = render.cells(grid.cols, grid.store.row(39))  # type: ignore[union-attr]
        assert render.SEP.join(last)[:30] in screen_text(app)


async def test_no_runs_says_what_it_waits_for_and_a_deleted_run_says_gone(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("just some notes\n")
    app, follower, _ = manual_app(notes)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        text = screen_text(app)
        assert "No runs under" in text and "keeps watching" in text  # (not a blank screen)
        write_rows(notes / "a" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(3)])
        await sync(pilot, follower)
        assert "No runs under" not in screen_text(app) and len(app.query(ArmPanel)) == 1
        (notes / "a" / "metrics.jsonl").unlink()
        await sync(pilot, follower)
        app._on_tick()
        await pilot.pause()
        assert "FILE GONE" in static_text(app.query_one(ArmPanel).title_bar)


async def test_diverged_run_shows_nan_and_inf_as_latest(tmp_path: Path) -> None:
    path = tmp_path / "arm" / "metrics.jsonl"
    rows: list[dict[str, Any]] = [{"step": s, "ts": T0 + 2 * s, "auroc": 0.72, "qmass": 0.31} for s in range(20)]
    rows += [{"step": s, "ts": T0 + 2 * s, "auroc": math.inf, "qmass": math.nan} for s in range(20, 40)]
    rows += [{"step": s, "ts": T0 + 2 * s, "val": 0.25} for s in range(40, 42)]  # later rows lack the keys
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # (json writes Infinity / NaN)
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(130, 32)) as pilot:
        await sync(pilot, follower)
        await pilot.press("d")
        await pilot.pause()
        diag = lines_of(app, "Routing diagnostics", 11)
        assert "inf" in next(line for line in diag if line.split()[:1] == ["auroc"])
        assert "NaN" in next(line for line in diag if line.split()[:1] == ["qmass"])
        await pilot.press("d")
        app.query_one(ArmPanel).grid.focus()
        while app.session.selected != "qmass":
            await pilot.press("right")
        await pilot.press("c")
        await pilot.pause()
        chart = lines_of(app, "Chart of", 2)[1]
        assert "last NaN" in chart and "max .31" in chart


async def test_bad_count_in_title_and_newest_bad_lines_in_status(tmp_path: Path) -> None:
    path = tmp_path / "arm" / "metrics.jsonl"
    write_rows(path, (row(0, s) for s in range(20)), extra="".join(f"{{bad {i}\n" for i in range(1500)))
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(130, 30)) as pilot:
        await sync(pilot, follower)
        assert "1,500 bad" in str(app.query_one(ArmPanel).title_bar.render())
        first = app.session.events(recent=3)
        assert [e.level for e in first] == ["B"] * 3 and ":1520:" in first[0].text and ":1518:" in first[2].text
        texts = [e.text for e in app.session.events()]
        assert ":1421:" in texts[99] and "400 more bad lines between these" in texts[100] and ":1020:" in texts[101]
        assert len(texts) == 1 + 1100


@pytest.mark.parametrize("size", [(160, 30), (120, 30)])
async def test_a_long_name_never_hides_the_state(tmp_path: Path, size: tuple[int, int]) -> None:
    names = [f"grpo_qwen2.5-7b_lr1e-6_kl0.001_t1.0_bs512_trial{i}" for i in range(3)]  # (seed{i}: one group)
    root = make_runs(tmp_path, arms=names)
    app, follower, clock = manual_app(root, stacked=size[0] == 120)
    async with app.run_test(size=size) as pilot:
        await sync(pilot, follower)
        clock.now = T0 + 84 + 600
        app._on_tick()
        await pilot.pause()
        for panel in app.query(ArmPanel):
            title = str(panel.title_bar.render())
            shown = title[: panel.title_bar.size.width]
            assert "STALLED" in shown and "following" in shown and "40 rows" in shown, shown
            assert panel.label[-5:] in shown  # the end of the name, where sweep runs differ


def test_an_arm_title_says_where_its_run_was_resumed(tmp_path: Path) -> None:
    """The rows from a resume step on are a relaunch's: the app's title says so, as summary and tail -f do."""
    from steptable.app.widgets.arm import ArmPanel

    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1.0} for s in range(30)])
    write_rows(path, [{"step": s, "loss": 0.9} for s in range(20, 40)])
    f = Follower([tmp_path])
    f.scan()
    (store,) = f.stores.values()
    assert list(store.resumes) == [20]
    assert "resumed 20" in ArmPanel("a", "a").title_text(store, len(store), now=0.0)
    fresh = tmp_path / "b" / "metrics.jsonl"
    write_rows(fresh, [{"step": s, "loss": 1.0} for s in range(5)])
    f.scan()
    assert "resumed" not in ArmPanel("b", "b").title_text(f.stores["b/metrics.jsonl"], 5, now=0.0)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_arms_title_says_how_its_run_ended(tmp_path: Path) -> None:
    from steptable.app.widgets.arm import ArmPanel
    from tests.app.helpers import manual_app, sync

    with pytest.raises(RuntimeError):
        logged_run(tmp_path / "crash", raising(RuntimeError("CUDA out of memory")), rows=12, arm="crash")
    logged_run(tmp_path / "ok", None, rows=12, arm="ok")
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        titles = {p.label: str(p.title_bar.render()) for p in app.query(ArmPanel)}
    assert "run ended with RuntimeError" in titles["crash"], titles
    assert "run ended" in titles["ok"] and "with" not in titles["ok"], titles


@pytest.mark.anyio
async def test_the_app_shows_an_ended_run_as_ended_not_stalled(tmp_path: Path) -> None:
    from steptable.app.widgets.arm import ArmPanel
    from tests.app.helpers import manual_app, static_text, sync

    start = time.time() - 7200
    rows: list[dict[str, object]] = [{"step": s, "ts": start + s, "reward/mean": 0.5, "kl": 0.01} for s in range(60)]
    log_rows(tmp_path / "done", CUSTOM_COLS, rows)
    app, follower, _ = manual_app(tmp_path, now=time.time())
    async with app.run_test(size=(120, 32)) as pilot:
        await sync(pilot, follower)
        app._on_tick()
        await pilot.pause()
        title = static_text(app.query_one(ArmPanel).title_bar)
        assert "run ended" in title and "STALLED" not in title
        assert [c.header.strip() for c in app.session.layout][:3] == ["step", "rew", "kl"]  # the logger's columns


def test_an_arm_title_says_two_writers_not_resumes(tmp_path: Path) -> None:
    """Rows of a second process in one arm (marked with its pid, as its StepLogger writes them: the processes
    themselves are in tests/cli/test_two_writers.py): each title says two writers, neither says resumed."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [r for s in range(30) for r in ({"step": s, "loss": 1.0}, {"step": s, "loss": 2.0,
                                                                                 "writer_pid": 4242})])
    f = Follower([tmp_path])
    f.scan()
    titles = [ArmPanel(k, k).title_text(st, len(st), now=0.0) for k, st in sorted(f.stores.items())]
    assert len(titles) == 2 and all("two writers" in t and "resumed" not in t for t in titles)
    assert "process 4242 writes this arm too" in titles[0] and "4242" in titles[1]


def test_an_arm_title_says_the_rows_lost_for_good(tmp_path: Path) -> None:
    """The file replaced before its rest was read, the new one going on past the next step: the title says which
    steps were lost, as tail -f does."""
    import os

    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1.0} for s in range(10)])
    f = Follower([tmp_path])
    f.scan()
    new = tmp_path / "a" / "incoming"
    write_rows(new, [{"step": s, "loss": 1.0} for s in range(20, 25)])
    os.replace(new, path)
    f.scan()
    (store,) = f.stores.values()
    assert "rows lost: steps 10-19" in ArmPanel("a", "a").title_text(store, len(store), now=0.0)
