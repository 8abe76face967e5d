"""The app under what a live sweep does to it: a run restarting while the chart is open, keys arriving mid-run,
many arms, long names, runs that diverged, thousands of bad lines and events."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from steptable.app.layouts import Layouts
from steptable.app.model import Summary
from steptable.app.screens.events import EventList, EventsScreen
from steptable.app.session import Session
from steptable.app.widgets.arm import ArmPanel
from steptable.app.widgets.panels import ChartPanel, DiagnosticsPanel
from steptable.app.widgets.status import Event
from steptable.ingest.files.follow import Follower, load
from steptable.schemafiles.resolve import get_schema
from steptable.schemas import layout
from tests.app.helpers import (
    T0,
    keyed_stores,
    lines_of,
    make_runs,
    manual_app,
    row,
    screen_text,
    session_counting_measures,
    sync,
    write_generations,
    write_rows,
)

pytestmark = pytest.mark.anyio


# ------------------------------------------------------------------------------------------ a restart under the chart


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


async def test_generations_key_with_an_emptied_store(tmp_path: Path) -> None:
    root = make_runs(tmp_path, steps=100, arms=("a",))
    write_generations(root / "a")
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(120, 32)) as pilot:
        await sync(pilot, follower)
        grid = app.query_one(ArmPanel).grid
        grid.focus()
        await pilot.press("home")  # paused at the top: the viewer opens at the step on screen
        grid.scroll_to(y=50, animate=False, immediate=True)
        await pilot.pause()
        assert not grid.follow and grid.top_index == 50
        (root / "a" / "metrics.jsonl").write_text(json.dumps(row(0, 0)) + "\n")
        follower.real.scan()
        await pilot.press("v")
        await pilot.pause()
        assert app.is_running and app._exception is None


def test_layouts_first_layout_is_schemas_layout(tmp_path: Path) -> None:
    stores = keyed_stores(tmp_path, 3, 12)
    for name in ("generic", "routing", "verl"):
        assert Layouts().layout(stores, get_schema(name)) == layout(stores, get_schema(name))
    # runs that name their steps differently: one step column, neither run's own step key again
    for key, stem in (("global_step", "g"), ("_step", "w")):
        path = tmp_path / "mix" / stem / "metrics.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps({key: s, "loss": 1 / (s + 1)}) + "\n" for s in range(5)))
    mixed = list(load(tmp_path / "mix").values())
    assert [c.key for c in Layouts().layout(mixed, get_schema("generic"))] == ["step", "loss"]


def test_a_new_key_measures_only_that_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stores, session, measured = session_counting_measures(tmp_path, monkeypatch)
    write_rows(stores[0].path, [{"step": 40, "g0/m0": 1.0, "eval/new": 0.5}])
    load_more = load(stores[0].path.parent)  # the same file read again, now with the new key
    assert session.update(stores[0].path.parent.name, next(iter(load_more.values())))
    assert "eval/new" in [c.key for c in session.layout]
    assert [k for k in measured if k != "step"] == ["eval/new"]  # not the 30 keys measured before
    assert [c.key for c in session.layout if c.key != "eval/new"] == [c.key for c in layout(stores, session.schema())]


# ------------------------------------------------------------------------------------------ one line per row


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


# ------------------------------------------------------------------------------------------ the latest value


def test_summary_last_is_the_latest_logged_value() -> None:
    s = Summary().update([0.7, 0.7, math.inf])
    assert (s.lo, s.hi, s.last) == (0.7, 0.7, math.inf)
    s.update([0.7, 0.7, math.inf, math.nan])
    assert math.isnan(s.last) and s.hi == 0.7
    s.update([0.7, 0.7, math.inf, math.nan, 0.5, None])  # None: the row lacks the key
    assert s.last == 0.5
    absent = Summary().update([0.3, math.nan, math.nan], logged=lambda i: i == 0)  # nan pads absent cells
    assert absent.last == 0.3


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
        assert "nan" in next(line for line in diag if line.split()[:1] == ["qmass"])
        await pilot.press("d")
        app.query_one(ArmPanel).grid.focus()
        while app.session.selected != "qmass":
            await pilot.press("right")
        await pilot.press("c")
        await pilot.pause()
        chart = lines_of(app, "Chart of", 2)[1]
        assert "last nan" in chart and "max .31" in chart


# ------------------------------------------------------------------------------------------ bad lines and events


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


async def test_events_screen_draws_only_what_shows(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("a",)))
    async with app.run_test(size=(100, 30)) as pilot:
        await sync(pilot, follower)
        many = [Event("B", "a", f"metrics.jsonl:{i}: malformed JSON [bold]x[/]\x1b[2J") for i in range(20_000)]
        app.push_screen(EventsScreen(many))
        await pilot.pause()
        events = app.screen.query_one(EventList)
        assert events.virtual_size.height == 20_000 and app.focused is events
        shown = screen_text(app)
        assert "metrics.jsonl:0: malformed JSON [bold]x[/]" in shown and "\x1b" not in shown
        await pilot.press("end")
        await pilot.pause()
        assert "metrics.jsonl:19999:" in screen_text(app)
        await pilot.press("escape")
        assert not isinstance(app.screen, EventsScreen)


@pytest.mark.parametrize("size", [(160, 30), (120, 30)])
async def test_a_long_name_never_hides_the_state(tmp_path: Path, size: tuple[int, int]) -> None:
    names = [f"grpo_qwen2.5-7b_lr1e-6_kl0.001_t1.0_bs512_seed{i}" for i in range(3)]
    root = make_runs(tmp_path, arms=names)
    app, follower, clock = manual_app(root, stacked=size[0] == 120)
    async with app.run_test(size=size) as pilot:
        await sync(pilot, follower)
        clock.now = T0 + 84 + 3600
        app._on_tick()
        await pilot.pause()
        for panel in app.query(ArmPanel):
            title = str(panel.title_bar.render())
            shown = title[: panel.title_bar.size.width]
            assert "STALLED" in shown and "following" in shown and "40 rows" in shown, shown
            assert panel.label[-5:] in shown  # the end of the name, where sweep runs differ


def test_previews_only_for_what_the_follower_will_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big dataset JSONL and a big server log beside a run are not previewed as runs (they stayed "loading"
    forever and lent their keys to the real run's layout), and a big file that cannot be read is passed over."""
    import steptable.ingest as ingest
    from steptable.app.feed import Feed

    root = make_runs(tmp_path, steps=300, arms=("big", "locked"))
    (root / "data").mkdir()
    (root / "data" / "prompts.jsonl").write_text(json.dumps({"prompt": "Solve " + "x" * 300, "answer": "42"}) + "\n"
                                                 * 300)
    (root / "vllm_server.log").write_text("INFO metrics.py:351] Avg prompt throughput: 0.0 tokens/s\n" * 3000)
    real = ingest.preview_tail

    def preview(path: Any, *a: Any, **kw: Any) -> Any:
        if Path(path).parent.name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *a, **kw)

    monkeypatch.setattr(ingest, "preview_tail", preview)
    feed = Feed([str(root)], follower=Follower([root]), preview_min_bytes=1)
    feed.prepare()
    assert feed._prepared is not None
    got = []
    while (msg := feed._prepared.get(timeout=30)) is not None:
        got.append(msg.run)
    assert got == ["big/metrics.jsonl"]
    # a file several arms' StepLoggers share: no preview (it would show their rows merged under one name)
    from steptable import Col, StepLogger

    loggers = [StepLogger([Col("step", 4, "step", "d"), Col("rew", 6, "rew")], run_dir=root / "shared", arm=arm,
                          console=False, alerts=False) for arm in ("routeA", "absorb")]
    for s in range(50):
        for i, lg in enumerate(loggers):
            lg.log({"step": s, "rew": 0.111 if i == 0 else 0.999})
    for lg in loggers:
        lg.close()
    feed = Feed([str(root / "shared")], follower=Follower([root / "shared"]), preview_min_bytes=1)
    feed.prepare()
    assert feed._prepared is not None and feed._prepared.get(timeout=30) is None


