"""Seed groups in watch (steptable.app.seedgroups, seedmeans): routeA_seed1..3 shown as one table of per-step means
with n_seeds, o opens it into the seeds' tables and folds them back, new rows update the means; a run alone stays
itself; the compare view and the chart read the seeds, not the table of means."""

from __future__ import annotations

import json
import math
import random
import threading
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.engine import fmt_age
from steptable.app import seedgroups, seedmeans
from steptable.app.seedgroups import GROUP_PREFIX
from steptable.app.seedmeans import N_KEY, SeedMeans
from steptable.app.widgets.status import StatusBar
from steptable.ingest.parsed import Parsed
from steptable.ingest.store import RunStore
from tests.app.helpers import T0, manual_app, sync, until
from tests.app.sweephelpers import write_run

LOSS = {"routeA_seed1": 1.0, "routeA_seed2": 2.0, "routeA_seed3": 6.0, "vanilla": 10.0}


def write_group(root: Path, rows: dict[str, int]) -> Path:
    for arm, n in rows.items():
        p = root / arm / "metrics.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        with p.open("a") as f:
            start = sum(1 for _ in p.open()) if p.stat().st_size else 0
            for s in range(start, n):
                f.write(json.dumps({"step": s, "loss": LOSS[arm] + s, "text": "x"}) + "\n")
    return root


def _store(name: str, steps: list[int], loss: list[float | None]) -> RunStore:
    st = RunStore(name, f"/nonexistent/{name}.jsonl", arm=name)
    st.add(Parsed(steps=steps, rows=[{"loss": v} if v is not None else {"other": 1.0} for v in loss]), now=math.nan)
    return st


def test_means_per_step_with_n_up_to_the_slowest_seed_and_nan_left_out() -> None:
    a = _store("g_seed1", [0, 1, 2, 3], [1.0, 2.0, math.nan, 4.0])
    b = _store("g_seed2", [0, 2, 3], [3.0, 5.0, 6.0])  # no step 1
    c = _store("g_seed3", [0, 1, 2], [5.0, None, 8.0])  # the slowest: ends at 2
    m = SeedMeans("g", [a, b, c])
    assert m.update([a, b, c]) and m.store.run == "g · mean of 3 seeds"
    assert [m.store.row(i) for i in range(len(m.store))] == [
        {"step": 0, N_KEY: 3, "loss": 3.0},
        {"step": 1, N_KEY: 2, "loss": 2.0, "other": 1.0},  # b has no row at 1, c no loss: a's alone
        {"step": 2, N_KEY: 3, "loss": 6.5},  # a's NaN left out: (5 + 8) / 2
    ]
    assert not m.update([a, b, c])  # nothing new
    c.add(Parsed(steps=[3], rows=[{"loss": 9.0}]), now=math.nan)
    assert m.update([a, b, c]) and m.store.row(3) == {"step": 3, N_KEY: 3, "loss": (4.0 + 6.0 + 9.0) / 3}
    old = m.store
    a.reset()  # a seed's file rewritten: the table is made again (a new store; the old one stays as it was)
    a.add(Parsed(steps=[0, 1, 2, 3], rows=[{"loss": 0.0}] * 4), now=math.nan)
    assert m.update([a, b, c]) and m.store is not old and len(old) == 4
    assert m.store.row(0)["loss"] == (0.0 + 3.0 + 5.0) / 3
    assert m.update([a, b]) and m.store.run == "g · mean of 2 seeds"  # a seed less


