"""The watch app's compare view (w): live window means and differences per arm, x axis and baseline keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steptable.app.screens.compare import CompareScreen
from tests.app.helpers import ARMS, SIZE, append, make_runs, manual_app, screen_text, sync, write_rows

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _compare_view(app: Any, follower: Any, pilot: Any) -> CompareScreen:
    """The compare view, opened with w once the runs are read."""
    await sync(pilot, follower)
    await pilot.press("w")
    await pilot.pause()
    assert isinstance(app.screen, CompareScreen)
    return app.screen


async def test_compare_view_live(tmp_path: Path) -> None:
    root = make_runs(tmp_path, steps=200)
    app, follower, _ = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("w")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        text = screen_text(app)
        # arms in discovery order (sorted directories): absorb, routeA, vanilla
        # the steps in the window (179.1-199 holds 180-199)
        assert "baseline absorb; x step, window steps 180-199 (last 10% of the common range)" in text
        assert "absorb (n=1) mean [95% CI]" in text and "routeA (n=1) Δ [95% CI]" in text
        rew = next(line for line in text.splitlines() if line.lstrip("│ ").startswith("rew "))
        assert rew.count("[") == 3  # the baseline's mean and two differences
        for arm in ARMS:  # rows appended: the window moves on at the next update
            append(root, arm, 200, 300)
        await sync(pilot, follower)
        screen.update_table()
        await pilot.pause()
        assert "window steps 270-299" in screen_text(app)
        await pilot.press("b")  # the next arm is the baseline
        await pilot.pause()
        assert "baseline routeA;" in screen_text(app) and "absorb (n=1) Δ [95% CI]" in screen_text(app)
        await pilot.press("x")  # tokens: these runs log none, which the view says
        await pilot.pause()
        assert "x tokens: arm" in screen_text(app) and "no numeric any of num_tokens" in screen_text(app)
        said = " ".join(line.strip("│ ") for line in screen_text(app).splitlines())
        assert "n_tokens to use as x" in said  # (the message wraps in the box: its end was cut off)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen)


async def test_a_compare_view_wider_than_the_terminal_scrolls_to_its_last_arm(tmp_path: Path) -> None:
    """At 80x24 the third arm's column was cut off and no key scrolled to it: the arrows scroll the arms' columns,
    and the metric names stay in view beside them (they scrolled away with the arms before); keys that come
    together each scroll."""
    from steptable.app.widgets.pinned import PinnedTable

    root = make_runs(tmp_path, steps=200)
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await _compare_view(app, follower, pilot)
        assert "vanilla (n=1)" not in screen_text(app)  # (off to the right)
        for _ in range(60):
            await pilot.press("right")
        await pilot.pause()
        assert app.screen.query_one(PinnedTable).scroll_x > 0
        text = screen_text(app)
        assert "vanilla (n=1)" in text
        assert "absorb (n=1)" not in text  # (scrolled off to the left)
        rew = next(line for line in text.splitlines() if "│rew " in line)  # (the box's left edge, then the name)
        assert "[" in rew  # the name, and beside it the differences of the arms scrolled to
        assert any("│metric " in line and "vanilla (n=1)" in line for line in text.splitlines())
        # keys that come together (pasted, a slow link) each scroll: they moved on from a position updated only at
        # the next refresh (ten Down keys moved one row)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        arms = screen.query_one(PinnedTable)
        arms.scroll_to(x=0, animate=False, immediate=True)
        for _ in range(3):  # (handled one after another with no refresh between)
            screen.action_sideways(1)
        await pilot.pause()
        assert arms.scroll_x == min(12, arms.max_scroll_x) > 4


async def test_the_arms_names_stay_when_the_compare_view_scrolls_down(tmp_path: Path) -> None:
    """At 80x24, 40 metrics: scrolled down, the header line (the arms' names over their columns) scrolled away
    with the rows, and the numbers under it named no arm. It stays, over the rows scrolled to, and scrolls
    sideways with the arms' columns."""
    for i, arm in enumerate(("armA", "armB", "armC")):
        write_rows(tmp_path / arm / "metrics.jsonl",
                   ({"step": s, **{f"m{k:02d}": k + i / 10 + (s % 7) / 100 for k in range(40)}} for s in range(200)))
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await _compare_view(app, follower, pilot)
        for _ in range(30):
            await pilot.press("down")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert not any("│m00 " in line for line in lines)  # (scrolled off the top)
        head = next(i for i, line in enumerate(lines) if "│metric " in line)
        assert "armA (n=1) mean [95% CI]" in lines[head]
        assert lines[head + 1].split("│")[1].split()[0] > "m00"  # a row scrolled to, right under the header
        for _ in range(20):
            await pilot.press("right")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        head = next(line for line in lines if "│metric " in line)
        assert "armC (n=1) Δ [95% CI]" in head and "armA (n=1)" not in head


async def test_long_alike_metric_names_leave_the_arms_room_at_80_columns(tmp_path: Path) -> None:
    """Twelve 78-character names alike but for a number in their middle: the pinned name column grew to the whole
    80-column view and every arm was off-screen for good (the names do not scroll). The names take half the view
    at most, each shown by where it differs, and the first arm's numbers show beside them."""
    long = [f"actor/very_long_metric_name_for_the_policy_{k}_clipped_ratio_mean_over_tokens" for k in range(12)]
    for i, arm in enumerate(("base", "new")):
        write_rows(tmp_path / arm / "metrics.jsonl",
                   ({"step": s, **{m: k + i / 10 + (s % 7) / 100 for k, m in enumerate(long)}} for s in range(100)))
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await _compare_view(app, follower, pilot)  # (its first frame, drawn before its first layout)
        lines = screen_text(app).splitlines()
        head = next(line for line in lines if "│metric " in line)
        assert "base (n=1) mean [95% CI]" in head
        rows = [line for line in lines if "policy_" in line]
        assert len(rows) == 12 and all("[" in line for line in rows)  # the baseline's intervals beside the names
        assert len({line.split("│")[1].split()[0] for line in rows}) == 12  # names told apart
        assert "policy_11_clipped" in rows[-1]


async def test_help_on_the_compare_view_lists_its_keys(tmp_path: Path) -> None:
    """? in the compare view did nothing (every other screen's ? opens the help): it lists the view's keys, the
    arrows that scroll it among them, then what its green, red and bold mean; esc brings the view back."""
    from steptable.app.screens.help import HelpScreen

    app, follower, _ = manual_app(make_runs(tmp_path, steps=50))
    async with app.run_test(size=(80, 24)) as pilot:
        await _compare_view(app, follower, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = dict(app.screen.lines)
        assert keys["x"].startswith("X axis") and keys["b"].startswith("Baseline")
        assert keys["←"] and keys["↓"] and keys["pgdn"] and "Chart" not in app.screen.text()
        said = app.screen.text()  # what the colours mean, not the tables' marks
        assert "green: better than the baseline beyond chance" in said and "red: worse" in said
        assert "bold: different" in said and "colours in watch:" not in said
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, CompareScreen)


async def test_arms_with_no_metric_in_common_or_a_copy_as_baseline_say_so(tmp_path: Path) -> None:
    """A JSONL logging rew beside a W&B-style copy logging train/rew: the view said "no metric every arm logs yet"
    until the window left out runs without the metrics, when its update raised out of the app (ValueError); b onto
    the copy likewise."""
    import json

    for name, key in (("a_jsonl", "rew"), ("b_copy", "train/rew"), ("c_jsonl", "rew")):
        path = tmp_path / name / "metrics.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps({"step": s, key: 1.0 + s / 100}) + "\n" for s in range(50)))
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _compare_view(app, follower, pilot)
        assert "baseline a_jsonl" in screen_text(app) and "rew " in screen_text(app)
        await pilot.press("b")  # the copy as the baseline: no metric the others log
        await pilot.pause()
        assert isinstance(app.screen, CompareScreen) and app.return_code is None
        assert "baseline b_copy" in screen_text(app)


async def test_compare_view_one_arm(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, steps=50, arms=("solo",)))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("w")
        await pilot.pause()
        assert "one arm only: nothing to compare" in screen_text(app)


