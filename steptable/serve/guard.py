"""The gate in front of the served app: a token on every request, a websocket only from the page's own origin, a cap
on concurrent sessions. aiohttp only (no textual-serve), so the rules are tested on their own.

- Token: ``?token=T`` (the URL printed at the start), ``Authorization: token T``, or the first segment after
  ``/a/`` (the page's assets) or ``/ws/`` (its websocket): the page names those with the token in their path, as no
  query of ours survives there (textual-serve's script adds its own). No cookie: a cookie is sent to every port of
  a host, another local service's included. Compared in constant time. Missing or wrong: 401, nothing of the app
  served and no process started.
- Host: on a loopback bind the ``Host`` header must name a loopback address (a DNS-rebound name pointing at
  127.0.0.1 is refused even before the token is checked).
- Origin: a websocket's ``Origin`` must be the page's own (``http(s)://`` + the request's ``Host``): another site's
  page cannot drive a session from a visitor's browser. A websocket without an ``Origin`` (not a browser: a script
  that holds the token) is let through.
- Every response says the page loads nothing from another host, is framed by no page, is not cached and sends no
  Referer (:func:`page_headers`), those its handler sends itself included (:meth:`Gate.on_prepare`); a file the app
  delivers (``/download/``: a screenshot's SVG, which holds the runs' text) runs no script and loads nothing.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: the paths whose first segment after these is the token (the page's assets and websocket)
KEYED = ("/a/", "/ws/")
#: what a token may hold (it goes in URL paths as it is)
TOKEN_CHARS = re.compile(r"[A-Za-z0-9_-]+")
_HOST = re.compile(r"[A-Za-z0-9.\-]+(:[0-9]+)?|\[[0-9A-Fa-f:.]+\](:[0-9]+)?")


def page_headers(host: str) -> dict[str, str]:
    """The headers of every response to a request for ``host`` (its Host header): the page loads nothing from another
    host (textual-serve's links a web font's stylesheet: a third party asked each time a run is watched, and a
    failed request on a machine without internet) and sends no Referer (the page's URL carries the token)."""
    own = f"ws://{host} wss://{host}" if _HOST.fullmatch(host) else ""  # (the header is the client's text)
    return {
        "Content-Security-Policy": f"default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' "
                                   f"'unsafe-inline'; connect-src 'self' {own}; img-src 'self' data:; font-src 'self'; "
                                   "frame-ancestors 'none'",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
    }


#: the policy of a file the app delivers: shown in a sandbox (an origin of its own, no script), nothing loaded (a
#: screenshot's SVG names a web font on cdnjs)
DOWNLOAD_POLICY = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:"


def new_token() -> str:
    """A random token: 32 bytes, URL-safe (as Jupyter's)."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """``host`` (a bind address or a Host header's name) is this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(host_header: str) -> str:
    """The name of a Host header without its port (``[::1]:8000`` -> ``::1``)."""
    return urlsplit(f"//{host_header}").hostname or ""


class Gate:
    """Checks every request (an aiohttp middleware) and counts the sessions open."""

    def __init__(self, token: str, loopback: bool, max_sessions: int) -> None:
        self.token = token
        self.loopback = loopback
        self.max_sessions = max_sessions
        self.sessions = 0

    @staticmethod
    def _token_of(request: web.Request) -> str | None:
        """The token the request carries (see the module doc), or None."""
        if (t := request.query.get("token")) is not None:
            return t
        auth = request.headers.get("Authorization", "")
        if auth.lower().startswith("token "):
            return auth[6:].strip()
        path = request.path
        for prefix in KEYED:
            if path.startswith(prefix):
                return path[len(prefix):].split("/", 1)[0]
        return None

    def allowed(self, request: web.Request) -> tuple[int, str] | None:
        """None when ``request`` may be served, else the status and the reason."""
        if self.loopback and not is_loopback(_host_name(request.host)):
            return 403, "this server answers to localhost only"
        given = self._token_of(request)
        if given is None or not secrets.compare_digest(given.encode(), self.token.encode()):
            return 401, "a token is needed: open the URL steptable serve printed (with ?token=...)"
        if request.headers.get("Upgrade", "").lower() == "websocket":
            origin = request.headers.get("Origin")
            if origin is not None and origin not in (f"http://{request.host}", f"https://{request.host}"):
                return 403, "websocket from another origin"
        return None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = self.allowed(request)
        if refused is not None:
            status, reason = refused
            return web.Response(status=status, text=reason + "\n")
        return await handler(request)

    async def on_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        """Every response's headers, set as it is sent (aiohttp's ``on_response_prepare``): a handler that sends its
        response itself (a download, a websocket) returns it sent, past a middleware's reach."""
        response.headers.update(page_headers(request.host))
        if request.path.startswith("/download/"):
            response.headers["Content-Security-Policy"] = DOWNLOAD_POLICY

    def open_session(self) -> bool:
        """Count a session in; False (not counted) when the cap is reached."""
        if self.sessions >= self.max_sessions:
            return False
        self.sessions += 1
        return True

    def close_session(self) -> None:
        self.sessions -= 1
