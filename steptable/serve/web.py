"""``steptable serve``: textual-serve's Server, each browser session running ``steptable watch`` in a process of its
own, behind steptable.serve.guard's Gate (token, Host, Origin, session cap). Needs the extra ``steptable[serve]``.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import socket
import sys
from collections.abc import Sequence
from typing import Any

import aiohttp_jinja2
from aiohttp import WSCloseCode, web
from aiohttp.http_exceptions import HttpProcessingError
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from steptable.serve import page
from steptable.serve.guard import Gate, is_loopback
from steptable.serve.session import QUIT_WAIT_S, REASON_BYTES, Session, cells, cut, end
from steptable.table.formatting import sanitize

log = logging.getLogger("textual-serve")

#: the bind addresses that mean every address of the machine
WILDCARDS = ("0.0.0.0", "::", "")
#: the close reason of every session's websocket when the server stops
SERVER_STOPPED = "steptable serve stopped (start it again, then Restart)"
#: the close reason of a session whose browser sent a message textual-serve's page does not send
BAD_MESSAGE = "the browser sent a message the server cannot read"


def watch_command(paths: Sequence[str], theme: str | None = None, poll: float | None = None) -> str:
    """The shell command each session runs: this interpreter's ``steptable watch`` over ``paths``, in place of the
    shell (``exec``: textual-serve starts it through ``/bin/sh``, and a kill of a shell that forked it left the app
    running, a child of init, outside the session cap). ``--wait``: a path that does not exist yet is followed, as
    serve said at its start (each session refused it, and showed nothing)."""
    argv = [sys.executable, "-m", "steptable", "watch", "--wait"]
    if theme:
        argv += ["--theme", theme]
    if poll:
        argv += ["--poll", str(poll)]
    return "exec " + shlex.join([*argv, "--", *paths])


def open_urls(host: str, port: int, token: str, machine: str) -> list[str]:
    """The URLs that open the page when bound to ``host``: its own; bound to every address (``0.0.0.0``, ``::``),
    whose URL opens nothing from another machine, the URL on ``machine`` (this machine's name, as another machine
    reaches it) then the loopback one (this machine's browser; the only one where ``machine`` is no name)."""

    def url(name: str) -> str:
        return f"http://{f'[{name}]' if ':' in name else name}:{port}/?token={token}"

    if host.strip("[]") not in WILDCARDS:
        return [url(host.strip("[]"))]
    loopback = "::1" if ":" in host else "127.0.0.1"
    named = machine not in ("", "localhost") and not is_loopback(machine)
    return [url(machine), url(loopback)] if named else [url(loopback)]


class WatchServer(Server):
    """The watch app over HTTP and a websocket, every route behind the Gate."""

    def __init__(self, command: str, host: str, port: int, token: str, max_sessions: int = 4,
                 title: str = "steptable") -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.gate = Gate(token, is_loopback(host), max_sessions)
        self.services: set[AppService] = set()  # the sessions' apps running now

    def urls(self) -> list[str]:
        """The URLs to open, with the token (printed once at the start): see :func:`open_urls`."""
        return open_urls(self.host, self.port, self.gate.token, socket.gethostname())

    def initialize_logging(self) -> None:
        """textual-serve's logging without the local variables in tracebacks (a request's headers, its token),
        without the access log (its lines carry the token), and a request that cannot be parsed in one line
        (:func:`_unreadable_request`)."""
        from rich.logging import RichHandler

        logging.basicConfig(level="INFO", format="%(message)s", handlers=[RichHandler(
            show_path=False, show_time=False, rich_tracebacks=True, tracebacks_show_locals=False,
            console=self.console)])
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
        logging.getLogger("aiohttp.server").addFilter(_unreadable_request)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        # the page's assets and websocket with the token in their path (guard.KEYED: the page passes no cookie)
        app.add_routes([web.get("/ws/{key}", self.handle_websocket),
                        web.static(f"/a/{self.gate.token}", self.statics_path)])
        app.middlewares.append(self.gate.middleware)
        app.on_response_prepare.append(self.gate.on_prepare)
        return app

    async def on_startup(self, app: web.Application) -> None:
        # the command quotes the paths given, whose names may hold escape sequences (a shell glob over log dirs)
        first, *more = (sanitize(u) for u in self.urls())  # (the machine's name: the system's text)
        lines = [f"steptable serve: {sanitize(self.command)}", f"  open {first}",
                 *(f"    or {u} (on this machine)" for u in more), "  (Ctrl-C to stop)"]
        print("\n".join(lines), flush=True)

    async def on_shutdown(self, app: web.Application) -> None:
        """The server stops (Ctrl-C, TERM): every session's app ends with it, its page told so (1001, going away)."""
        sessions = [s for s in self.services if isinstance(s, Session)]
        await asyncio.gather(*(_say_stopped(s.websocket) for s in sessions), return_exceptions=True)
        await asyncio.gather(*(end(s) for s in list(self.services)), return_exceptions=True)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        """The page, its asset and websocket URLs on the host the browser asked for (an ssh tunnel's local port),
        not the bind address; as steptable.serve.page finishes it (no link to another host; the reason a session
        ended said; a delivered file asked for with the token)."""
        scheme = "https" if request.secure else "http"
        base = f"{scheme}://{request.host}"
        key = self.gate.token
        context: dict[str, Any] = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{'wss' if request.secure else 'ws'}://{request.host}/ws/{key}",
            "config": {"static": {"url": f"{base}/a/{key}/"}},
            "application": {"name": self.title},
        }
        html = aiohttp_jinja2.render_string("app_index.html", request, context)
        return web.Response(text=page.finish(html, base, key), content_type="text/html")

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        """textual-serve's; a message its page does not send (not JSON, not of its shape) ends the session in one
        log line, the websocket closed saying so (1003)."""
        try:
            await super()._process_messages(websocket, app_service)
        except (ValueError, LookupError, TypeError, AttributeError, AssertionError) as e:
            log.warning("a session ended: its browser sent a message the server cannot read (%s: %s)",
                        type(e).__name__, cut(sanitize(str(e)), 200))
            await websocket.close(code=WSCloseCode.UNSUPPORTED_DATA, message=BAD_MESSAGE.encode())

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One session: the app in its own process for as long as the websocket is open; its process ended (killed
        if it does not quit) when the browser leaves. Past the cap: the websocket closed at once with why (1013), no
        process."""
        if request.headers.get("Upgrade", "").lower() != "websocket":  # (answered, not a traceback in the log)
            raise web.HTTPBadRequest(text="a websocket is needed here\n")
        if not self.gate.open_session():
            n = self.gate.max_sessions
            return await _refused(request, f"{n} session{'s are' if n > 1 else ' is'} open already (serve "
                                           f"--max-sessions {n}): close one, then Restart")
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
                service = Session(self.command, websocket, self.download_manager)
                self.services.add(service)
                await service.start(width, height)
                await self._process_messages(websocket, service)  # (until the browser leaves or the app ends)
            except asyncio.CancelledError:
                await websocket.close()
            except Exception as e:  # a dead app, anything unforeseen: this session ends, not the server
                log.exception(e)
            finally:
                if service is not None:
                    await end(service)
                    self.services.discard(service)
            return websocket
        finally:
            self.gate.close_session()


def _unreadable_request(record: logging.LogRecord) -> bool:
    """aiohttp's log of a request it could not parse (answered 400 before the gate: anyone who reaches the port) as
    one warning line without its traceback, its text made inert."""
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, HttpProcessingError):
        first = (exc.message or "").strip().splitlines() or [""]
        remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
        record.msg = "a request from %s could not be read (%d): %s"
        record.args = (remote, exc.code, sanitize(first[0]))
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


async def _say_stopped(websocket: web.WebSocketResponse) -> None:
    """Close a session's websocket as the server stops, saying so (1001): the page tells the user to start the
    server again, its Restart button reloading the page from the server."""
    await asyncio.wait_for(websocket.close(code=WSCloseCode.GOING_AWAY, message=SERVER_STOPPED.encode()),
                           QUIT_WAIT_S)


async def _refused(request: web.Request, reason: str) -> web.WebSocketResponse:
    """A websocket accepted and closed at once with ``reason`` (1013, try again later), no app started: a browser
    passes a refused upgrade's HTTP status to no page, whose dialog would say only "Session ended."."""
    websocket = web.WebSocketResponse()
    await websocket.prepare(request)  # (a malformed handshake: answered 400 by aiohttp)
    await websocket.close(code=WSCloseCode.TRY_AGAIN_LATER, message=cut(reason, REASON_BYTES).encode())
    return websocket