@pytest.mark.anyio
async def test_a_seed_group_is_one_table_of_means_that_opens_into_its_seeds(tmp_path: Path) -> None:
    root = write_group(tmp_path, {"routeA_seed1": 40, "routeA_seed2": 40, "routeA_seed3": 30, "vanilla": 40})
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.pause()
        gid = GROUP_PREFIX + "routeA"
        assert {rid for rid, p in app.panels.items() if p.display} == {"vanilla/metrics.jsonl", gid}
        group = app.panels[gid]
        assert group.label == "routeA · mean of 3 seeds"
        store = group.grid.store
        assert store is not None and len(store) == 30  # up to the slowest seed's last step
        assert store.row(29) == {"step": 29, N_KEY: 3, "loss": (1 + 2 + 6) / 3 + 29}
        assert any(c.key == N_KEY for c in group.grid.cols) and any(c.key == "loss" for c in group.grid.cols)
        group.grid.focus()
        await pilot.press("o")  # open: the seeds' own tables, the table of means hidden
        await pilot.pause()
        shown = {rid for rid, p in app.panels.items() if p.display}
        assert shown == {"vanilla/metrics.jsonl", *(f"routeA_seed{k}/metrics.jsonl" for k in (1, 2, 3))}
        assert app.focused is app.panels["routeA_seed1/metrics.jsonl"].grid
        write_group(root, {"routeA_seed3": 45, "routeA_seed1": 45, "routeA_seed2": 45})  # live: the means follow
        await sync(pilot, follower)
        assert len(store) == 45 and store.row(44)["loss"] == 3 + 44
        await pilot.press("o")  # on a seed: fold back
        await pilot.pause()
        assert {rid for rid, p in app.panels.items() if p.display} == {"vanilla/metrics.jsonl", gid}
        assert app.focused is group.grid
        app.panels["vanilla/metrics.jsonl"].grid.focus()
        await pilot.press("o")  # a run alone: said, nothing changes
        await pilot.pause()
        assert {rid for rid, p in app.panels.items() if p.display} == {"vanilla/metrics.jsonl", gid}
        await pilot.press("w")  # the compare view groups the seeds, not the table of means
        await pilot.pause()
        live = app.screen.live  # type: ignore[attr-defined]
        assert live is not None and {g: len(m) for g, m in live.groups.items()} == {"routeA": 3, "vanilla": 1}
        await pilot.press("escape")
        await pilot.press("C")  # the chart draws the folded group's band from its seeds
        await pilot.pause()
        arms = app.screen.arms()  # type: ignore[attr-defined]
        assert sorted(a.run for a in arms) == sorted(["vanilla/metrics.jsonl",
                                                      *(f"routeA_seed{k}/metrics.jsonl" for k in (1, 2, 3))])


def test_seeds_at_the_same_steps_leave_out_nan_and_absent_cells() -> None:
    """The row-by-row path (every seed at the same steps): a NaN or an absent cell is left out of that row's mean,
    a row where no seed has a value has no cell."""
    a = _store("g_seed1", [0, 1, 2], [1.0, math.nan, None])
    b = _store("g_seed2", [0, 1, 2], [3.0, 4.0, None])
    m = SeedMeans("g", [a, b])
    assert m.update([a, b])
    assert [m.store.row(i).get("loss") for i in range(3)] == [2.0, 4.0, None]
    assert [m.store.row(i)[N_KEY] for i in range(3)] == [2, 2, 2]


def test_a_build_in_chunks_equals_one_in_a_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks cut at the first seed's steps: seeds with steps the first lacks, and the slowest seed, as above."""
    def seeds() -> list[RunStore]:
        return [_store("g_seed1", [0, 1, 2, 3, 5, 6, 7], [1.0, 2.0, math.nan, 4.0, 5.0, 6.0, 7.0]),
                _store("g_seed2", [0, 2, 3, 4, 5, 6], [3.0, 5.0, 6.0, 1.0, 2.0, None]),
                _store("g_seed3", [0, 1, 2, 4, 6, 8], [5.0, None, 8.0, 2.0, 3.0, 9.0])]
    whole = SeedMeans("g", s := seeds())
    assert whole.update(s)
    monkeypatch.setattr(seedmeans, "CHUNK", 2)
    chunked = SeedMeans("g", s := seeds())
    assert chunked.update(s)
    assert chunked.store.rows() == whole.store.rows() and [r["step"] for r in whole.store.rows()] == [0, 1, 2, 3, 4,
                                                                                                       5, 6]


