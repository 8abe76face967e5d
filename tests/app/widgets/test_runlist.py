"""The run list's lines (steptable.app.widgets.runlist): a long name cut in the middle, each column's cell of a run
with a digest and of one still being read."""

from __future__ import annotations

import pytest

from steptable.app.runrows import ListState
from steptable.app.widgets.runlist import NAME_MAX, cells
from steptable.summary.sweep import RunDigest
from steptable.table.formatting import display_width
from tests.app.sweephelpers import Row


def _name_cell(run: str) -> str:
    return cells(Row(f"exp/{run}", run, size=1), ListState(), 0.0)[1][0]


def test_a_long_name_is_cut_in_the_middle_to_its_cells() -> None:
    assert _name_cell("short") == "exp/short"
    name = _name_cell("a" * 30 + "MIDDLE" + "z" * 30)
    assert len(name) == NAME_MAX and name.startswith("exp/" + "a" * 20) and name.endswith("z" * 23) and "…" in name
    wide = _name_cell("実験" * 30)  # two cells a character
    assert display_width(wide) <= NAME_MAX and wide.endswith("実験" * 5)


def test_a_name_is_made_inert_before_it_is_cut() -> None:
    """An escape sequence across the cut: cut first, the rest of it showed as text (``0;EVI``)."""
    name = _name_cell("a" * 16 + "\x1b]0;EVIL-TITLE\x07" + "b" * 40)
    assert "\x1b" not in name and "EVI" not in name and "0;" not in name and display_width(name) == NAME_MAX


def test_cells_of_a_run() -> None:
    d = RunDigest("lr1_seed1", "lr1_seed1", "jsonl", size=10**6, rows=1200, rows_exact=False, last_step=1199,
                  updated=100.0, interval=None, end=None, window=1, last={"loss": 0.25}, errors=2, warnings=1)
    state = ListState(metrics=["loss", "reward"], pinned=["exp/lr1_seed1"], selected={"exp/lr1_seed1"})
    got = cells(Row("exp/lr1_seed1", "lr1_seed1", digest=d), state, 130.0)
    assert [text for text, _ in got] == ["p✓", "exp/lr1_seed1", "jsonl", "live", "~1,200", "1199", "30s",
                                         "2E 1W", ".25", ""]
    assert len(got) == 1 + len(state.columns()) and got[-3][1] == "bold red"
    reading = cells(Row("exp/b", "b", size=2_500_000), ListState(), 130.0)
    assert [text for text, _ in reading] == ["  ", "exp/b", "", "…", "2.5 MB", "", "", ""]


def test_a_redraw_formats_again_only_the_runs_whose_digest_changed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import steptable.app.widgets.runlist as runlist

    made: list[str] = []
    real = runlist.fixed_cells
    monkeypatch.setattr(runlist, "fixed_cells", lambda e, state: made.append(e.run_id) or real(e, state))

    def digest(run: str, loss: float) -> RunDigest:
        return RunDigest(run, run, "jsonl", 1, 1, True, 0, 100.0, None, None, 1, last={"loss": loss})

    rows = [Row(f"r{i}", f"r{i}", digest=digest(f"r{i}", 0.5)) for i in range(3)]
    state = ListState(metrics=["loss"])
    widget = runlist.RunList()
    widget.show(rows, state, 130.0)
    widget.show(rows[:2], state, 130.5)  # a filter: nothing formatted again
    assert made == ["r0", "r1", "r2"]
    rows[1] = Row("r1", "r1", digest=digest("r1", 12.25))
    widget.show(rows, state, 131.0)
    assert made == ["r0", "r1", "r2", "r1"] and widget.lines[1] == runlist.cells(rows[1], state, 131.0)
    assert widget.widths[-1] == max(len("loss"), len(widget.lines[1][-1][0]))  # the widest line's, or the header's
    state.metrics = []  # other metric columns: every line again
    before = len(made)
    widget.show(rows, state, 131.0)
    assert made[before:] == ["r0", "r1", "r2"] and widget.lines[0] == runlist.cells(rows[0], state, 131.0)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_run_added_off_screen_redraws_no_line_and_a_changed_one_only_its_own() -> None:
    from textual.app import App, ComposeResult

    import steptable.app.widgets.runlist as runlist

    def digest(run: str, loss: float) -> RunDigest:
        return RunDigest(run, run, "jsonl", 1, 1, True, 0, 100.0, None, None, 1, last={"loss": loss})

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield runlist.RunList(id="runs")

    rows = [Row(f"r{i:03d}", f"r{i:03d}", digest=digest(f"r{i:03d}", 0.5)) for i in range(100)]
    state = ListState(metrics=["loss"])
    app = Host()
    async with app.run_test(size=(100, 20)) as pilot:
        widget = app.query_one(runlist.RunList)
        widget.show(rows, state, 130.0)
        await pilot.pause()
        whole: list[int] = []
        lines: list[int] = []
        real_refresh = widget.refresh
        widget.refresh = (  # type: ignore[method-assign]
            lambda *a, **k: (whole.append(1) if not a else None) or real_refresh(*a, **k))
        widget.refresh_line = lines.append  # type: ignore[method-assign]
        widget.show([*rows, Row("r100", "r100", digest=digest("r100", 0.5))], state, 130.2)  # below the screen
        assert whole == [] and lines == []
        rows[3] = Row("r003", "r003", digest=digest("r003", 0.75))  # on screen: its line alone
        widget.show(rows, state, 130.4)
        assert whole == [] and lines == [4]  # (virtual lines: the header is line 0)
        rows[5] = Row("r005", "r005", digest=digest("r005", 12345.25))  # a wider cell: every line
        widget.show(rows, state, 130.8)
        assert whole == [1]
        assert widget.lines[5] == runlist.cells(rows[5], state, 130.8)


@pytest.mark.anyio
async def test_the_sort_arrow_on_screen_follows_a_reversed_order() -> None:
    """``O`` reverses the order: the rows moved and the header's arrow, drawn again, turns (it stayed ▲)."""
    from textual.app import App, ComposeResult

    import steptable.app.widgets.runlist as runlist

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield runlist.RunList(id="runs")

    rows = [Row(f"r{i}", f"r{i}", digest=RunDigest(f"r{i}", f"r{i}", "jsonl", 1, 1, True, 0, 100.0, None, None, 1,
                                                  last={"loss": i / 4})) for i in range(4)]
    state = ListState(metrics=["loss"])
    state.sort_by("loss")
    app = Host()
    async with app.run_test(size=(100, 10)) as pilot:
        widget = app.query_one(runlist.RunList)
        for arrow in ("▲", "▼", "▲"):
            widget.show(sorted(rows, key=lambda r: r.run_id, reverse=state.reverse), state, 130.0)
            await pilot.pause()
            shot = app.export_screenshot()  # (what the terminal has: lines not refreshed keep what they showed)
            assert shot.count(arrow) == 1 and shot.count("▲▼".replace(arrow, "")) == 0
            state.sort_by("loss")
