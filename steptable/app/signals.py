"""TERM and HUP (``timeout``, tmux kill-pane, a closed window, a harness stopping the viewer) end the watch app as q
does. Their default action kills the process where it stands, leaving the terminal in the alternate screen with mouse
tracking on and the cursor hidden, and the demo's temporary directory behind."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

QUIT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class _Exits(Protocol):
    def exit(self) -> None: ...


class _Runs(_Exits, Protocol):
    @property
    def return_code(self) -> int | None: ...

    def run(self) -> Any: ...


def run_until_quit(app: _Runs) -> int:
    """Run ``app`` until q, TERM, HUP or its terminal going away; the exit code (128 + the signal for a signal, as a
    shell reports a killed command; a hangup's for a terminal gone without one). On Linux and macOS a Textual app runs
    on ``GuardedDriver``, which never writes to, nor waits on, a terminal that is gone; under textual-serve on
    ``ServedDriver``, which ends the app when its server is gone."""
    from textual.app import App

    if isinstance(app, App) and app.driver_class.__name__ == "LinuxDriver":
        from steptable.app.terminal import GuardedDriver

        app.driver_class = GuardedDriver
    elif isinstance(app, App) and app.driver_class.__name__ == "WebDriver":
        from steptable.app.webdriver import ServedDriver

        app.driver_class = ServedDriver
    with quit_on_signals(app) as got:
        app.run()
    return 128 + got[0] if got else app.return_code or 0


@contextmanager
def quit_on_signals(app: _Exits) -> Iterator[list[int]]:
    """While inside: TERM and HUP ask ``app`` to exit (the driver puts the terminal back, the callers' ``finally``
    blocks run); the list holds the signals received. The handlers before are put back after. A signal ignored
    before (nohup) stays ignored; off the main thread nothing is set (handlers can only be set there)."""
    got: list[int] = []

    def handler(signum: int, _frame: Any) -> None:
        got.append(signum)
        try:  # (the handler runs in the main thread, between two steps of whatever it was doing: the app's loop is
            loop = asyncio.get_running_loop()  # woken up to exit, as a thread would ask it)
        except RuntimeError:  # its loop has not started yet (it exits as soon as it does) or is over
            app.exit()
            return
        try:
            loop.call_soon_threadsafe(app.exit)
        except RuntimeError:  # (the loop is closing)
            pass

    with _handling(handler):
        yield got


@contextmanager
def end_on_signals() -> Iterator[None]:
    """While inside: TERM and HUP end the process through ``SystemExit`` (128 + the signal, as a shell reports a
    killed command), so the callers' ``finally`` blocks run: the demo's temporary directory goes also when a TERM
    comes before its app is up. ``quit_on_signals`` takes over while the app runs."""

    def handler(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    with _handling(handler):
        yield


@contextmanager
def _handling(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` for TERM and HUP while inside, the handlers before put back after. A signal ignored before (nohup)
    stays ignored; off the main thread nothing is set (handlers can only be set there)."""
    before: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in QUIT_SIGNALS:
            old = signal.getsignal(sig)
            if old == signal.SIG_IGN:
                continue
            signal.signal(sig, handler)
            before[sig] = signal.SIG_DFL if old is None else old
    try:
        yield
    finally:
        for sig, old in before.items():
            signal.signal(sig, old)
