"""``steptable serve``: textual-serve's Server, each browser session running ``steptable watch`` in a process of its
own, behind steptable.serve.guard's Gate (token, Host, Origin, session cap). Needs the extra ``steptable[serve]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import sys
from collections.abc import Sequence
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from steptable.serve.guard import Gate, is_loopback
from steptable.table.formatting import sanitize

log = logging.getLogger("textual-serve")

#: seconds a session's app gets to quit after its browser left, before its process is killed
QUIT_WAIT_S = 5.0
#: the most cells a browser may ask for a side of its terminal (one asked for 10**30 and the app grew to 8 GB)
MAX_CELLS = 1000


def watch_command(paths: Sequence[str], theme: str | None = None, poll: float | None = None) -> str:
    """The shell command each session runs: this interpreter's ``steptable watch`` over ``paths``, in place of the
    shell (``exec``: textual-serve starts it through ``/bin/sh``, and a kill of a shell that forked it left the app
    running, a child of init, outside the session cap)."""
    argv = [sys.executable, "-m", "steptable", "watch"]
    if theme:
        argv += ["--theme", theme]
    if poll:
        argv += ["--poll", str(poll)]
    return "exec " + shlex.join([*argv, "--", *paths])


def cells(value: Any, default: int) -> int:
    """A terminal side a browser asked for (the query's text or a message's number), as 1 to MAX_CELLS cells."""
    n = to_int(value, default) if isinstance(value, str) else value
    if type(n) is not int:
        raise ValueError(f"not a number of cells: {value!r}")
    return max(1, min(MAX_CELLS, n))


class Session(AppService):  # type: ignore[misc]
    """textual-serve's app of one session, its terminal's size kept within MAX_CELLS a side."""

    async def set_terminal_size(self, width: int, height: int) -> None:
        await super().set_terminal_size(cells(width, 80), cells(height, 24))


class WatchServer(Server):
    """The watch app over HTTP and a websocket, every route behind the Gate."""

    def __init__(self, command: str, host: str, port: int, token: str, max_sessions: int = 4,
                 title: str = "steptable") -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.gate = Gate(token, is_loopback(host), max_sessions)
        self.services: set[AppService] = set()  # the sessions' apps running now

    def url(self) -> str:
        """The URL to open, with the token (printed once at the start)."""
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"http://{host}:{self.port}/?token={self.gate.token}"

    def initialize_logging(self) -> None:
        """textual-serve's logging without the local variables in tracebacks (a request's headers, its token) and
        without the access log (its lines carry the token)."""
        from rich.logging import RichHandler

        logging.basicConfig(level="INFO", format="%(message)s", handlers=[RichHandler(
            show_path=False, show_time=False, rich_tracebacks=True, tracebacks_show_locals=False,
            console=self.console)])
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        # the page's assets and websocket with the token in their path (guard.KEYED: the page passes no cookie)
        app.add_routes([web.get("/ws/{key}", self.handle_websocket),
                        web.static(f"/a/{self.gate.token}", self.statics_path)])
        app.middlewares.append(self.gate.middleware)
        return app

    async def on_startup(self, app: web.Application) -> None:
        # the command quotes the paths given, whose names may hold escape sequences (a shell glob over log dirs)
        print(f"steptable serve: {sanitize(self.command)}\n  open {self.url()}\n  (Ctrl-C to stop)", flush=True)

    async def on_shutdown(self, app: web.Application) -> None:
        """The server stops (Ctrl-C, TERM): every session's app ends with it."""
        await asyncio.gather(*(_end(s) for s in list(self.services)), return_exceptions=True)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        """The page, its asset and websocket URLs on the host the browser asked for (an ssh tunnel's local port),
        not the bind address."""
        scheme = "https" if request.secure else "http"
        base = f"{scheme}://{request.host}"
        key = self.gate.token
        context: dict[str, Any] = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{'wss' if request.secure else 'ws'}://{request.host}/ws/{key}",
            "config": {"static": {"url": f"{base}/a/{key}/"}},
            "application": {"name": self.title},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One session: the app in its own process for as long as the websocket is open; its process ended (killed
        if it does not quit) when the browser leaves. Past the cap: 503, no process."""
        if request.headers.get("Upgrade", "").lower() != "websocket":  # (answered, not a traceback in the log)
            raise web.HTTPBadRequest(text="a websocket is needed here\n")
        if not self.gate.open_session():
            raise web.HTTPServiceUnavailable(text=f"{self.gate.max_sessions} sessions open already\n")
        try:
            websocket = web.WebSocketResponse(heartbeat=15)
            width, height = cells(request.query.get("width", "80"), 80), cells(request.query.get("height", "24"), 24)
            try:
                await websocket.prepare(request)
            except web.HTTPException as e:  # a malformed handshake (no key, no version): answered, one log line
                log.warning("websocket refused (%d): %s", e.status, sanitize((e.text or e.reason).strip()))
                raise
            service: AppService | None = None
            try:

                async def close() -> None:
                    await websocket.close()

                service = Session(self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                                  close=close, download_manager=self.download_manager)
                self.services.add(service)
                await service.start(width, height)
                await self._process_messages(websocket, service)
            except asyncio.CancelledError:
                await websocket.close()
            except Exception as e:  # a bad message from the browser, a dead app: this session ends, not the server
                log.exception(e)
            finally:
                if service is not None:
                    await _end(service)
                    self.services.discard(service)
            return websocket
        finally:
            self.gate.close_session()


async def _end(service: AppService) -> None:
    """Ask the app to quit, then kill its process if it is still there after QUIT_WAIT_S."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(service.stop(), QUIT_WAIT_S)
    proc = service._process
    if proc is not None and proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), QUIT_WAIT_S)
