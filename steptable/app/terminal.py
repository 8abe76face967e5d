"""The watch app's terminal driver: Textual's Linux driver, except that a terminal that goes away (its pty closed: a
tmux session killed, a window closed, an ssh link dropped) ends the app at once and is never written to again.

Textual's own driver queues its output for a writer thread; on a hung-up pty that thread dies on the first EIO, the
bounded queue fills, and the shutdown's "put the terminal back" writes block the main thread for good."""

from __future__ import annotations

import asyncio
import functools
import select
import threading
from typing import IO, Any

from textual.drivers.linux_driver import LinuxDriver

#: poll's answer for a descriptor whose other end is gone (a hung-up tty reports HUP and ERR; NVAL: closed under us)
_GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL
#: how often the watcher looks when no hangup wakes it (it also ends this long after the app stops)
_WATCH_S = 0.1
#: the exit code of an app whose terminal went away without a signal: a hangup's, as a shell reports it
HANGUP_CODE = 128 + 1


def gone(*fds: int) -> bool:
    """Whether any of ``fds`` is hung up, in error or closed (a poll that does not wait)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, 0)  # (no events asked: poll reports HUP, ERR and NVAL regardless)
    try:
        return any(mask & _GONE for _fd, mask in poller.poll(0))
    except OSError:
        return True


class _GuardedFile:
    """The writer thread's file: each write first checks that the terminal is still there; once it is gone (or a
    write fails) every later write and flush is dropped, so the writer thread keeps draining its queue."""

    def __init__(self, file: IO[str], fds: tuple[int, ...], on_gone: threading.Event) -> None:
        self._file = file
        self._fds = fds
        self.gone = on_gone

    def _alive(self) -> bool:
        if not self.gone.is_set() and gone(*self._fds):
            self.gone.set()
        return not self.gone.is_set()

    def write(self, text: str) -> int:
        if self._alive():
            try:
                return self._file.write(text)
            except (OSError, ValueError):  # (EIO from a pty hung up between the check and the write; a closed file)
                self.gone.set()
        return len(text)

    def flush(self) -> None:
        if self._alive():
            try:
                self._file.flush()
            except (OSError, ValueError):
                self.gone.set()

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return True


class GuardedDriver(LinuxDriver):
    """``LinuxDriver`` whose output is dropped once the terminal is gone, and which asks the app to exit (return
    code ``HANGUP_CODE``) as soon as its terminal hangs up, signal or not (a pty that is not the process's controlling
    terminal hangs up without a HUP)."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.gone = threading.Event()
        file = self._file
        assert file is not None
        self._fds = (self.fileno, file.fileno())
        self._file = _GuardedFile(file, self._fds, self.gone)  # type: ignore[assignment]
        self._stop_watch = threading.Event()
        self._watcher: threading.Thread | None = None

    def start_application_mode(self) -> None:
        super().start_application_mode()  # type: ignore[no-untyped-call]
        loop = asyncio.get_running_loop()
        self._watcher = threading.Thread(target=self._watch, args=(loop,), name="steptable-terminal", daemon=True)
        self._watcher.start()

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        poller = select.poll()
        for fd in self._fds:
            poller.register(fd, 0)
        while not self._stop_watch.is_set():
            try:
                hung = any(mask & _GONE for _fd, mask in poller.poll(_WATCH_S * 1000))
            except OSError:
                hung = True
            if hung or self.gone.is_set():
                self.gone.set()
                try:
                    loop.call_soon_threadsafe(functools.partial(self._app.exit, return_code=HANGUP_CODE))
                except RuntimeError:  # (the loop is closed: the app is over already)
                    pass
                return

    def close(self) -> None:
        self._stop_watch.set()
        super().close()
