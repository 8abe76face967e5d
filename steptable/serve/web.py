"""``steptable serve``: textual-serve's Server, each browser session running ``steptable watch`` in a process of its
own, behind steptable.serve.guard's Gate (token, Host, Origin, session cap). Needs the extra ``steptable[serve]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import shlex
import sys
from collections.abc import Sequence
from typing import Any

import aiohttp_jinja2
from aiohttp import WSCloseCode, web
from aiohttp.http_exceptions import HttpProcessingError
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from steptable.serve.guard import Gate, is_loopback
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
#: the close reason of every session's websocket when the server stops
SERVER_STOPPED = "steptable serve stopped (start it again, then Restart)"
#: the close reason of a session whose browser sent a message textual-serve's page does not send
BAD_MESSAGE = "the browser sent a message the server cannot read"
#: put into textual-serve's page: its closed dialog says the reason the server closed the websocket with (the app's
#: exit status or signal and last line of stderr; the session cap) where its script says only "Session ended." (it
#: reads no reason)
CLOSED_REASON_JS = """(() => {
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("close", (event) => {
        const message = document.querySelector(".closed-dialog .message");
        if (message && event.reason) {  // (1013: no session started, the reason says why)
          message.textContent = (event.code === 1013 ? "" : "Session ended: ") + event.reason;
        }
      });
    }
  };
})();"""
#: put into textual-serve's page: the tab its script opens for a file the app delivers (the command palette's
#: screenshot) asks for it with the token (KEY: the page's own); its script names ``/download/KEY`` alone
DOWNLOAD_TOKEN_JS = """(() => {
  const open = window.open.bind(window);
  window.open = (url, ...rest) => {
    const target = new URL(url, window.location.href);
    if (target.origin === window.location.origin && target.pathname.startsWith("/download/")) {
      target.searchParams.set("token", KEY);
    }
    return open(target.href, ...rest);
  };
})();"""


#: a ``<link>`` of textual-serve's page and its URL
_FOREIGN_LINK = re.compile(r'<link\b[^>]*?\bhref="([^"]*)"[^>]*>\s*')


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
        await self.websocket.close(code=code, message=_cut(reason, REASON_BYTES).encode())

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
        print(f"steptable serve: {sanitize(self.command)}\n  open {self.url()}\n  (Ctrl-C to stop)", flush=True)

    async def on_shutdown(self, app: web.Application) -> None:
        """The server stops (Ctrl-C, TERM): every session's app ends with it, its page told so (1001, going away)."""
        sessions = [s for s in self.services if isinstance(s, Session)]
        await asyncio.gather(*(_say_stopped(s.websocket) for s in sessions), return_exceptions=True)
        await asyncio.gather(*(_end(s) for s in list(self.services)), return_exceptions=True)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        """The page, its asset and websocket URLs on the host the browser asked for (an ssh tunnel's local port),
        not the bind address, and no link to another host; its closed dialog says why the session ended
        (CLOSED_REASON_JS); a file the app delivers is asked for with the token (DOWNLOAD_TOKEN_JS)."""
        scheme = "https" if request.secure else "http"
        base = f"{scheme}://{request.host}"
        key = self.gate.token
        context: dict[str, Any] = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{'wss' if request.secure else 'ws'}://{request.host}/ws/{key}",
            "config": {"static": {"url": f"{base}/a/{key}/"}},
            "application": {"name": self.title},
        }
        page = aiohttp_jinja2.render_string("app_index.html", request, context)
        # (its web font's stylesheet on fonts.googleapis.com: blocked by the policy, an error in the console each time)
        page = _FOREIGN_LINK.sub(lambda m: m[0] if m[1].startswith(f"{base}/") else "", page)
        scripts = CLOSED_REASON_JS + "\n" + DOWNLOAD_TOKEN_JS.replace("KEY", json.dumps(key))
        page = page.replace("</head>", f"<script>{scripts}</script></head>", 1)
        return web.Response(text=page, content_type="text/html")

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        """textual-serve's; a message its page does not send (not JSON, not of its shape) ends the session in one
        log line, the websocket closed saying so (1003)."""
        try:
            await super()._process_messages(websocket, app_service)
        except (ValueError, LookupError, TypeError, AttributeError, AssertionError) as e:
            log.warning("a session ended: its browser sent a message the server cannot read (%s: %s)",
                        type(e).__name__, _cut(sanitize(str(e)), 200))
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
            except Exception as e:  # a bad message from the browser, a dead app: this session ends, not the server
                log.exception(e)
            finally:
                if service is not None:
                    await _end(service)
                    self.services.discard(service)
            return websocket
        finally:
            self.gate.close_session()


def _unreadable_request(record: logging.LogRecord) -> bool:
    """aiohttp's log of a request it could not parse (answered 400 before the gate: anyone who reaches the port) as
    one warning line, not a traceback of twenty."""
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
    """Close a session's websocket as the server stops, saying so: its page said "Session ended." as for an app that
    quit, and its Restart button reloads a page that is no longer served."""
    await asyncio.wait_for(websocket.close(code=WSCloseCode.GOING_AWAY, message=SERVER_STOPPED.encode()),
                           QUIT_WAIT_S)


async def _refused(request: web.Request, reason: str) -> web.WebSocketResponse:
    """A websocket accepted and closed at once with ``reason`` (1013, try again later), no app started: a browser
    tells its page nothing of a refused upgrade's HTTP status (the page said only "Session ended.")."""
    websocket = web.WebSocketResponse()
    await websocket.prepare(request)  # (a malformed handshake: answered 400 by aiohttp)
    await websocket.close(code=WSCloseCode.TRY_AGAIN_LATER, message=_cut(reason, REASON_BYTES).encode())
    return websocket


def _cut(text: str, size: int) -> str:
    """``text`` in at most ``size`` bytes of UTF-8, an ellipsis where it was cut."""
    if len(text.encode()) <= size:
        return text
    return text.encode()[:size - 3].decode(errors="ignore") + "\u2026"


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