def _session_with_a_dump_only_column(tmp_path: Path) -> Session:
    """A session over one StepLogger run whose ``gen`` column is dump-only (kept out of the layout)."""
    from steptable import Col, StepLogger

    cols = [Col("step", 4, "step", "d"), Col("rew", 6, "rew", ".2f"),
            Col("gen", 6, "gen", None, "seconds", stream=False)]
    with StepLogger(cols, run_dir=tmp_path / "a", arm="a", console=False, alerts=False) as sl:
        for s in range(3):
            sl.log({"step": s, "rew": 0.5, "gen": 12.8})
    session = Session()
    for rid, st in load(tmp_path).items():
        session.update(rid, st)
    return session


def test_the_filter_reaches_columns_the_layout_keeps_out(tmp_path: Path) -> None:
    """`legend` says a column filter shows the dump-only columns; in the app the filter only narrowed the
    layout, so `/gen` left the step column alone."""
    session = _session_with_a_dump_only_column(tmp_path)
    assert [c.key for c in session.columns()[0]] == ["step", "rew"]
    session.pattern = "gen"
    assert [c.key for c in session.columns()[0]] == ["step", "gen"]
    session.pattern = ""
    assert [c.key for c in session.columns()[0]] == ["step", "rew"]


def test_the_filter_measures_only_the_keys_it_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep's filter froze the app for 12 s: every key of every run was measured, then filtered."""
    _, session, measured = session_counting_measures(tmp_path, monkeypatch)
    session.pattern = "nomatch"
    assert [c.key for c in session.columns()[0]] == ["step"]
    assert [k for k in measured if k != "step"] == []


