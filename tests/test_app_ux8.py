"""Review of `steptable demo` and the watch app as a person uses them: Ctrl-C quits; TERM and HUP end the app as q does
(the terminal put back, the demo's temporary directory removed); the demo's first rows come before torch has loaded;
a column cut by the window's edge is blank, not a number's fragment; ? and F1 list every key; the demo writes
generations and starts on the hack rate; the chart's min / max / last in one form."""

from __future__ import annotations

import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.widgets import Static

from steptable.app import demo as app_demo
from steptable.app.screens.help import HelpScreen
from steptable.app.screens.prompt import PromptScreen
from steptable.app.widgets.keys import KeyBar
from steptable.app.widgets.lines import join_line
from steptable.app.widgets.panels import ChartPanel
from tests.app.helpers import SIGNALS, SIZE, SignalledApp, handlers_are_ours, make_runs, manual_app, sync
from tests.helpers import run_cli

pytestmark = pytest.mark.anyio


# ---------------------------------------------------------------------------------------------- 1. ctrl+c quits
@pytest.mark.parametrize("over_prompt", [False, True])
async def test_ctrl_c_quits_the_app(tmp_path: Path, over_prompt: bool) -> None:
    """^C showed a toast "Press ctrl+q to quit the app" and a second ^C did nothing (also over a prompt's input)."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        if over_prompt:
            await pilot.press("slash")
            assert isinstance(app.screen, PromptScreen)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
    assert (app.return_code or 0) == 0


def test_quit_on_signals_sets_and_puts_back_the_handlers() -> None:
    from steptable.app.signals import quit_on_signals

    def mine(signum: int, frame: Any) -> None:
        pass

    class App:
        exits = 0

        def exit(self) -> None:
            self.exits += 1

    app = App()
    before = {s: signal.signal(s, mine) for s in SIGNALS}
    try:
        with quit_on_signals(app) as got:
            assert handlers_are_ours()
            os.kill(os.getpid(), signal.SIGTERM)  # (no loop running: the app is asked at once)
        assert got == [signal.SIGTERM] and app.exits == 1
        assert all(signal.getsignal(s) is mine for s in SIGNALS)
    finally:
        for s, old in before.items():
            signal.signal(s, old)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
async def test_a_signal_ends_the_running_app_as_q_does(tmp_path: Path, name: str) -> None:
    """The default action killed the process where it stood: the terminal stayed in the alternate screen with mouse
    tracking on and the cursor hidden. Now the app's own exit runs (its driver puts the terminal back)."""
    from steptable.app.signals import quit_on_signals

    if not hasattr(signal, name):
        pytest.skip(f"no {name} here")
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        with quit_on_signals(app) as got:
            assert handlers_are_ours()
            os.kill(os.getpid(), getattr(signal, name))
            for _ in range(200):  # bounded: the loop takes the exit on its next turn
                if not app.is_running:
                    break
                await pilot.pause(0.01)
        assert got == [getattr(signal, name)] and not app.is_running
    assert (app.return_code or 0) == 0


def test_term_ends_the_demo_with_its_directory_removed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`timeout steptable demo`, tmux kill-pane: the temporary directory stayed behind; after q the last line said
    the files "named above" were gone where the app named none."""
    import tempfile

    from steptable.cli import main as cli

    app = SignalledApp()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(cli, "_terminal", lambda: True)
    monkeypatch.setattr(app_demo, "make_app", lambda paths, theme=None: app)
    before = {s: signal.getsignal(s) for s in SIGNALS}
    rc, _, err = run_cli(["demo", "--steps", "100000", "--interval", "0.01"], capsys)
    assert app.handlers_were_ours and app.asked.is_set()
    # 128 + TERM, as a shell tells a command a TERM ended (q is 0): a supervisor tells the two apart
    assert rc == 128 + signal.SIGTERM and list(tmp_path.glob("steptable-demo-*")) == []
    assert {s: signal.getsignal(s) for s in SIGNALS} == before
    assert not any(t.name == "steptable-demo-writer" and t.is_alive() for t in threading.enumerate())
    assert "was temporary and is removed with its files; --dir DIR keeps the run" in err
    assert "named above" not in err


def test_a_hang_up_ends_the_demo_with_status_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A closed window: the terminal is gone, and the demo's last line to it failed (EIO) into a traceback, status 1."""
    import errno
    import sys
    import tempfile

    from steptable.cli import main as cli

    class Gone:
        def write(self, text: str) -> int:
            raise OSError(errno.EIO, "Input/output error")

        def flush(self) -> None:
            pass

    class App:
        return_code = 0

        def run(self) -> None:
            monkeypatch.setattr(sys, "stderr", Gone())

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(cli, "_terminal", lambda: True)
    monkeypatch.setattr(app_demo, "make_app", lambda paths, theme=None: App())
    assert cli.main(["demo", "--steps", "5", "--interval", "0"]) == 0
    assert list(tmp_path.glob("steptable-demo-*")) == []


