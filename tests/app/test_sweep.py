"""The sweep's index in the watch app (steptable.app.sweep): the runs found, their digests read by the index's own
thread, one IndexChanged posted until the UI has taken it, the status line, the metric columns a list starts with;
the runs opened from the list and put away by a later pick."""

from __future__ import annotations

import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from steptable.app.app import StepTableApp
from steptable.app.feed import Feed
from steptable.app.runrows import ListState
from steptable.app.screens.compare import CompareScreen
from steptable.app.screens.runs import RunsScreen
from steptable.app.seedgroups import GROUP_PREFIX
from steptable.app.sweep import IndexChanged, SweepIndex, default_metrics
from tests.app.helpers import screen_text, until
from tests.app.sweephelpers import index_running, read_all, write_sweep, written_at


def test_the_index_thread_reads_every_run(tmp_path: Path) -> None:
    write_sweep(tmp_path, runs=5)
    index = SweepIndex([str(tmp_path)], period=0.05)
    assert index.discover() == 5
    assert index.line(written_at(tmp_path)).endswith("(reading 5 more)")  # nothing read yet: known by their files
    posted: list[Any] = []
    read_all(index, posted.append)
    assert posted and all(isinstance(m, IndexChanged) for m in posted)
    assert len(posted) <= 2  # the first post, then one more at most: the UI never took the first
    assert index.line(written_at(tmp_path)) == "5 runs: 3 live, 1 ended, 1 crashed; 1 with errors"
    assert default_metrics(index.entries()) == ["reward", "loss"]  # the ranking keys the runs log
    assert default_metrics(index.entries(), most=1) == ["reward"]


def test_the_stat_pass_is_spaced_by_what_it_costs(tmp_path: Path) -> None:
    """A pass over every run that takes long (thousands of runs) comes at most once per SHARE times its length:
    the index does not hold the GIL against the UI for more than 1/SHARE of the time."""
    import steptable.app.sweep as sweep_mod

    write_sweep(tmp_path, runs=3)
    index = SweepIndex([str(tmp_path)], period=0.01)
    index.discover()
    passes: list[float] = []
    real = index.index.refresh

    def slow(budget: float | None = None, only: Any = None) -> set[str]:
        if only is None:
            passes.append(time.monotonic())
            time.sleep(0.02)  # (as 2,000 stats take)
        return real(budget, only)

    index.index.refresh = slow  # type: ignore[method-assign]
    with index_running(index, lambda m: None):
        time.sleep(1.0)
    gaps = [b - a for a, b in pairwise(passes)]
    assert passes and all(g >= sweep_mod.SHARE * 0.02 for g in gaps)  # not every 0.01 s
    assert len(passes) <= 3


def test_the_ui_takes_the_index_before_it_reads_it(tmp_path: Path) -> None:
    """The index posts again for a run it reads while the list is being made (taken first, then read): a change
    then is never lost until some other change comes."""
    from steptable.app.sweep import Sweep

    write_sweep(tmp_path, runs=3)
    index = SweepIndex([str(tmp_path)])
    index.discover()
    index._posted.set()  # an IndexChanged on its way to the UI
    seen: list[bool] = []

    class Screen:
        is_attached = True

        state = ListState(metrics=["loss"])

        def refresh_list(self) -> None:
            seen.append(index._posted.is_set())  # a change now would post again

        def call_after_refresh(self, callback: Any) -> None:
            callback()

    class Host:
        feed = type("F", (), {"sweep": index})()

    sweep = Sweep(Host())  # type: ignore[arg-type]
    sweep.screen = Screen()
    sweep.changed()
    assert seen == [False]