async def test_closing_a_focused_panel_gives_the_focus_back_to_a_table(tmp_path: Path) -> None:
    from steptable.app.widgets.grid import StepGrid

    app, follower, _ = manual_app(make_runs(tmp_path, steps=20, arms=("a", "b")))
    async with app.run_test(size=(140, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        app.query_one(ChartPanel).focus()  # (a click to scroll the panel focuses it)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.focused, StepGrid)
        grid = app.focused
        await pilot.press("1")  # hide the arm whose table has the focus
        await pilot.pause()
        assert isinstance(app.focused, StepGrid) and app.focused is not grid


async def test_chart_labels_keep_the_end_of_sweep_names(tmp_path: Path) -> None:
    arms = tuple(f"grpo_qwen2.5-7b_lr1e-6_kl0.001_seed{i}" for i in range(3))
    app, follower, _ = manual_app(make_runs(tmp_path, steps=20, arms=arms))
    async with app.run_test(size=(120, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        chart = str(app.query_one(ChartPanel).body.render())
        assert all(f"seed{i}" in chart for i in range(3))


def test_the_newest_bad_lines_come_first_across_runs(tmp_path: Path) -> None:
    for arm in ("aaa", "zzz"):
        write_rows(tmp_path / arm / "metrics.jsonl", (row(0, s) for s in range(3)))
    with open(tmp_path / "aaa" / "metrics.jsonl", "a") as f:
        f.write("{old garbage\n" * 5)
    session = Session()
    for rid, st in load(tmp_path).items():
        session.update(rid, st)
    with open(tmp_path / "zzz" / "metrics.jsonl", "a") as f:
        f.write("{new garbage\n")
    for st in load(tmp_path / "zzz").values():
        session.update("zzz/metrics.jsonl", st)
    first = session.events(recent=1)[0]
    assert first.level == "B" and "zzz" in first.text and ":4:" in first.text


def test_a_column_pinned_under_a_filter_stays_after_it(tmp_path: Path) -> None:
    session = _session_with_a_dump_only_column(tmp_path)
    session.pattern = "gen"
    session.toggle_pin("gen")
    session.pattern = ""
    assert [c.key for c in session.columns()[0]] == ["step", "gen", "rew"]


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
        await pilot.press("slash", "g", "e", "n", "enter")
        await pilot.pause()
        app.session.selected = "gen"
        await pilot.press("c")
        await pilot.pause()
        text = str(app.query_one(ChartPanel).body.render())
        assert "Chart of gen" in text and "max 16" in text
