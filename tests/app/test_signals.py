"""steptable.app.signals: TERM and HUP end the watch app and the demo as q does (the handlers set and put back)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.app.helpers import SIGNALS, SIZE, SignalledApp, handlers_are_ours, make_runs, manual_app, sync

pytestmark = pytest.mark.anyio


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
    """The app's own exit runs (its driver puts the terminal back), not the default action, which kills the
    process where it stands and leaves the terminal in the alternate screen with mouse tracking on and no cursor."""
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


def test_term_ends_watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from steptable.app import watch as app_mod

    app = SignalledApp()
    monkeypatch.setattr(app_mod, "make_app", lambda paths, **kw: app)
    before = {s: signal.getsignal(s) for s in SIGNALS}
    assert app_mod.run_watch([str(tmp_path)]) == 128 + signal.SIGTERM  # (q: 0)
    assert app.handlers_were_ours and app.asked.is_set()
    assert {s: signal.getsignal(s) for s in SIGNALS} == before


def test_a_term_before_the_demo_app_is_up_ends_through_the_cleanup() -> None:
    """A TERM in the second before the demo's app is up ends it through SystemExit (the callers' finally blocks
    run, the temporary directory goes), the handlers put back."""
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
