"""steptable serve's server: every route behind the token, a websocket only from the page's origin and under
the session cap, the headers of every response, the log, and a real session (textual-serve's websocket protocol
driven here) that shows the demo run's rows."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual_serve")
aiohttp = pytest.importorskip("aiohttp")

from tests.serve.helpers import (  # noqa: E402
    ANSI,
    TOKEN,
    a_run,
    apps_of,
    delivered,
    get_status,
    get_with_headers,
    kill_all,
    run,
    serving,
    until_closed,
    until_drawn,
    watch_processes,
)


def test_http_needs_the_token_on_the_page_and_the_assets(server: tuple[int, Any]) -> None:
    port, _ = server
    base = f"http://127.0.0.1:{port}"
    for path in ("/", "/static/js/textual.js", "/a/wrong/js/textual.js", "/static/css/xterm.css", "/ws", "/ws/wrong",
                 "/download/x"):
        assert run(get_status(base + path)) == 401, path
        assert run(get_status(base + path + "?token=wrong")) == 401, path
        # no cookie lets anything through (a cookie goes to every port of the host: another local service's too)
        assert run(get_status(base + path, headers={"Cookie": f"steptable-serve-{port}={TOKEN}"})) == 401, path
    assert run(get_status(f"{base}/?token={TOKEN}")) == 200
    assert run(get_status(f"{base}/a/{TOKEN}/js/textual.js")) == 200  # the page's assets, the token in their path
    assert run(get_status(f"{base}/", headers={"Authorization": f"token {TOKEN}"})) == 200
    assert run(get_status(f"{base}/ws/{TOKEN}")) == 400  # not a websocket: answered, no traceback with the headers


def test_the_page_names_its_assets_and_websocket_with_the_token_and_sets_no_cookie(server: tuple[int, Any]) -> None:
    port, _ = server

    async def go() -> tuple[str, str]:
        async with aiohttp.ClientSession() as s, s.get(f"http://localhost:{port}/?token={TOKEN}") as r:
            return r.headers.get("Set-Cookie", ""), await r.text()

    cookie, page = run(go())
    assert cookie == ""
    # (the host the browser asked for: an ssh tunnel's port too)
    assert f'data-session-websocket-url="ws://localhost:{port}/ws/{TOKEN}"' in page
    assert f'src="http://localhost:{port}/a/{TOKEN}/js/textual.js"' in page


def test_a_foreign_host_or_origin_is_refused(server: tuple[int, Any]) -> None:
    port, _ = server
    base = f"http://127.0.0.1:{port}"
    assert run(get_status(f"{base}/?token={TOKEN}", headers={"Host": f"evil.example:{port}"})) == 403  # DNS rebinding

    async def ws(origin: str) -> int:
        async with aiohttp.ClientSession() as s:
            try:
                async with s.ws_connect(f"{base}/ws?token={TOKEN}", origin=origin) as w:
                    await w.close()
                    return 101
            except aiohttp.WSServerHandshakeError as e:
                return int(e.status)

    assert run(ws("http://evil.example")) == 403
    assert run(ws(f"http://127.0.0.1:{port}.evil.example")) == 403


def test_a_session_shows_the_demo_rows_and_its_process_ends_with_it(demo_dir: Path) -> None:

    last = json.loads((demo_dir / "routeA" / "metrics.jsonl").read_text().splitlines()[-1])
    with serving(demo_dir, "--max-sessions", "1") as (port, _):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[str, list[int]]:
            screen = ""
            async with aiohttp.ClientSession() as s:
                async with s.ws_connect(f"{origin}/ws/{TOKEN}?width=200&height=50", origin=origin) as w:
                    await w.send_json(["resize", {"width": 200, "height": 50}])
                    deadline = time.monotonic() + 60
                    while time.monotonic() < deadline and not re.search(rf"\n\s*{last['step']}\s", screen):
                        msg = await w.receive(timeout=deadline - time.monotonic())
                        if msg.type == aiohttp.WSMsgType.BINARY:
                            screen += ANSI.sub("\n", msg.data.decode("utf-8", "replace"))
                        elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                            break
                    running = watch_processes(demo_dir)
            return screen, running

        screen, running = run(go())
        assert running, "the session's app ran in a process of its own"
        assert re.search(rf"\n\s*{last['step']}\s", screen), screen[-2000:]  # the last step's row was drawn
        deadline = time.monotonic() + 20
        while watch_processes(demo_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert watch_processes(demo_dir) == []  # the browser left: its app ended


def test_a_session_past_the_cap_is_closed_with_why_and_starts_no_app(tmp_path: Path) -> None:
    """A tab past --max-sessions got the upgrade refused with 503, which a browser does not tell its page: the page
    said "Session ended." (or stayed blank). The websocket is accepted and closed at once (1013, try again later),
    its reason naming the cap, and no app is started for it; the slot frees once the first session ends."""
    logs = a_run(tmp_path / "logs")
    with serving(logs, "--max-sessions", "1") as (port, _):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[tuple[int | None, str], list[int], list[int]]:
            async with aiohttp.ClientSession() as s:
                async with s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin):
                    first = await apps_of(logs)
                    async with s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as second:
                        refused = await until_closed(second)
                    apps = watch_processes(logs)
                return refused, first, apps

        try:
            refused, first, apps = run(go())
        finally:
            kill_all(watch_processes(logs))
    assert refused == (aiohttp.WSCloseCode.TRY_AGAIN_LATER, "1 session is open already (serve --max-sessions 1): "
                                                            "close one, then Restart")
    assert len(first) == 1 and apps == first


def test_the_watch_app_starts_under_the_web_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from steptable.cli import main

    monkeypatch.setattr(sys, "stdin", io.StringIO())
    assert main._terminal() is False
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
    assert main._terminal() is True


def test_the_start_up_line_names_a_hostile_path_as_inert_text(tmp_path: Path) -> None:
    """The command printed at the start quotes the paths given (a shell glob over log directories passes their
    names): an escape sequence in one (a clipboard write, a screen clear, a bidi override) is made inert there; the
    sessions' command keeps the path as it is."""
    logs = tmp_path / "logs\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e"
    (logs / "a").mkdir(parents=True)
    (logs / "a" / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    with serving(logs) as (_, proc):
        pass
    assert proc.stdout is not None
    out = proc.stdout.read()
    assert "steptable serve: " in out and "watch --wait -- " in out and "logs52;c;ZXZpbA==" not in out
    assert str(tmp_path / "logs") in out
    assert not any(bad in out for bad in ("\x1b", "\x07", "\u202e"))


@pytest.mark.parametrize(("host", "machine", "urls"), [
    ("0.0.0.0", "gpu-node-7", ["gpu-node-7:8000", "127.0.0.1:8000"]),
    ("", "gpu-node-7.cluster.example", ["gpu-node-7.cluster.example:8000", "127.0.0.1:8000"]),
    ("::", "gpu-node-7", ["gpu-node-7:8000", "[::1]:8000"]),
    ("0.0.0.0", "localhost", ["127.0.0.1:8000"]),  # (no name another machine could reach it by)
    ("0.0.0.0", "", ["127.0.0.1:8000"]),
    ("127.0.0.1", "gpu-node-7", ["127.0.0.1:8000"]),
    ("::1", "gpu-node-7", ["[::1]:8000"]),
    ("192.168.1.2", "gpu-node-7", ["192.168.1.2:8000"]),
])
def test_the_urls_to_open_name_the_machine_on_a_wildcard_bind(host: str, machine: str, urls: list[str]) -> None:
    """Bound to every address, the URL printed was http://0.0.0.0:PORT/..., which opens nothing from another
    machine: the machine's name first, then the loopback URL for a browser on the machine itself."""
    from steptable.serve.web import open_urls

    assert open_urls(host, 8000, TOKEN, machine) == [f"http://{u}/?token={TOKEN}" for u in urls]


def test_the_start_up_lines_on_a_wildcard_bind(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``--host 0.0.0.0``: the start-up lines give the machine's name (``socket.gethostname()``, inert) and the
    loopback URL (no address bound here)."""
    from steptable.serve.web import WatchServer

    monkeypatch.setattr(socket, "gethostname", lambda: "gpu-node-7\x1b[2J")
    run(WatchServer("exec steptable watch -- logs", "0.0.0.0", 8123, TOKEN).on_startup(aiohttp.web.Application()))
    out = capsys.readouterr().out
    assert out.splitlines()[1:] == [f"  open http://gpu-node-7:8123/?token={TOKEN}",
                                    f"    or http://127.0.0.1:8123/?token={TOKEN} (on this machine)",
                                    "  (Ctrl-C to stop)"]


def test_the_page_fetches_nothing_from_another_host_and_sends_no_referer(server: tuple[int, Any]) -> None:
    """textual-serve's page links a web font's stylesheet on fonts.googleapis.com: each watch asked a third party
    (and failed offline); then the policy blocked it, an error in the browser's console on each load. The page
    names no URL off its own host, the policy would forbid one, and its URL (with the token) goes to no one as a
    Referer."""
    port, _ = server

    async def go() -> tuple[Any, str]:
        async with aiohttp.ClientSession() as s, s.get(f"http://localhost:{port}/?token={TOKEN}") as r:
            return r.headers, await r.text()

    headers, page = run(go())
    policy = dict(d.strip().split(" ", 1) for d in headers["Content-Security-Policy"].split(";"))
    assert policy["default-src"] == "'self'" and headers["Referrer-Policy"] == "no-referrer"
    # framed by no page (another port's page framed a live session), and not cached (the URL holds the token)
    assert policy["frame-ancestors"] == "'none'" and headers["X-Frame-Options"] == "DENY"
    assert headers["Cache-Control"] == "no-store"
    assert policy["connect-src"] == f"'self' ws://localhost:{port} wss://localhost:{port}"
    kinds = {"link": "style-src", "script": "script-src", "img": "img-src"}
    named = re.findall(r"<(link|script|img)\b[^>]*?(?:href|src)=\"([^\"]+)\"", page)
    foreign = [(tag, url) for tag, url in named if not url.startswith((f"http://localhost:{port}/", "/"))]
    assert len(named) >= 2 and foreign == []
    for tag, directive in kinds.items():  # (and the policy would block one)
        allowed = policy.get(directive, policy["default-src"]).split()
        assert all(a in ("'self'", "'unsafe-inline'", "data:") for a in allowed), (tag, allowed)
    _, css = run(get_with_headers(f"http://localhost:{port}/a/{TOKEN}/css/xterm.css"))
    assert "Content-Security-Policy" in css  # (the assets too)


def test_a_message_the_page_does_not_send_ends_its_session_in_one_log_line(tmp_path: Path) -> None:
    """A token holder's message that is not JSON, or not of the page's shape, ended the session with a close that
    said nothing (1000, as a normal quit) and a traceback of twenty lines in the server's log."""
    from steptable.serve.web import BAD_MESSAGE

    logs = a_run(tmp_path / "logs")
    closes = []
    with serving(logs) as (port, proc):
        origin = f"http://127.0.0.1:{port}"

        async def go(message: str) -> tuple[int | None, str]:
            async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as w:
                await until_drawn(w, r"\n\s*4321\s")
                await w.send_str(message)
                return await until_closed(w)

        try:
            for message in ("not json \x1b[2J", '["resize", {"width": 80}]', '["stdin", 7]'):
                closes.append(run(go(message)))
        finally:
            kill_all(watch_processes(logs))
    assert proc.stdout is not None
    log = proc.stdout.read()
    assert closes == [(aiohttp.WSCloseCode.UNSUPPORTED_DATA, BAD_MESSAGE)] * 3
    said = [line for line in log.splitlines() if "cannot read" in line]
    assert "Traceback" not in log and len(said) == 3 and "\x1b" not in log, log


def test_the_sessions_are_told_the_server_stopped(tmp_path: Path) -> None:
    """Ctrl-C (or TERM) on the server closed each session's websocket as an app that quit does (1000, no reason):
    the page said "Session ended." and its Restart button reloaded a page no longer served."""
    from steptable.serve.web import SERVER_STOPPED

    logs = a_run(tmp_path / "logs")
    with serving(logs) as (port, proc):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[int | None, str]:
            async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as w:
                await until_drawn(w, r"\n\s*4321\s")
                proc.send_signal(signal.SIGINT)
                return await until_closed(w)

        try:
            said = run(go())
        finally:
            kill_all(watch_processes(logs))
    assert said == (aiohttp.WSCloseCode.GOING_AWAY, SERVER_STOPPED)


def test_a_malformed_websocket_handshake_is_answered_400_in_one_log_line(demo_dir: Path) -> None:
    """An upgrade with the token but no Sec-WebSocket-Key nor -Version got no answer at all (the connection
    dropped) and a traceback of a hundred lines in the server's log."""
    with serving(demo_dir) as (port, proc):
        base = f"http://127.0.0.1:{port}"
        status = run(get_status(f"{base}/ws/{TOKEN}", headers={"Upgrade": "websocket", "Connection": "Upgrade",
                                                             "Origin": base}))
    assert proc.stdout is not None
    log = proc.stdout.read()
    assert status == 400
    assert "Traceback" not in log and len([line for line in log.splitlines() if "refused" in line]) == 1, log


def test_a_request_that_cannot_be_parsed_is_logged_in_one_line(demo_dir: Path) -> None:
    """A request aiohttp cannot parse (a bad header name, a bare control character), from anyone who reaches the
    port, without the token, put a traceback of twenty lines into the server's log each time."""
    with serving(demo_dir) as (port, proc):
        answers = []
        for request in (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bad\x1b[31m: a\r\n\r\n",
                        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \x07x\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", port)) as c:
                c.sendall(request)
                c.settimeout(30)
                answers.append(c.recv(64).split(b"\r\n", 1)[0])
    assert proc.stdout is not None
    log = proc.stdout.read()
    assert answers == [b"HTTP/1.0 400 Bad Request"] * 2
    said = [line for line in log.splitlines() if "could not be read" in line]
    assert "Traceback" not in log and len(said) == 2, log
    assert "Invalid header token" in said[0] and "\x1b" not in log and "\x07" not in log


def test_a_delivered_screenshot_is_sandboxed_and_loads_nothing(tmp_path: Path) -> None:
    """A response its handler sends itself (textual-serve's download of a file the app delivers) went out before
    the gate's middleware could add its headers: the screenshot's SVG, which holds the runs' text, came with no
    policy at all (its web font fetched from cdnjs, a script in it run on the server's origin). It is sandboxed
    now, loads nothing, and sends no Referer."""
    logs = a_run(tmp_path / "logs")
    with serving(logs) as (port, _):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[int, Any, str]:
            async with aiohttp.ClientSession() as s:
                async with s.ws_connect(f"{origin}/ws/{TOKEN}?width=120&height=40", origin=origin) as w:
                    await until_drawn(w, r"\n\s*4321\s")
                    await w.send_json(["stdin", "\x10"])  # ctrl+p: the command palette
                    await until_drawn(w, r"Search")
                    await w.send_json(["stdin", "screenshot"])
                    await until_drawn(w, r"(?i)screenshot")
                    await w.send_json(["stdin", "\r"])
                    key = await asyncio.wait_for(delivered(w), 60)
                    async with s.get(f"{origin}/download/{key}?token={TOKEN}") as r:  # (the app sends it)
                        return r.status, r.headers, await r.text()

        try:
            status, headers, svg = run(go())
        finally:
            kill_all(watch_processes(logs))
    assert status == 200 and "<svg" in svg and "https://" in svg  # (Rich's SVG names its web font's URL)
    policy = dict(d.strip().partition(" ")[::2] for d in headers["Content-Security-Policy"].split(";"))
    assert "sandbox" in policy and policy["default-src"] == "'none'" and "https:" not in str(policy)
    assert policy["font-src"] == "data:" and "script-src" not in policy
    assert headers["Referrer-Policy"] == "no-referrer" and headers["X-Content-Type-Options"] == "nosniff"