def test_compare_parts_a_huge_metric_name_pads_no_other_line() -> None:
    """The view's table: a metric named by a 200 000-character key is cut in its middle in the pinned name column
    (which then stays narrow); the arms' lines stay within MAX_WIDTH cells a column (padded to the key, the text
    held 20 x 200 000 cells)."""
    import math

    from steptable.app.screens.compare import NAME_MAX, compare_parts
    from steptable.compare.live import LiveCompare
    from steptable.ingest import RunStore
    from steptable.ingest.parsed import Parsed
    from steptable.table.columns import MAX_WIDTH

    huge = "k" * 200_000
    stores = []
    for arm, lift in (("base", 0.0), ("new", 0.1)):
        st = RunStore(f"{arm}/metrics.jsonl", f"/nonexistent/{arm}/metrics.jsonl", arm=arm)
        rows = [{"loss": 1 / (i + 1) + lift, huge: i * 0.5, **{f"m{j}": j + i * 0.01 + lift for j in range(20)}}
                for i in range(50)]
        st.add(Parsed(steps=list(range(50)), rows=rows), now=math.nan)
        stores.append(st)
    live = LiveCompare(stores, "base")
    _, names, table = compare_parts(live, live.update())
    assert max(len(line) for line in names.plain.splitlines()) == NAME_MAX + 2  # (and the gap)
    assert "kkk…kkk" in names.plain
    assert len(names.plain.splitlines()) == len(table.plain.splitlines())  # line for line
    assert max(len(line) for line in table.plain.splitlines()) <= 3 * MAX_WIDTH