def write_seeds(root: Path, rows: int, metrics: int, seeds: tuple[int, ...] = (1, 2, 3), salt: int = 0) -> Path:
    """Each seed's file written whole (a new file put in place of the old one: a rewrite)."""
    for s in seeds:
        p = root / f"routeA_seed{s}" / "metrics.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        rng = random.Random(s + salt)
        tmp = p.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps({"step": i, **{f"m{j:02d}": rng.gauss(j, 1) for j in range(metrics)}})
                               + "\n" for i in range(rows)))
        tmp.replace(p)
    return root


@pytest.mark.anyio
async def test_a_large_group_is_built_off_the_ui_thread_and_keys_work_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """3 seeds x 12k rows x 20 metrics (a build of ~0.3 s here, in 3 chunks): the build is held after its first
    chunk until the test lets it go, so a key pressed meanwhile must be handled while the build is under way; the
    seeds show meanwhile and the status line says what is computed; then the table of means replaces them and
    equals the one made at once. A seed rewritten: the table is made again the same way, the old one shown
    meanwhile."""
    assert 12_000 > seedgroups.INLINE_ROWS and 12_000 > 2 * seedmeans.CHUNK
    go, held = threading.Event(), threading.Event()
    real_add = seedmeans._add

    def gated(store: RunStore, seeds: Any, start: float, end: int) -> None:
        real_add(store, seeds, start, end)
        if threading.current_thread() is not threading.main_thread():
            held.set()
            assert go.wait(30)

    monkeypatch.setattr(seedmeans, "_add", gated)
    app, follower, _ = manual_app(write_seeds(tmp_path, 12_000, 20))
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        await until(pilot, held.is_set)  # (the build's thread reaches the end of its first chunk)
        gid = GROUP_PREFIX + "routeA"
        means = app.seedgroups.means[gid]
        assert held.is_set() and means.building is not None
        seeds = [f"routeA_seed{k}/metrics.jsonl" for k in (1, 2, 3)]
        assert {rid for rid, p in app.panels.items() if p.display} == set(seeds)  # the seeds meanwhile
        assert "computing the mean of 3 seeds of routeA..." in str(app.query_one(StatusBar).render())
        assert app.lockstep.on
        await pilot.press("k")  # handled while the build is under way
        assert not app.lockstep.on and means.building is not None
        go.set()
        await until(pilot, lambda: gid in app.panels)
        await pilot.pause()
        assert means.building is None
        assert {rid for rid, p in app.panels.items() if p.display} == {gid}
        assert "computing the mean" not in str(app.query_one(StatusBar).render())
        store = app.panels[gid].grid.store
        stores = [app.session.runs[rid].store for rid in seeds]
        at_once = SeedMeans("routeA", stores)
        assert at_once.update(stores)
        assert store is means.store and len(store) == 12_000 and store.rows() == at_once.store.rows()

        held.clear()
        go.clear()
        write_seeds(tmp_path, 11_000, 20, seeds=(2,), salt=7)  # seed 2 rewritten: shorter, other values
        await sync(pilot, follower)
        await until(pilot, held.is_set)
        assert held.is_set() and means.building is not None and means.building.fresh
        assert app.panels[gid].grid.store is store and app.panels[gid].display  # the old table meanwhile
        assert "computing the mean of 3 seeds of routeA..." in str(app.query_one(StatusBar).render())
        await pilot.press("k")
        assert app.lockstep.on and means.building is not None
        go.set()
        await until(pilot, lambda: app.panels[gid].grid.store is not store)
        await pilot.pause()
        stores = [app.session.runs[rid].store for rid in seeds]
        at_once = SeedMeans("routeA", stores)
        assert at_once.update(stores) and len(at_once.store) == 11_000
        assert app.panels[gid].grid.store is means.store and means.store.rows() == at_once.store.rows()