def test_a_change_after_a_post_the_ui_took_at_once_posts_again(tmp_path: Path) -> None:
    """The UI may take a post before ``post`` returns in the index's thread (it had the GIL meanwhile): a run poked
    after that still brings a post of its own, so it reaches the list."""
    from steptable.ingest.files.discover import discover
    from tests.app.sweephelpers import write_run

    write_sweep(tmp_path, runs=3)
    index = SweepIndex([str(tmp_path)])
    index.discover()
    posts: list[Any] = []

    def take_at_once(message: Any) -> None:
        posts.append(message)
        index.taken()  # (what the UI's handler does first, here before the index's thread goes on)

    with index_running(index, take_at_once):
        deadline = time.monotonic() + 10
        while (index.index.pending() or not posts) and time.monotonic() < deadline:
            time.sleep(0.01)
        before = len(posts)
        new = write_run(tmp_path, "zz_new", 1e-5, steps=3, end="ended")
        for cand in discover([tmp_path]):
            if cand.path.parent == new:
                index.poke(cand)
        while len(posts) == before and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(posts) > before
    assert any(e.run_id.startswith("zz_new/") and e.digest is not None for e in index.entries())


def test_a_failure_of_the_index_thread_is_posted(tmp_path: Path) -> None:
    """A bug of ours that ends the index's thread is said on screen, not left as a list that stopped changing."""
    from steptable.app.messages import FeedProblem

    write_sweep(tmp_path, runs=3)
    index = SweepIndex([str(tmp_path)])
    index.discover()

    def broken(budget: float | None = None, only: Any = None) -> set[str]:
        raise KeyError("run")

    index.index.refresh = broken  # type: ignore[method-assign]
    posts: list[Any] = []
    with index_running(index, posts.append):
        deadline = time.monotonic() + 10
        while not posts[1:] and time.monotonic() < deadline:  # (its first post, then the problem's)
            time.sleep(0.01)
    problems = [m for m in posts if isinstance(m, FeedProblem)]
    assert len(problems) == 1 and "KeyError" in problems[0].text


def test_copies_of_one_training_are_left_out_of_the_list(hf_every_tracker: Path) -> None:
    """Four trainings reported to W&B, trackio and TensorBoard with checkpoints: 16 files, 4 runs in the list."""
    index = SweepIndex([str(hf_every_tracker)], period=0.05)
    index.discover()
    read_all(index, lambda m: None)
    assert len(index.index.runs) == 16  # (trackio's database: a run per run name once read)
    assert sorted((e.digest.kind, e.digest.arm) for e in index.entries() if e.digest is not None) == [
        ("wandb", name) for name in ("hi_seed0", "hi_seed1", "lo_seed0", "lo_seed1")]
    assert index.line(written_at(hf_every_tracker)).endswith(" · 12 copies of these runs by other loggers left out")


