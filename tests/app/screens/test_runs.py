"""The run list of a sweep (steptable.app.screens.runs): the home screen when a path holds more runs than fit as
tables; filter, sort, select-to-open and compare, pins, the state column, on a sweep written by StepLogger."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from textual.app import App

from steptable.app.app import StepTableApp
from steptable.app.feed import Feed
from steptable.app.screens.compare import CompareScreen
from steptable.app.screens.runs import RunsScreen
from steptable.app.sweep import SweepIndex, default_metrics
from tests.app.sweephelpers import read_all, write_sweep

SIZE = (160, 40)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _list(app: StepTableApp, pilot, runs: int) -> RunsScreen:  # type: ignore[no-untyped-def]
    """The run list once every run's tail is read."""
    for _ in range(400):
        await pilot.pause(0.02)
        scr = app.screen
        if isinstance(scr, RunsScreen) and scr.is_mounted and app.feed.sweep is not None \
                and app.feed.sweep.index.pending() == 0 and len(scr.listed) == runs:
            scr.refresh_list()
            return scr
    raise AssertionError(f"no complete run list: {app.screen!r}")


async def _following(follower, pilot) -> str:  # type: ignore[no-untyped-def]
    """The follower's mode once its first scan is done (the list can fill from the index before that)."""
    for _ in range(500):
        if follower.mode != "idle":
            break
        await pilot.pause(0.02)
    return str(follower.mode)


def _names(scr: RunsScreen) -> list[str]:
    return [e.run_id.split("/")[0] for e in scr.listed]


@pytest.fixture
def sweep(tmp_path: Path) -> tuple[Path, list[str]]:
    return tmp_path, write_sweep(tmp_path, runs=12)