def test_infinities_of_both_signs_in_a_column_are_left_out_row_by_row() -> None:
    """An inf in one row and a -inf in another (a diverging run): each row's mean of its finite values."""
    a = _store("g_seed1", [0, 1, 2], [math.inf, 2.0, 1.0])
    b = _store("g_seed2", [0, 1, 2], [3.0, -math.inf, 5.0])
    m = SeedMeans("g", [a, b])
    assert m.update([a, b])
    assert [m.store.row(i)["loss"] for i in range(3)] == [3.0, 2.0, 3.0]


def test_a_failed_build_is_not_tried_again_until_a_seed_changes() -> None:
    a = _store("g_seed1", [0, 1], [1.0, 2.0])
    b = _store("g_seed2", [0, 1], [3.0, 4.0])
    m = SeedMeans("g", [a, b])
    build = m.plan([a, b])
    assert build is not None and m.plan([a, b]) is None  # (one build out at a time)
    build.error = RuntimeError("boom")
    m.finish(build)
    assert m.plan([a, b]) is None and len(m.store) == 0
    b.add(Parsed(steps=[2], rows=[{"loss": 5.0}]), now=math.nan)
    again = m.plan([a, b])
    assert again is not None and again.fresh is False
    again.run()
    m.finish(again)
    assert [m.store.row(i)["loss"] for i in range(len(m.store))] == [2.0, 3.0]


@pytest.mark.anyio
async def test_copies_of_one_training_are_hidden_and_no_seeds(hf_every_tracker: Path) -> None:
    app, follower, _ = manual_app(hf_every_tracker)
    told: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (told.append(str(message)), notify(message, **kw))[1]  # type: ignore[method-assign]
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.pause()
        shown = {rid for rid, p in app.panels.items() if p.display}
        assert shown == {GROUP_PREFIX + "hi", GROUP_PREFIX + "lo"}  # 16 files, 4 trainings, 2 arms of 2 seeds
        assert {app.panels[g].label for g in shown} == {"hi · mean of 2 seeds", "lo · mean of 2 seeds"}
        assert [t for t in told if "same rows" in t] == [
            "12 runs hidden, the same rows as another run (one training through several loggers; `steptable runs` says"
            " which)"]
        await pilot.press("w")  # the compare view: two seeds an arm, not eight
        await pilot.pause()
        live = app.screen.live  # type: ignore[attr-defined]
        assert live is not None and {g: len(m) for g, m in live.groups.items()} == {"hi": 2, "lo": 2}


@pytest.mark.anyio
async def test_a_group_whose_seeds_turn_out_to_be_copies_of_one_run_is_no_more(tmp_path: Path) -> None:
    """Two loggers of one training, ``a_seed0`` both: a group of two while three rows cannot tell (its table of
    means shown), one run once the copies are known (the table hidden, the kept run shown)."""
    losses = [3.0, 2.9, 3.1, 2.8, 3.05, 2.85]
    jsonl, csv_path = tmp_path / "a_seed0" / "metrics.jsonl", tmp_path / "a_seed0" / "tb" / "metrics.csv"
    csv_path.parent.mkdir(parents=True)

    def write(rows: range) -> None:
        with jsonl.open("a") as f:
            f.writelines(json.dumps({"step": s, "loss": losses[s]}) + "\n" for s in rows)
        with csv_path.open("a") as f:
            f.writelines(("step,loss\n" if rows.start == 0 else "") + "".join(f"{s},{losses[s]!r}\n" for s in rows))

    write(range(3))
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.pause()
        assert {rid for rid, p in app.panels.items() if p.display} == {GROUP_PREFIX + "a"}
        write(range(3, 6))
        await sync(pilot, follower)
        await pilot.pause()
        assert {rid for rid, p in app.panels.items() if p.display} == {"a_seed0/metrics.jsonl"}