@pytest.mark.anyio
async def test_runs_put_away_by_a_later_pick_count_in_no_seed_group_and_no_compare(tmp_path: Path) -> None:
    """Three seeds of lr 1e-6 opened from the run list show as one table of means; the list then opened two of them:
    the third's table hid, but it still counted in the group's means ("mean of 3 seeds") and in the tables' w
    (compare), and once two runs of another learning rate were opened the first group's table still showed. Now
    the runs opened before and not picked now (put away, as their tables are hidden) count in no group's means
    and no compare view: the group is the mean of the two seeds picked, then hidden with them."""
    names = write_sweep(tmp_path, runs=12)
    ids = {n: f"{n}/metrics.jsonl" for n in names}
    app = StepTableApp(Feed([str(tmp_path)]))
    gid = GROUP_PREFIX + "lr1e-06"
    async with app.run_test(size=(160, 40)) as pilot:
        runs = app.session.runs

        async def pick(*picked: str) -> None:
            await until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.feed.sweep is not None
                        and not app.feed.sweep.index.pending() and len(app.screen.listed) == len(names))
            scr = app.screen
            assert isinstance(scr, RunsScreen)
            scr.state.selected = {ids[n] for n in picked}
            await pilot.press("enter")
            await until(pilot, lambda: all(ids[n] in runs and len(runs[ids[n]].store) == 30 for n in picked)
                        and not isinstance(app.screen, RunsScreen))
            await pilot.pause()

        def shown() -> set[str]:
            return {rid for rid, p in app.panels.items() if p.display}

        await pick("lr1e-06_s0", "lr1e-06_s3", "lr1e-06_s6")
        await until(pilot, lambda: gid in app.panels)
        assert app.panels[gid].label == "lr1e-06 · mean of 3 seeds"
        await pilot.press("r")
        await pick("lr1e-06_s0", "lr1e-06_s3")
        assert app.seedgroups.members[gid] == [ids["lr1e-06_s0"], ids["lr1e-06_s3"]]
        assert shown() == {gid} and app.panels[gid].label == "lr1e-06 · mean of 2 seeds"
        await pilot.press("w")  # the tables' compare: the two seeds picked
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        app.screen.update_table()
        live = app.screen.live
        assert live is not None and {m.run.run for ms in live.groups.values() for m in ms} == {
            runs[ids["lr1e-06_s0"]].store.run, runs[ids["lr1e-06_s3"]].store.run}
        await pilot.press("escape", "r")
        await pick("lr3e-06_s4", "lr3e-06_s7")  # the first group's seeds all put away: its table too
        assert shown() == {GROUP_PREFIX + "lr3e-06"}
        await pilot.press("0")  # every arm shown again: the runs put away count again
        await pilot.pause()
        assert app.seedgroups.members[gid] == [ids[n] for n in ("lr1e-06_s0", "lr1e-06_s3", "lr1e-06_s6")]
        await pilot.press("r")
        await pick("lr1e-06_s0", "lr1e-06_s3")
        assert ids["lr1e-06_s6"] in app.session.put_away
        keyed = [r for r in runs if r not in app.seedgroups.folded]  # (the tables the keys count)
        await pilot.press(str(keyed.index(ids["lr1e-06_s6"]) + 1))  # its own key shows it: it counts again
        await pilot.pause()
        assert ids["lr1e-06_s6"] not in app.session.put_away
        assert app.seedgroups.members[gid] == [ids[n] for n in ("lr1e-06_s0", "lr1e-06_s3", "lr1e-06_s6")]


@pytest.mark.anyio
async def test_compare_from_the_run_list_says_how_many_runs_are_read_until_two_arms_are(tmp_path: Path) -> None:
    """w on runs picked in the list opens the compare view while their histories are read (a 300-run sweep: 25 s);
    it said "one arm only: nothing to compare" all that while."""
    names = write_sweep(tmp_path, runs=12)
    app = StepTableApp(Feed([str(tmp_path)]))
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.feed.sweep is not None
                    and not app.feed.sweep.index.pending() and len(app.screen.listed) == len(names))
        app.feed.open = lambda *a, **k: None  # type: ignore[method-assign]  # (the histories are never read here)
        app.sweep.compare_runs([f"{n}/metrics.jsonl" for n in names[:4]])
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        await pilot.pause()
        said = " ".join(line.strip("│ ") for line in screen_text(app).splitlines())
        assert "0 of 4 runs with rows so far" in said and "one arm only" not in said


@pytest.mark.anyio
async def test_runs_opened_from_the_list_are_said_to_be_read_until_their_tables_come(tmp_path: Path) -> None:
    """Enter on runs picked in the list went to the tables' screen, which said "No runs under DIR yet. steptable
    shows JSONL metrics files..." and "0 open" while their histories were read (25 s for 300 runs of 2,000 steps)."""
    names = write_sweep(tmp_path, runs=12)
    app = StepTableApp(Feed([str(tmp_path)]))
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.feed.sweep is not None
                    and not app.feed.sweep.index.pending() and len(app.screen.listed) == len(names))
        follower = app.feed.follower
        follower.scan = lambda *a, **k: set()  # type: ignore[method-assign]  # (never read here)
        follower.on_events = lambda *a, **k: set()  # type: ignore[attr-defined]
        app.screen.state.selected = {f"{n}/metrics.jsonl" for n in names[:4]}
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, RunsScreen))
        app._refresh_status()
        await pilot.pause()
        said = screen_text(app)
        assert "No runs under" not in said and "Reading the 4 runs opened from the run list" in said
        assert "0 open, 4 being read" in said