async def test_list_is_home_and_reads_no_history(sweep: tuple[Path, list[str]]) -> None:
    root, names = sweep
    app = StepTableApp(Feed([str(root)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, len(names))
        assert sorted(_names(scr)) == sorted(names)
        assert app.feed.follower.stores == {}  # nothing followed until a run is opened
        assert app.panels == {}
        line = scr.query_one("#sweep").render()
        assert "12 runs: 10 live, 1 ended, 1 crashed; 1 with errors" in str(line)


async def test_state_column(sweep: tuple[Path, list[str]]) -> None:
    root, names = sweep
    app = StepTableApp(Feed([str(root)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, len(names))
        lines = {e.run_id.split("/")[0]: scr.runlist.render_line(1 + i).text for i, e in enumerate(scr.listed)}
        assert " ended " in lines[names[0]]
        assert " crashed " in lines[names[1]] and "1E" in lines[names[1]]
        assert " live " in lines[names[5]]


async def test_filter_by_glob_regex_and_config(sweep: tuple[Path, list[str]]) -> None:
    root, names = sweep
    app = StepTableApp(Feed([str(root)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, len(names))
        await pilot.press("slash", *"*_s1?", "enter")
        assert sorted(_names(scr)) == ["lr1e-05_s11", "lr3e-06_s10"]
        scr.state.pattern = "re:_s[23]$|_s[23]/"
        scr.refresh_list()
        assert sorted(_names(scr)) == ["lr1e-05_s2", "lr1e-06_s3"]
        scr.state.pattern = "lr=1e-5"  # the config's 1e-05, as a number
        scr.refresh_list()
        assert sorted(_names(scr)) == sorted(n for n in names if n.startswith("lr1e-05"))
        scr.state.pattern = "beta1=0.9 s1"  # a nested config key by its last part, and a name
        scr.refresh_list()
        assert sorted(_names(scr)) == sorted(["lr3e-06_s1", "lr3e-06_s10", "lr1e-05_s11"])
        scr.state.pattern = "re:("  # a bad expression says so and keeps the list
        scr.refresh_list()
        assert "bad regular expression" in str(scr.query_one("#list-note").render())


async def test_sort_by_metric_and_state(sweep: tuple[Path, list[str]]) -> None:
    root, names = sweep
    app = StepTableApp(Feed([str(root)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, len(names))
        assert "reward" in scr.state.metrics
        scr.sort_by("reward")
        assert _names(scr) == names  # reward grows with the run's index
        scr.sort_by("reward")  # again: the other way
        assert _names(scr) == names[::-1]
        scr.sort_by("state")
        assert _names(scr)[0] == names[1]  # crashed first
        assert _names(scr)[-1] == names[0]  # ended last


async def test_pin_keeps_a_run_on_top(sweep: tuple[Path, list[str]]) -> None:
    root, names = sweep
    app = StepTableApp(Feed([str(root)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, len(names))
        scr.sort_by("reward")
        scr.runlist.move_to(5)
        await pilot.press("p")
        assert _names(scr)[0] == names[5]
        scr.sort_by("reward")
        assert _names(scr)[0] == names[5] and _names(scr)[1] == names[-1]


async def test_select_open_and_compare(sweep: tuple[Path, list[str]]) -> None:
    root, names = sweep
    app = StepTableApp(Feed([str(root)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, len(names))
        scr.sort_by("reward")
        await pilot.press("home", "space", "space")  # the two worst by reward
        assert scr.state.selected == {f"{names[0]}/metrics.jsonl", f"{names[1]}/metrics.jsonl"}
        await pilot.press("enter")
        for _ in range(200):
            await pilot.pause(0.02)
            if len(app.panels) == 2 and all(len(r.store) == 30 for r in app.session.runs.values()):
                break
        assert not isinstance(app.screen, RunsScreen)
        assert sorted(app.panels) == sorted(scr.state.selected)
        assert set(app.feed.follower.stores) == scr.state.selected  # only the opened runs are read whole
        await pilot.press("w")
        await pilot.pause(0.3)
        assert isinstance(app.screen, CompareScreen)
        await pilot.press("escape")
        await pilot.press("r")  # back to the list: open another run, the first two's tables hide
        await pilot.pause(0.1)
        assert app.screen is scr
        scr.state.selected.clear()
        scr.runlist.move_to(len(names) - 1)
        await pilot.press("enter")
        for _ in range(200):
            await pilot.pause(0.02)
            if len(app.panels) == 3:
                break
        assert app.session.visible() == [f"{names[-1]}/metrics.jsonl"]


async def test_w_compares_the_selected_runs_from_the_list(sweep: tuple[Path, list[str]]) -> None:
    """The run list had no w: comparing runs of a sweep took Enter, then w over the tables. Now w opens the
    selected runs and the compare view over them (which fills in as their histories are read); fewer than two
    selected is told."""
    root, names = sweep
    app = StepTableApp(Feed([str(root)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, len(names))
        await pilot.press("w")
        await pilot.pause(0.1)
        assert app.screen is scr  # nothing selected: said, nothing opened
        scr.sort_by("reward")
        await pilot.press("home", "space", "space", "space")
        await pilot.press("w")
        for _ in range(300):
            await pilot.pause(0.02)
            if isinstance(app.screen, CompareScreen) and all(len(r.store) == 30 for r in app.session.runs.values()) \
                    and len(app.session.runs) == 3:
                break
        assert isinstance(app.screen, CompareScreen)
        screen = app.screen
        screen.update_table()
        await pilot.pause(0.1)
        live = screen.live
        assert live is not None and len(live.groups) == 3
        assert sorted(app.panels) == sorted(scr.state.selected)
        first = set(scr.state.selected)
        await pilot.press("escape", "r")  # back to the list: w on two others compares those two only
        await pilot.pause(0.1)
        assert app.screen is scr
        scr.state.selected.clear()
        await pilot.press("end", "space", "up", "space", "w")
        for _ in range(300):
            await pilot.pause(0.02)
            if isinstance(app.screen, CompareScreen) and len(app.session.runs) == 5 \
                    and all(len(r.store) == 30 for r in app.session.runs.values()):
                break
        app.screen.update_table()
        await pilot.pause(0.1)
        compared = {m.run.run for ms in app.screen.live.groups.values() for m in ms}
        assert compared == scr.state.selected and not compared & first  # (the runs opened before: hidden)


async def test_few_runs_show_as_tables(tmp_path: Path) -> None:
    write_sweep(tmp_path, runs=3)
    app = StepTableApp(Feed([str(tmp_path)]))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            await pilot.pause(0.02)
            if len(app.panels) == 3:
                break
        assert len(app.panels) == 3
        assert not isinstance(app.screen, RunsScreen)
        assert app.feed.sweep is None


async def test_a_new_run_shows_as_the_follower_is_notified(sweep: tuple[Path, list[str]]) -> None:
    """The index reads a run a file event names at once: with its own stat pass and every discovery a minute
    away, a run written during the watch is in the list within the 10 s waited here."""
    import time

    from tests.app.sweephelpers import write_run

    root, names = sweep
    app = StepTableApp(Feed([str(root)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, len(names))
        follower, index = app.feed.follower, app.feed.sweep
        if await _following(follower, pilot) != "notify":
            pytest.skip("no file notification on this filesystem")
        index.period = index.index.recheck = follower.recheck = 60.0
        await pilot.pause(1.2)  # (the passes planned before are done: the next is a minute away)
        t0 = time.monotonic()
        write_run(root, "zz_new", 1e-5, steps=5, end="ended")
        while "zz_new" not in _names(scr) and time.monotonic() - t0 < 10:
            await pilot.pause(0.02)
        assert "zz_new" in _names(scr)


async def test_a_new_run_shows_through_the_followers_discovery_when_polling(
        sweep: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Without file events the follower's own discovery passes name every run to the index, which walks the tree
    only once (a second walk of thousands of runs would compete with the UI): a run written during the watch still
    comes to the list."""
    import time

    from steptable.ingest.files import follow

    # (re-checks every 0.2 s below whatever a discovery pass took on a loaded machine: not spaced out to 20x it)
    monkeypatch.setattr(follow, "RECHECK_SHARE", 0)
    from tests.app.sweephelpers import write_run

    root, names = sweep
    app = StepTableApp(Feed([str(root)], poll=0.05))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, len(names))
        follower, index = app.feed.follower, app.feed.sweep
        assert await _following(follower, pilot) == "poll"
        walks: list[float] = []
        real = index.index.discover
        index.index.discover = lambda: walks.append(time.monotonic()) or real()  # type: ignore[method-assign]
        follower.recheck = 0.2
        t0 = time.monotonic()
        write_run(root, "zz_new", 1e-5, steps=5, end="ended")
        while "zz_new" not in _names(scr) and time.monotonic() - t0 < 20:
            await pilot.pause(0.02)
        assert "zz_new" in _names(scr)
        await pilot.pause(2.5)  # (past the 2 s after which the index used to walk the tree again)
        assert walks == []  # the index's own discovery never ran again


class _Host:
    """A list's host over a SweepIndex whose runs were all read before any screen existed (no change to post)."""

    def __init__(self, index: SweepIndex) -> None:
        self.index = index

    def entries(self) -> list[Any]:
        return self.index.entries()

    def sweep_line(self, now: float, judge: Any) -> str:
        return self.index.line(now, judge)

    def open_runs(self, run_ids: Any) -> None:
        raise AssertionError("nothing is opened here")

    def can_close_list(self) -> bool:
        return False

    def metric_defaults(self) -> list[str]:
        return default_metrics(self.entries())


def _read_index(root: Path) -> SweepIndex:
    index = SweepIndex([str(root)], period=0.05)
    index.discover()
    read_all(index, lambda message: None)
    return index


async def test_metric_columns_start_as_the_defaults_when_every_run_was_read_first(tmp_path: Path) -> None:
    write_sweep(tmp_path, runs=4)
    screen = RunsScreen(_Host(_read_index(tmp_path)))
    app = App[None]()
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(screen)
        await pilot.pause()
        assert screen.state.metrics == ["reward", "loss"]  # the ranking keys the runs log, with no change posted
        screen.set_metrics("nothing*")  # the user's choice stands, even one that matches no key
        screen.refresh_list()
        assert screen.state.metrics == []


HOSTILE_KEY = "acc\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e\x9b31m"


async def test_a_hostile_metric_key_is_inert_in_the_list_header_and_the_metrics_prompt(tmp_path: Path) -> None:
    """A sweep whose only metric is a key holding a clipboard write, a screen clear, a bidi override and an 8-bit
    CSI: the list's header names it (the default metric column) made inert, so does the metrics prompt's
    prefilled answer, and that answer taken as it is keeps the column."""
    from steptable.logger.steplogger import StepLogger
    from tests.app.helpers import screen_text

    for i in range(10):
        with StepLogger(run_dir=tmp_path / f"run{i}", console=False, alerts=False) as sl:
            for s in range(5):
                sl.log({"step": s, HOSTILE_KEY: i + s / 10})
    app = StepTableApp(Feed([str(tmp_path)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, 10)
        shown = list(scr.state.metrics)
        assert HOSTILE_KEY in shown
        await pilot.pause()
        text = screen_text(app)
        assert "acc31m" in text and not any(bad in text for bad in ("\x1b", "\x07", "\u202e", "\x9b"))
        await pilot.press("k")
        await pilot.pause()
        text = screen_text(app)
        assert "acc31m" in text and not any(bad in text for bad in ("\x1b", "\x07", "\u202e", "\x9b"))
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is scr and scr.state.metrics == shown


async def test_a_few_trainings_each_written_by_several_loggers_open_as_tables(hf_every_tracker: Path) -> None:
    """16 files (4 trainings to W&B, trackio, TensorBoard, with checkpoints) start the list; once read they are 4
    runs, fewer than a list is for: the 4 open as tables (seed groups of 2), the list a key away."""
    app = StepTableApp(Feed([str(hf_every_tracker)]))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(500):
            await pilot.pause(0.02)
            shown = {rid for rid, p in app.panels.items() if p.display}
            if len(shown) == 2:
                break
        assert not isinstance(app.screen, RunsScreen)
        assert {app.panels[r].label for r in shown} == {"hi · mean of 2 seeds", "lo · mean of 2 seeds"}
        assert sorted(app.sweep.opened) == sorted(e.run_id for e in app.feed.sweep.entries())
        assert len(app.sweep.opened) == 4 and all(r.startswith("wandb/") for r in app.sweep.opened)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no ptys here")
def test_the_list_shown_again_is_drawn_in_a_real_terminal(tmp_path: Path) -> None:
    """In a pty: open a run from the list, then ``r``: the list is drawn again (it was pushed back undrawn, the
    table left on the terminal and the keys going to a list not shown, until a resize)."""
    import time

    from tests.app.helpers import PtyWatch

    write_sweep(tmp_path, runs=12)
    w = PtyWatch(tmp_path, tmp_path)

    def drawn(text: bytes, since: int, within: float) -> bool:
        deadline = time.monotonic() + within
        while text not in w.out[since:] and time.monotonic() < deadline:
            w.read(0.1)
        return text in w.out[since:]

    try:
        assert drawn(b"12 of 12 shown", 0, 30), w.out[-2000:]  # (the list's own line: the status bar names the runs)
        os.write(w.master, b" \r")  # select the run under the cursor, open it
        mark = len(w.out)
        assert drawn(b" rows ", mark, 30), w.out[-2000:]  # its table's title
        time.sleep(0.5)
        w.read(0.2)
        mark = len(w.out)
        os.write(w.master, b"r")
        assert drawn(b"12 of 12 shown", mark, 10), w.out[mark:][-2000:]
    finally:
        w.close()


async def test_help_on_the_run_list_lists_its_keys(sweep: tuple[Path, list[str]]) -> None:
    """? on a sweep's first screen did nothing (the app's help is the tables'): it lists the run list's keys."""
    from steptable.app.screens.help import HelpScreen

    root, names = sweep
    app = StepTableApp(Feed([str(root)]))
    async with app.run_test(size=SIZE) as pilot:
        await _list(app, pilot, len(names))
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.text()
        assert "Filter: runs by name" in text and "Select shown" in text and "Chart" not in text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)


async def test_ages_and_states_move_on_where_no_run_changes(sweep: tuple[Path, list[str]],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """No file changed, time passed: the list showed the ages and states of its last change (a sweep whose runs all
    ended read "3.35m" at 6.2 minutes, and a run that stopped writing stayed live)."""
    root, names = sweep
    monkeypatch.setattr(RunsScreen, "AGES_S", 0.05, raising=False)
    now = [time.time()]
    app = StepTableApp(Feed([str(root)]), clock=lambda: now[0])
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, len(names))

        def line(name: str) -> str:
            i = next(i for i, e in enumerate(scr.listed) if e.run_id.startswith(name + "/"))
            return str(scr.runlist.render_line(1 + i).text)

        assert " live " in line(names[5])
        now[0] += 3600
        await pilot.pause(0.3)
        assert " live " not in line(names[5]) and ("60m" in line(names[0]) or "1h" in line(names[0])), line(names[0])


async def test_the_run_name_stays_when_the_list_scrolls_sideways(sweep: tuple[Path, list[str]]) -> None:
    """In a narrow terminal the metrics are off to the right; scrolled to them, the name column scrolled away too
    and the values named no run. The mark and the name stay; the last metric comes into view beside them."""
    root, names = sweep
    app = StepTableApp(Feed([str(root)]))
    async with app.run_test(size=(50, 24)) as pilot:
        scr = await _list(app, pilot, len(names))
        rl = scr.runlist
        assert rl.virtual_size.width > 50  # (the metrics do not fit)
        rl.scroll_to(x=rl.virtual_size.width, animate=False)
        await pilot.pause()
        assert rl.scroll_offset.x > 0
        for i, e in enumerate(scr.listed[:3]):
            text = str(rl.render_line(1 + i).text)
            assert text.lstrip(" *+").startswith(e.run_id.split("/")[0]), text
            assert text.rstrip().endswith(rl.line(i)[-1][0].strip()), text
        assert str(rl.render_line(0).text).rstrip().endswith(rl.header[-1].strip())


RESUMED = "lr3/version_0/metrics.csv"


def _resumed_arms(root: Path) -> None:
    """Ten arms each resumed from step 20 in ``version_1`` (Lightning's CSVLogger), steps 0-59."""
    from tests.library_logs import write_lightning_rows

    for a in range(10):
        write_lightning_rows(root / f"lr{a}" / "version_0", [(s, {"loss": 1 / (s + 1)}) for s in range(30)])
        write_lightning_rows(root / f"lr{a}" / "version_1", [(s, {"loss": 2 / (s + 1)}) for s in range(20, 60)])


async def _open_resumed(app: StepTableApp, pilot, scr: RunsScreen) -> Any:  # type: ignore[no-untyped-def]
    """Open ``RESUMED`` from the list; its run once its 60 rows are read."""
    scr.runlist.move_to(next(i for i, e in enumerate(scr.listed) if e.run_id == RESUMED))
    await pilot.press("enter")
    for _ in range(300):
        await pilot.pause(0.02)
        if RESUMED in app.session.runs and len(app.session.runs[RESUMED].store) == 60:
            break
    return app.session.runs[RESUMED].store


async def test_a_fit_resumed_in_a_new_version_is_one_entry_that_opens_as_one_run(tmp_path: Path) -> None:
    """Ten arms each resumed in ``version_1``: ten entries, each with its training's newest rows (its last
    piece's); opened, one table of both pieces (steptable.ingest.resumes)."""
    _resumed_arms(tmp_path)
    app = StepTableApp(Feed([str(tmp_path)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, 10)
        assert sorted(e.run_id for e in scr.listed) == sorted(f"lr{a}/version_0/metrics.csv" for a in range(10))
        assert {e.digest.last_step for e in scr.listed} == {59}
        store = await _open_resumed(app, pilot, scr)
        assert list(app.panels) == [RESUMED] and store.resumes == [20] and str(tmp_path) in str(store.path)


async def test_an_opened_training_resumed_again_grows_in_its_table(tmp_path: Path) -> None:
    """A training opened from the list, then requeued again (``version_2`` resumes from step 50) while shown: the
    index finds the new piece and the table reads it too."""
    from tests.library_logs import write_lightning_rows

    _resumed_arms(tmp_path)
    app = StepTableApp(Feed([str(tmp_path)]))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _list(app, pilot, 10)
        assert (await _open_resumed(app, pilot, scr)).resumes == [20]
        write_lightning_rows(tmp_path / "lr3" / "version_2", [(s, {"loss": 3 / (s + 1)}) for s in range(50, 80)])
        for _ in range(600):
            await pilot.pause(0.05)
            if len(app.session.runs[RESUMED].store) == 80:
                break
        store = app.session.runs[RESUMED].store
        assert len(store) == 80 and store.resumes == [20, 50] and list(app.panels) == [RESUMED]


async def test_a_few_fits_each_resumed_in_a_new_version_open_as_tables(tmp_path: Path) -> None:
    """Five arms resumed in ``version_1``: ten files start the list; once read they are five runs, fewer than a list
    is for: they open as tables, each its two pieces."""
    from tests.library_logs import write_lightning_rows

    for a in range(5):
        write_lightning_rows(tmp_path / f"lr{a}" / "version_0", [(s, {"loss": 1 / (s + 1)}) for s in range(30)])
        write_lightning_rows(tmp_path / f"lr{a}" / "version_1", [(s, {"loss": 2 / (s + 1)}) for s in range(20, 60)])
    app = StepTableApp(Feed([str(tmp_path)]))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(500):
            await pilot.pause(0.02)
            if len(app.panels) == 5 and all(len(r.store) == 60 for r in app.session.runs.values()):
                break
        assert not isinstance(app.screen, RunsScreen)
        assert sorted(app.panels) == [f"lr{a}/version_0/metrics.csv" for a in range(5)]
        assert all(r.store.resumes == [20] for r in app.session.runs.values())