def test_term_ends_watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from steptable.app import watch as app_mod

    app = SignalledApp()
    monkeypatch.setattr(app_mod, "make_app", lambda paths, **kw: app)
    before = {s: signal.getsignal(s) for s in SIGNALS}
    assert app_mod.run_watch([str(tmp_path)]) == 128 + signal.SIGTERM  # (q: 0)
    assert app.handlers_were_ours and app.asked.is_set()
    assert {s: signal.getsignal(s) for s in SIGNALS} == before


# ---------------------------------------------------------------------------------------------- 4. cut columns
def test_a_column_cut_by_the_window_is_blank() -> None:
    """120x40: rows ended in "9.", "1." (the start of lr = 9.0e-6) under a header cut to blanks."""
    plain = Style()
    cells = [Segment("  step", plain), Segment("  loss", plain), Segment("9.0e-6", plain), Segment("  1234", plain)]
    # the scrolling cells: "  loss 9.0e-6   1234"; a window of 9 cells shows "  loss" whole and 2 cells of lr
    line = "".join(s.text for s in join_line(cells, 1, True, plain, 0, 9, 16))
    assert line == "  step   loss   "
    # the window ends inside the last column: "  1234" would read as 1
    line = "".join(s.text for s in join_line(cells, 1, True, plain, 0, 16, 23))
    assert line == "  step   loss 9.0e-6   "


# ---------------------------------------------------------------------------------------------- 5. keys
@pytest.mark.parametrize("key", ["question_mark", "f1"])
async def test_help_lists_every_key(tmp_path: Path, key: str) -> None:
    """? and F1 did nothing; e, f, 0 and 1-9 were in no footer, and at 80 columns the footer ends before s, v."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await sync(pilot, follower)
        assert "? Help" in str(app.query_one(KeyBar).render())[:40]  # (within 80 columns)
        await pilot.press(key)
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        keys = {k: what for k, what in screen.lines}
        for k in ("e", "f", "0", "1-9", "s", "v", ": g", "/", "q ^c", "end G", "^p"):
            assert k in keys, k
        assert keys["e"].startswith("Events") and keys["1-9"].startswith("Arm")
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_palette_names_keys_as_the_footer_does(tmp_path: Path) -> None:
    """The palette said "Jump / key colon,g"."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        helps = {c.title: c.help for c in app.get_system_commands(app.screen)}
    assert helps["Jump"].endswith("(key : g)") and helps["Filter"].endswith("(key /)")
    assert not any("colon" in h or "slash" in h or "question_mark" in h for h in helps.values())


async def test_the_demo_starts_on_the_hack_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """c first charted ref_eq, the generations count: three identical ramps."""
    made: list[Any] = []

    def rows_written() -> None:  # (the stand-in for app.run: the writer thread's first rows, waited for, bounded)
        for _ in range(500):
            if len(list(tmp_path.glob("*/metrics.jsonl"))) == 3:
                return
            threading.Event().wait(0.02)

    def make(paths: list[str], theme: str | None = None) -> Any:
        app, follower, _ = manual_app(Path(paths[0]))
        monkeypatch.setattr(app, "run", rows_written)
        made.append((app, follower))
        return app

    monkeypatch.setattr(app_demo, "make_app", make)
    assert app_demo.run_demo_app(tmp_path, steps=3, interval=0) == 0
    app, follower = made[0]
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("c")
        await pilot.pause()
        assert app.query_one(ChartPanel).key == "hack_s"
        assert "Chart of hack_s" in str(app.query_one(ChartPanel).build(100))


# ---------------------------------------------------------------------------------------------- 7. chart numbers
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


async def test_the_help_quits_on_q_names_tab_and_wraps_at_80_columns(tmp_path: Path) -> None:
    """The help's footer said "q Quit" but q did nothing there (a modal screen takes the app's q away); tab, which
    picks the table p and the chart follow, was not listed; at 80 columns a line was cut ("at the step" of "... on
    screen")."""
    app, follower, _ = manual_app(make_runs(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await sync(pilot, follower)
        await pilot.press("question_mark")
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        keys = {k: what for k, what in screen.lines}
        assert any(k.startswith("tab") for k in keys), keys
        box = screen.query_one("VerticalScroll")
        assert box.outer_size.width <= 80
        text = screen.query_one(Static)
        assert text.size.width <= box.size.width  # wrapped inside its box, not cut at its edge
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


def test_a_term_before_the_demo_app_is_up_ends_through_the_cleanup() -> None:
    """A TERM in the second before the demo's app was up killed the process where it stood: the temporary
    directory stayed behind. Now it ends through SystemExit (the callers' finally blocks run), handlers put back."""
    from steptable.app.signals import end_on_signals

    before = signal.getsignal(signal.SIGTERM)
    cleaned = False
    with pytest.raises(SystemExit) as got:
        try:
            with end_on_signals():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(1000):  # (delivered between two bytecodes of this thread)
                    pass
        finally:
            cleaned = True
    assert got.value.code == 128 + signal.SIGTERM and cleaned
    assert signal.getsignal(signal.SIGTERM) == before