@pytest.mark.anyio
async def test_a_copys_alert_is_not_counted_again(tmp_path: Path) -> None:
    """One training logged by Lightning's CSV and TensorBoard loggers, its loss NaN from step 25: the status bar
    counts one error, the events list names the run shown (not the hidden copy), as ``summary`` counts it."""
    pytest.importorskip("lightning")
    pytest.importorskip("tensorboard")
    from lightning.fabric.loggers import CSVLogger, TensorBoardLogger

    rng = random.Random(0)
    loggers = [CSVLogger(tmp_path, name="csv", version=0), TensorBoardLogger(tmp_path, name="tb", version=0)]
    for step in range(40):
        loss = 2.0 - step / 40 + rng.gauss(0, 0.1) if step < 25 else math.nan
        for lg in loggers:
            lg.log_metrics({"loss": loss}, step=step)
    for lg in loggers:
        lg.finalize("success")
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        # (each file's alert comes, the copy's too: the list keeps both, the counts and the events one)
        await until(pilot, lambda: len(app.session.alerts) == 2 and bool(app.seedgroups.copies.of))
        await pilot.pause()
        assert app.session.status_counts()["E"] == 1
        assert [(e.level, e.run) for e in app.session.events()] == [("E", "csv/version_0/metrics.csv")]


@pytest.mark.anyio
async def test_a_seed_groups_table_is_not_counted_as_an_idle_run(tmp_path: Path) -> None:
    """Two seeds quiet for hours: two idle runs in the status bar, not three (the table of their means is no run)."""
    for seed in (1, 2):
        p = tmp_path / f"ppo_seed{seed}" / "metrics.jsonl"
        p.parent.mkdir()
        p.write_text("".join(json.dumps({"step": s, "ts": T0 + 10 * s, "loss": 1.0 / (s + 1)}) + "\n"
                             for s in range(30)))
    app, follower, _ = manual_app(tmp_path, now=T0 + 6 * 3600)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.pause()
        assert {rid for rid, p in app.panels.items() if p.display} == {GROUP_PREFIX + "ppo"}
        app._on_tick()
        assert set(app.session.idle) >= {"ppo_seed1/metrics.jsonl", "ppo_seed2/metrics.jsonl"}
        assert app.session.status_counts()["idle"] == 2


@pytest.mark.anyio
@pytest.mark.parametrize("end", ["ended", "live"])
async def test_a_seed_groups_table_is_as_stalled_as_its_seeds(tmp_path: Path, end: str) -> None:
    """Seeds written by StepLogger one row a second, two minutes quiet: closed, neither they nor the table of their
    means is stalled; never closed, the table is stalled as its seeds are (its rows stop where theirs do), and its
    title names the seed that holds it back (it did not: e or o had to find it)."""
    import time

    from tests.app.sweephelpers import write_run

    for seed in (1, 2):
        write_run(tmp_path, f"grpo_seed{seed}", 1e-5, 30, end=end)
    app, follower, clock = manual_app(tmp_path, now=time.time() + 120)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.pause()
        gid = GROUP_PREFIX + "grpo"
        assert {rid for rid, p in app.panels.items() if p.display} == {gid}
        app._on_tick()
        seeds = {"grpo_seed1/metrics.jsonl", "grpo_seed2/metrics.jsonl"}
        group = app.panels[gid]
        if end == "ended":
            assert not seeds & set(app.session.stalls) and group.stalled is None and group.idle is None
            assert "S" not in {e.level for e in app.session.events()}
        else:
            assert set(app.session.stalls) >= seeds
            assert group.stalled == max(app.session.stalls[s] for s in seeds)
        title = group.title_text(group.grid.store, len(group.grid.store or ()), clock())
        assert ("STALLED" in title) == (end == "live"), title
        if end == "live":
            worst = max(seeds, key=lambda s: app.session.stalls[s])
            assert f"STALLED {fmt_age(group.stalled)} ({app.session.labels()[worst]})" in title, title


