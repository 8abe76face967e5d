"""The watch app's driver under ``steptable serve`` (textual-serve): Textual's web driver, except that the app ends
when its server does.

The server talks to the app over the app's stdin and stdout. When the server dies, whatever the signal (the OOM
killer's SIGKILL too), the app's stdin reaches end of file; Textual's driver only stops reading then, and the app
lived on, a child of init, for good. End of file is the one sign that is there on every platform."""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

from textual.drivers.web_driver import WebDriver

from steptable.app.terminal import HANGUP_CODE


class ServedDriver(WebDriver):
    """``WebDriver`` that asks the app to exit (return code ``HANGUP_CODE``, as a terminal that went away) once its
    stdin ends without the app stopping it, and that drops its output once the server's end of stdout is gone (a
    write there fails with EPIPE, in the middle of a frame or of the app's shutdown)."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.gone = threading.Event()  # the server is gone: nothing is written any more
        self._write = functools.partial(self._write_or_drop)

    def _write_or_drop(self, data: bytes) -> int:
        if not self.gone.is_set():
            try:
                return os.write(self.fileno, data)
            except OSError:
                self.gone.set()
        return len(data)

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if self.exit_event.is_set():  # (the app stopped the input: it is exiting already)
            return
        try:
            self._loop.call_soon_threadsafe(functools.partial(self._app.exit, return_code=HANGUP_CODE))
        except RuntimeError:  # (the loop is closed: the app is over already)
            pass