def test_long_metric_names_alike_when_cut_stay_apart_in_the_pinned_column() -> None:
    """40 metrics named actor/very_long_metric_name_<i>_clipped_ratio_mean all read
    `actor/very_long_…pped_ratio_mean` cut to 32 cells: the column grows until they differ. Names that differ in
    several places, alike in the room the arms leave, show those places (a cut in their middle dropped them)."""
    from steptable.app.screens.compare import NAME_MAX_ALL, _names

    long = [f"actor/very_long_metric_name_{i}_clipped_ratio_mean" for i in range(40)]
    names = _names(long)
    assert len(set(names)) == 40 and max(map(len, names)) <= NAME_MAX_ALL
    assert _names(["loss", "reward"]) == ["loss", "reward"]
    alike = _names(["k" * 250 + c + "k" * 250 for c in "ab"])  # (different only past NAME_MAX_ALL: cut to it)
    assert len(alike[0]) == NAME_MAX_ALL
    several = [f"{p}/very_long_metric_name_for_the_policy_{k}_clipped_ratio_mean_over_tokens_{s}"
               for p in ("train", "eval") for k in range(2) for s in "ab"]  # (alike in 34 cells, apart in 3 places)
    shown = _names(several, 34)
    assert len(set(shown)) == 8 and max(map(len, shown)) <= 34 and shown[0].startswith("train/")


def test_the_arms_columns_stand_still_as_their_digits_come_and_go() -> None:
    """The compare view updates every second; an interval losing a digit (``[.51, .63]`` after ``[.512, .634]``)
    narrowed its column and moved every column right of it. Given the widths so far, a column only widens."""
    import math

    from steptable.app.screens.compare import compare_parts
    from steptable.compare.live import LiveCompare
    from steptable.ingest import RunStore
    from steptable.ingest.parsed import Parsed

    stores = []
    for arm, lift in (("b", 0.0), ("n", 0.1), ("t", 0.2)):  # (short names: the cells, not the names, set widths)
        st = RunStore(f"{arm}/metrics.jsonl", f"/nonexistent/{arm}/metrics.jsonl", arm=arm)
        st.add(Parsed(steps=list(range(50)), rows=[{"loss": 0.5 + lift + 0.0137 * ((i * 7) % 5)} for i in range(50)]),
               now=math.nan)
        stores.append(st)
    live = LiveCompare(stores, "b")
    widths: dict[str, int] = {}
    _, _, wide = compare_parts(live, live.update(), widths)
    for st in stores:  # the same value from now on: the intervals narrow to a point, their text to a few cells
        st.add(Parsed(steps=list(range(50, 2000)), rows=[{"loss": 0.5} for _ in range(1950)]), now=math.nan)
    _, _, narrow = compare_parts(live, live.update(), widths)
    fresh = compare_parts(live, live.update())[2]
    head = wide.plain.splitlines()[0]
    assert narrow.plain.splitlines()[0] == head  # the arms' names where they were
    assert fresh.plain.splitlines()[0] != head  # (without the widths so far: the columns moved)


def test_the_compare_views_title_says_when_every_arm_is_one_seed() -> None:
    """Arms of one run each: the intervals are the runs' own noise, and the title says the seeds' spread is not
    known; with an arm of two seeds it says nothing of it (the one-seed arm is spread as their seeds are)."""
    import math

    from steptable.app.screens.compare import compare_parts
    from steptable.compare.live import LiveCompare
    from steptable.ingest import RunStore
    from steptable.ingest.parsed import Parsed

    def store(name: str, lift: float) -> RunStore:
        st = RunStore(f"{name}/metrics.jsonl", f"/nonexistent/{name}/metrics.jsonl", arm=name)
        st.add(Parsed(steps=list(range(50)), rows=[{"reward": lift + 0.01 * (i % 7)} for i in range(50)]),
               now=math.nan)
        return st

    live = LiveCompare([store("base", 0.0), store("new", 0.1)], "base")
    title, _, _ = compare_parts(live, live.update())
    assert title.plain.endswith("; one seed each: intervals within runs, the seeds' spread unknown")
    live = LiveCompare([store("base", 0.0), store("new_seed1", 0.1), store("new_seed2", 0.1)], "base")
    title, _, _ = compare_parts(live, live.update())
    assert "one seed each" not in title.plain


def test_the_compare_views_colours_are_the_verdicts_over_every_arm() -> None:
    """Two arms whose own intervals exclude 0 (Welch's p .0376 and .0334) but that Holm's procedure over the two
    does not call apart: neither cell is green, as ``compare`` marks neither better, and the title says the colours
    are Holm's over 2 arms; one of them alone with the baseline is green, the title silent on it."""
    from steptable.app.screens.compare import compare_parts
    from steptable.compare.live import LiveCompare
    from tests.compare.helpers import constant_seeds

    def styles(lifts: dict[str, float]) -> tuple[str, set[str]]:
        live = LiveCompare(constant_seeds(lifts, 200, "reward"), "base", better={"reward": "higher"})
        title, _, table = compare_parts(live, live.update())
        return title.plain, {str(span.style) for span in table.spans}

    title, seen = styles({"base": 0.0, "b": 2.5, "c": 2.6})
    assert title.endswith("; colours: Holm over 2 arms") and "bold green" not in seen, (title, seen)
    title, seen = styles({"base": 0.0, "c": 2.6})
    assert "Holm" not in title and "bold green" in seen