@pytest.mark.anyio
async def test_a_seeds_alert_marks_its_groups_table(tmp_path: Path) -> None:
    """Seed 2's loss goes NaN at step 20: the table of means shows the other seeds' finite mean there, and marks the
    cell with the seed's alert (it looked healthy while a seed diverged); the mark stays when new rows make the
    table again."""
    for seed in (1, 2, 3):
        p = tmp_path / f"grpo_seed{seed}" / "metrics.jsonl"
        p.parent.mkdir()
        p.write_text("".join(json.dumps({"step": s, "loss": None if seed == 2 and s >= 20 else 1.0 / (s + 1)}) + "\n"
                             for s in range(30)))
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        gid = GROUP_PREFIX + "grpo"
        await until(pilot, lambda: gid in app.panels and any(e.run == "grpo_seed2/metrics.jsonl" and e.step == 20
                                                             for e in app.session.log.alerts))
        await pilot.pause()
        grid = app.panels[gid].grid
        assert grid.store is not None and math.isfinite(grid.store.row(20)["loss"])
        assert grid.paint.alerts.get(20, {}).get("loss") == "E"
        with (tmp_path / "grpo_seed1" / "metrics.jsonl").open("w") as f:  # rewritten: the table is made again
            f.write("".join(json.dumps({"step": s, "loss": 2.0}) + "\n" for s in range(30)))
        await sync(pilot, follower)
        await until(pilot, lambda: app.panels[gid].grid.store is not None
                    and app.panels[gid].grid.store.row(0)["loss"] == (2.0 + 1.0 + 1.0) / 3)
        assert app.panels[gid].grid.paint.alerts.get(20, {}).get("loss") == "E"


@pytest.mark.anyio
async def test_a_groups_table_writes_its_numbers_as_its_seeds_tables_do(tmp_path: Path) -> None:
    """Two seed groups logged by StepLogger, one at a learning rate of 1e-6 and one at 2e-2: the table of means of
    the first showed 1e-6 as ``.000001`` or ``.0000`` (read as zero), each seed's table as ``1.00e-6``; the tables
    of means were laid out together, apart from their seeds. Now a group's table is laid out with its seeds (their
    StepLogger's columns), so it writes the same numbers the same way."""
    for lr in (1e-6, 2e-2):
        for seed in range(3):
            write_run(tmp_path, f"lr{lr:g}_s{seed}", lr, 30, end="ended", log_lr=True)
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        gids = [GROUP_PREFIX + "lr1e-06", GROUP_PREFIX + "lr0.02"]
        await until(pilot, lambda: all(g in app.panels and app.panels[g].grid.store is not None for g in gids))
        await pilot.pause()

        def lr_cells(rid: str) -> list[str]:
            grid = app.panels[rid].grid
            at = next(i for i, c in enumerate(grid.cols) if c.key == "learning_rate")
            return [grid.texts(i)[at].strip() for i in (0, 29)]

        assert lr_cells(gids[0]) == lr_cells("lr1e-06_s0/metrics.jsonl") == ["1.00e-6", ".52e-6"]
        assert lr_cells(gids[1]) == lr_cells("lr0.02_s0/metrics.jsonl")


