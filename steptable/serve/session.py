"""One browser session of ``steptable serve``: textual-serve's app service for its websocket, the app in a process of
its own, ended with the session (killed if it does not quit); an app that ends by itself closes the session saying
why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from typing import Any

from aiohttp import WSCloseCode, web
from textual_serve.app_service import AppService
from textual_serve.server import to_int

from steptable.table.formatting import sanitize

log = logging.getLogger("textual-serve")

#: seconds a session's app gets to quit after its browser left, before its process is killed
QUIT_WAIT_S = 5.0
#: the most cells a browser may ask for a side of its terminal (one asked for 10**30 and the app grew to 8 GB)
MAX_CELLS = 1000
#: the most bytes of a websocket close frame's reason (RFC 6455: a control frame's 125, less the code's 2)
REASON_BYTES = 123
#: the most of a session app's stderr kept for the log (the end: a traceback's last lines)
STDERR_KEEP = 64 * 1024


def cells(value: Any, default: int) -> int:
    """A terminal side a browser asked for (the query's text or a message's number), as 1 to MAX_CELLS cells."""
    n = to_int(value, default) if isinstance(value, str) else value
    if type(n) is not int:
        raise ValueError(f"not a number of cells: {value!r}")
    return max(1, min(MAX_CELLS, n))


class Session(AppService):  # type: ignore[misc]
    """textual-serve's app of one session on ``websocket``, its terminal's size kept within MAX_CELLS a side. When
    the app's process ends by itself (it crashed, was killed, refused its paths) while the browser is there, the
    websocket is closed with why (:func:`ended_reason`), which ends the session and frees its slot; the app's stderr
    goes to the log once."""

    def __init__(self, command: str, websocket: web.WebSocketResponse, download_manager: Any) -> None:
        super().__init__(command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                         close=self._quit, download_manager=download_manager)
        self.websocket = websocket
        self.last_error = ""  # the app's last line of stderr
        self._stderr: asyncio.Task[None] | None = None

    async def set_terminal_size(self, width: int, height: int) -> None:
        await super().set_terminal_size(cells(width, 80), cells(height, 24))

    async def _quit(self) -> None:  # (the app said it exits: a normal close)
        await self.websocket.close()

    async def run(self) -> None:
        """textual-serve's: the app's output to the browser until it ends; then, if the browser is still there, the
        websocket closed with why the app ended."""
        proc = self._process
        assert proc is not None and proc.stderr is not None
        # read here, not by textual-serve: it logs the stderr of an app that fails to start twice, and all of it
        self._stderr = asyncio.create_task(self._say_stderr(proc.stderr))
        quiet = asyncio.StreamReader()
        quiet.feed_eof()
        proc.stderr = quiet
        await super().run()  # (until the app's output ends)
        if not self.websocket.closed:  # (closed: the browser left or the app quit; the server ends the process)
            await self._app_ended(proc)

    async def _app_ended(self, proc: asyncio.subprocess.Process) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), QUIT_WAIT_S)
        if self._stderr is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stderr), QUIT_WAIT_S)
        reason = ended_reason(proc.returncode, self.last_error)
        log.warning("a session ended: %s", reason)
        code = WSCloseCode.OK if proc.returncode == 0 else WSCloseCode.INTERNAL_ERROR
        await self.websocket.close(code=code, message=cut(reason, REASON_BYTES).encode())

    async def _say_stderr(self, stream: asyncio.StreamReader) -> None:
        kept = bytearray()
        while data := await stream.read(4096):
            kept += data
            del kept[:-STDERR_KEEP]
        text = kept.decode("utf-8", "replace")
        if text.strip():
            self.last_error = sanitize(text.strip().splitlines()[-1])
            sys.stdout.write(sanitize(text, keep_newlines=True).rstrip("\n") + "\n")
            sys.stdout.flush()


def ended_reason(returncode: int | None, last_error: str) -> str:
    """Why a session's app ended, for the browser and the log: its exit status or signal, and its last line of
    stderr."""
    if returncode is None:
        why = "the app closed its output"
    elif returncode < 0:
        why = f"the app was killed (signal {-returncode})"
    else:
        why = f"the app ended (exit status {returncode})"
    return f"{why}: {last_error}" if last_error else why


def cut(text: str, size: int) -> str:
    """``text`` in at most ``size`` bytes of UTF-8, an ellipsis where it was cut."""
    if len(text.encode()) <= size:
        return text
    return text.encode()[:size - 3].decode(errors="ignore") + "\u2026"


async def end(service: AppService) -> None:
    """Ask the app to quit and wait for its process to end; kill it if it is still there after QUIT_WAIT_S."""
    proc = service._process
    deadline = asyncio.get_running_loop().time() + QUIT_WAIT_S
    with contextlib.suppress(Exception):
        await asyncio.wait_for(service.stop(), QUIT_WAIT_S)  # (until the app closed its output)
    if proc is not None and proc.returncode is None:  # (its process may still be ending: a kill would cut it short)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), max(0.0, deadline - asyncio.get_running_loop().time()))
    if proc is not None and proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), QUIT_WAIT_S)
