"""`steptable serve PATH...`: the watch app in a browser (steptable.serve), behind a token."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any

HINT = "steptable serve: needs textual-serve: pip install 'steptable[serve]'\n"
#: where a token to require may be given out of the process list's sight
TOKEN_ENV = "STEPTABLE_SERVE_TOKEN"


def add_parser(sub: Any) -> None:
    from steptable.cli.reading import positive, positive_seconds

    s = sub.add_parser(
        "serve", help="the watch app in a browser (a token in the URL; localhost unless --host)",
        description="Serve the watch app to a browser: each tab runs `steptable watch PATH` in a process of its own, "
        "ended when the tab closes. Binds 127.0.0.1 (from a laptop: ssh -L 8000:127.0.0.1:8000 HOST, then open the "
        "URL printed). Every request needs the token printed in the URL (or --token); a websocket must come from "
        "the page's own origin. Needs the extra: pip install 'steptable[serve]'.",
    )
    s.add_argument("paths", nargs="+", help="log directories or metrics files (searched recursively)")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    s.add_argument("--token", default=None,
                   help=f"the token to require (default: ${TOKEN_ENV} where set, else a random one, printed in the "
                   f"URL); other users see a command line's arguments in the process list: prefer ${TOKEN_ENV}")
    s.add_argument("--max-sessions", type=positive, default=4, help="browser sessions open at once (default 4)")
    s.add_argument("--theme", default=None, help="dark, light, high-contrast or any Textual theme")
    s.add_argument("--poll", type=positive_seconds, default=None, help="poll files every SECONDS")


def _port(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}") from None
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, got {n}")
    return n


def _cannot_listen(host: str, port: int) -> str | None:
    """Why ``host``:``port`` cannot be listened on now (in use, not an address here), or None."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (as aiohttp binds it)
            s.bind(infos[0][4])
    except OSError as e:
        return e.strerror or str(e)
    return None


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("textual_serve") is None:
        sys.stderr.write(HINT)
        return 2
    from steptable.cli.tail import missing_paths
    from steptable.serve.guard import TOKEN_CHARS, is_loopback, new_token
    from steptable.serve.web import WatchServer, watch_command
    from steptable.table.formatting import sanitize

    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    if token is not None and (len(token) < 16 or not TOKEN_CHARS.fullmatch(token)):
        sys.stderr.write("steptable serve: a token needs 16 characters or more, letters, digits, - and _ (leave it "
                         "out for a random one)\n")
        return 2
    if (busy := _cannot_listen(args.host, args.port)) is not None:  # (before a URL is printed that another holds)
        sys.stderr.write(f"steptable serve: cannot listen on {sanitize(args.host)}:{args.port} ({busy})\n")
        return 2
    for p in missing_paths(args.paths):  # followed anyway: a run that has not started yet is picked up then
        sys.stderr.write(f"steptable serve: no such path (yet): {sanitize(p)}\n")
    from steptable.app.watch import schema_refusal

    if (refused := schema_refusal(args.paths)) is not None:  # (each session's watch would refuse it)
        sys.stderr.write(f"steptable serve: {refused}\n")
        return 2
    if not is_loopback(args.host):
        sys.stderr.write(f"steptable serve: warning: {sanitize(args.host)} is reachable from the network; anyone "
                         "who sees the URL (plain HTTP: its token too) sees the runs. Prefer the default 127.0.0.1 "
                         "and an ssh tunnel (ssh -L PORT:127.0.0.1:PORT HOST)\n")
    server = WatchServer(watch_command(args.paths, args.theme, args.poll), args.host, args.port,
                         token or new_token(), args.max_sessions)
    server.serve()
    return 0