@pytest.mark.anyio
async def test_o_keeps_the_step_the_table_was_at(tmp_path: Path) -> None:
    """Paused at a step on a group's table of means, o opened the seeds' tables at their newest rows (following):
    the step looked at (a NaN in the means) was lost just when the user asked which seed it was."""
    root = write_group(tmp_path, {"routeA_seed1": 200, "routeA_seed2": 200, "vanilla": 200})
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        gid = GROUP_PREFIX + "routeA"
        seeds = [app.panels[f"routeA_seed{k}/metrics.jsonl"].grid for k in (1, 2)]
        group = app.panels[gid].grid
        group.focus()
        await pilot.press("g", *"120", "enter")  # jump to step 120: every shown table paused there
        await pilot.pause()
        assert not group.follow and group.store is not None and group.store.step_at(group.top_index) == 120
        await pilot.press("o")
        await pilot.pause()
        await pilot.pause()
        for g in seeds:
            assert g.store is not None and not g.follow and g.store.step_at(g.top_index) == 120
        seeds[0].scroll_to_index(seeds[0].store.index_of_step(80))
        await pilot.press("o")  # folded back from a seed at step 80: the means at 80
        await pilot.pause()
        await pilot.pause()
        assert not group.follow and group.store.step_at(group.top_index) == 80
        await pilot.press("end")  # following the newest rows: the seeds follow theirs
        await pilot.pause()
        await pilot.press("o")
        await pilot.pause()
        await pilot.pause()
        assert all(g.follow for g in seeds)


@pytest.mark.anyio
async def test_a_seed_whose_file_is_gone_is_no_seed_of_its_group(tmp_path: Path) -> None:
    """A seed's directory renamed while watched (routeA_seed3 -> routeA_seed4): its table stays, rows as last read,
    and the renamed run is a new one; both counted as seeds, one training was twice in the means ("mean of 4
    seeds" of three trainings). A seed's directory deleted stayed in the means until its group changed, and the
    group's table, whose store is named after its first seed's file, said FILE GONE when that one was."""
    root = write_group(tmp_path, {"routeA_seed1": 30, "routeA_seed2": 30, "routeA_seed3": 30, "vanilla": 30})
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        gid = GROUP_PREFIX + "routeA"
        assert app.panels[gid].label == "routeA · mean of 3 seeds"
        (root / "routeA_seed3").rename(root / "routeA_seed4")
        await sync(pilot, follower)
        app._on_tick()
        await pilot.pause()
        assert app.seedgroups.members[gid] == [f"routeA_seed{k}/metrics.jsonl" for k in (1, 2, 4)]
        assert app.panels[gid].label == "routeA · mean of 3 seeds"
        gone = app.panels["routeA_seed3/metrics.jsonl"]
        assert gone.display and gone.gone  # (its rows as last read, shown on their own)
        import shutil

        shutil.rmtree(root / "routeA_seed1")  # no row comes after it: the tick finds it gone
        app._on_tick()
        await pilot.pause()
        assert app.seedgroups.members[gid] == [f"routeA_seed{k}/metrics.jsonl" for k in (2, 4)]
        assert app.panels[gid].label == "routeA · mean of 2 seeds" and not app.panels[gid].gone


@pytest.mark.anyio
async def test_the_number_keys_count_the_tables_shown_not_the_seeds_folded_into_a_group(tmp_path: Path) -> None:
    """1-9 hid or showed the k-th run read, folded seeds counted: with routeA's two seeds folded, 1 showed
    routeA_seed1 beside its group's table (the screen's first table, vanilla, stayed). 0 (every arm shown) showed
    every folded seed beside its group's table too, until rows came."""
    root = write_group(tmp_path, {"routeA_seed1": 30, "routeA_seed2": 30, "vanilla": 30})
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        gid = GROUP_PREFIX + "routeA"

        def shown() -> list[str]:
            return [rid for rid, p in app.panels.items() if p.display]

        assert sorted(shown()) == sorted(["vanilla/metrics.jsonl", gid])
        await pilot.press("1")
        await pilot.pause()
        assert shown() == [gid]  # vanilla, the first of the tables shown, hidden
        await pilot.press("1")
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        assert shown() == ["vanilla/metrics.jsonl"]  # the group's table, the second
        await pilot.press("0")
        await pilot.pause()
        assert sorted(shown()) == sorted(["vanilla/metrics.jsonl", gid])
