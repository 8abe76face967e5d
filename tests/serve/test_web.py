"""steptable serve: every route behind the token, a websocket only from the page's origin and under the session cap,
and a real session (textual-serve's websocket protocol driven here) that shows the demo run's rows."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual_serve")
aiohttp = pytest.importorskip("aiohttp")

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "t0ken-for-the-test-0123456789"
ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[@-Z\\-_])")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from steptable.demo.run import run_demo

    out = tmp_path_factory.mktemp("demo")
    run_demo(out, steps=30, interval=0, console=False)
    return out


@contextlib.contextmanager
def _serve(demo_dir: Path, *extra: str) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "steptable", "serve", str(demo_dir), "--port", str(port), "--token", TOKEN, *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("the server did not start")
        yield port, proc
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@pytest.fixture(scope="module")
def server(demo_dir: Path) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    with _serve(demo_dir) as started:
        yield started


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _status(url: str, **kw: Any) -> int:
    async with aiohttp.ClientSession() as s, s.get(url, allow_redirects=False, **kw) as r:
        return int(r.status)


def test_http_needs_the_token_on_the_page_and_the_assets(server: tuple[int, Any]) -> None:
    port, _ = server
    base = f"http://127.0.0.1:{port}"
    for path in ("/", "/static/js/textual.js", "/a/wrong/js/textual.js", "/static/css/xterm.css", "/ws", "/ws/wrong",
                 "/download/x"):
        assert _run(_status(base + path)) == 401, path
        assert _run(_status(base + path + "?token=wrong")) == 401, path
        # no cookie lets anything through (a cookie goes to every port of the host: another local service's too)
        assert _run(_status(base + path, headers={"Cookie": f"steptable-serve-{port}={TOKEN}"})) == 401, path
    assert _run(_status(f"{base}/?token={TOKEN}")) == 200
    assert _run(_status(f"{base}/a/{TOKEN}/js/textual.js")) == 200  # the page's assets, the token in their path
    assert _run(_status(f"{base}/", headers={"Authorization": f"token {TOKEN}"})) == 200
    assert _run(_status(f"{base}/ws/{TOKEN}")) == 400  # not a websocket: answered, no traceback with the headers


def test_the_page_names_its_assets_and_websocket_with_the_token_and_sets_no_cookie(server: tuple[int, Any]) -> None:
    port, _ = server

    async def go() -> tuple[str, str]:
        async with aiohttp.ClientSession() as s, s.get(f"http://localhost:{port}/?token={TOKEN}") as r:
            return r.headers.get("Set-Cookie", ""), await r.text()

    cookie, page = _run(go())
    assert cookie == ""
    # (the host the browser asked for: an ssh tunnel's port too)
    assert f'data-session-websocket-url="ws://localhost:{port}/ws/{TOKEN}"' in page
    assert f'src="http://localhost:{port}/a/{TOKEN}/js/textual.js"' in page


def test_a_foreign_host_or_origin_is_refused(server: tuple[int, Any]) -> None:
    port, _ = server
    base = f"http://127.0.0.1:{port}"
    assert _run(_status(f"{base}/?token={TOKEN}", headers={"Host": f"evil.example:{port}"})) == 403  # DNS rebinding

    async def ws(origin: str) -> int:
        async with aiohttp.ClientSession() as s:
            try:
                async with s.ws_connect(f"{base}/ws?token={TOKEN}", origin=origin) as w:
                    await w.close()
                    return 101
            except aiohttp.WSServerHandshakeError as e:
                return int(e.status)

    assert _run(ws("http://evil.example")) == 403
    assert _run(ws(f"http://127.0.0.1:{port}.evil.example")) == 403


def _watch_processes(demo_dir: Path) -> list[int]:
    """Processes running `steptable watch` over ``demo_dir`` (the sessions' apps)."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"watch" in cmd and str(demo_dir).encode() in cmd:
                out.append(int(pid))
    return out


def test_a_session_shows_the_demo_rows_and_its_process_ends_with_it(demo_dir: Path) -> None:
    import json

    last = json.loads((demo_dir / "routeA" / "metrics.jsonl").read_text().splitlines()[-1])
    with _serve(demo_dir, "--max-sessions", "1") as (port, _):
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
                    running = _watch_processes(demo_dir)
            return screen, running

        screen, running = _run(go())
        assert running, "the session's app ran in a process of its own"
        assert re.search(rf"\n\s*{last['step']}\s", screen), screen[-2000:]  # the last step's row was drawn
        deadline = time.monotonic() + 20
        while _watch_processes(demo_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _watch_processes(demo_dir) == []  # the browser left: its app ended


def test_a_session_past_the_cap_is_closed_with_why_and_starts_no_app(tmp_path: Path) -> None:
    """A tab past --max-sessions got the upgrade refused with 503, which a browser does not tell its page: the page
    said "Session ended." (or stayed blank). The websocket is accepted and closed at once (1013, try again later),
    its reason naming the cap, and no app is started for it; the slot frees once the first session ends."""
    logs = _a_run(tmp_path / "logs")
    with _serve(logs, "--max-sessions", "1") as (port, _):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[tuple[int | None, str], list[int], list[int]]:
            async with aiohttp.ClientSession() as s:
                async with s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin):
                    first = await _apps_of(logs)
                    async with s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as second:
                        refused = await _until_closed(second)
                    apps = _watch_processes(logs)
                return refused, first, apps

        try:
            refused, first, apps = _run(go())
        finally:
            _kill_all(_watch_processes(logs))
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
    with _serve(logs) as (_, proc):
        pass
    assert proc.stdout is not None
    out = proc.stdout.read()
    assert "steptable serve: " in out and "watch --wait -- " in out and "logs52;c;ZXZpbA==" not in out
    assert str(tmp_path / "logs") in out
    assert not any(bad in out for bad in ("\x1b", "\x07", "\u202e"))


def test_the_page_fetches_nothing_from_another_host_and_sends_no_referer(server: tuple[int, Any]) -> None:
    """textual-serve's page links a web font's stylesheet on fonts.googleapis.com: each watch asked a third party
    (and failed offline); then the policy blocked it, an error in the browser's console on each load. The page
    names no URL off its own host, the policy would forbid one, and its URL (with the token) goes to no one as a
    Referer."""
    import re

    port, _ = server

    async def go() -> tuple[Any, str]:
        async with aiohttp.ClientSession() as s, s.get(f"http://localhost:{port}/?token={TOKEN}") as r:
            return r.headers, await r.text()

    headers, page = _run(go())
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
    _, css = _run(_status_and_headers(f"http://localhost:{port}/a/{TOKEN}/css/xterm.css"))
    assert "Content-Security-Policy" in css  # (the assets too)


async def _status_and_headers(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        return int(r.status), r.headers


def test_a_session_whose_app_hangs_or_asks_for_a_huge_terminal_ends_with_the_browser(demo_dir: Path) -> None:
    """The app ran under /bin/sh, and the kill after the browser left hit the shell: a hung app (here: stopped)
    lived on as a child of init, outside the session cap; a resize to 10**30 cells made it grow to 8 GB. The app
    is the session's process now, and a side is at most MAX_CELLS cells."""
    import signal

    from steptable.serve.web import MAX_CELLS, QUIT_WAIT_S, cells

    assert (cells(10**30, 80), cells("99999999999", 80), cells("-5", 24), cells("x", 24)) == (MAX_CELLS, MAX_CELLS,
                                                                                              1, 24)
    with pytest.raises(ValueError):
        cells(1.5, 80)
    with _serve(demo_dir, "--max-sessions", "1") as (port, _):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> list[int]:
            async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}?width={10**30}&height=40",
                                                                  origin=origin) as w:
                await w.send_json(["resize", {"width": 10**30, "height": 10**30}])
                deadline = time.monotonic() + 30
                while not _watch_processes(demo_dir) and time.monotonic() < deadline:
                    await asyncio.sleep(0.2)
                apps = _watch_processes(demo_dir)
                for pid in apps:
                    os.kill(pid, signal.SIGSTOP)  # (an app that will not quit)
                return apps

        apps = _run(go())
        assert apps
        deadline = time.monotonic() + 3 * QUIT_WAIT_S + 10
        while any(_alive(pid) for pid in apps) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(pid) for pid in apps)


def _alive(pid: int) -> bool:
    """The process is there and not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _a_run(root: Path, last: int = 4321) -> Path:
    """A finished run under ``root`` whose last row's step is ``last`` (a number no other cell shows)."""
    import json

    (root / "r").mkdir(parents=True)
    rows = (json.dumps({"step": s, "loss": 1 / s}) + "\n" for s in range(last - 20, last + 1))
    (root / "r" / "metrics.jsonl").write_text("".join(rows))
    return root


async def _apps_of(path: Path, timeout: float = 30) -> list[int]:
    """The sessions' apps over ``path``, once there is one (none after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not _watch_processes(path) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return _watch_processes(path)


async def _until_closed(w: Any, timeout: float = 30) -> tuple[int | None, str]:
    """Read the session until the server closes it (``timeout`` in all: the server's pings restart a receive's own):
    the close code and its reason."""

    async def read() -> tuple[int | None, str]:
        while True:
            msg = await w.receive()
            if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
                return w.close_code, str(msg.extra or "")

    return await asyncio.wait_for(read(), timeout)


async def _until_drawn(w: Any, pattern: str, timeout: float = 60) -> str:
    """Read the session until its screen shows ``pattern`` (``timeout`` in all); the screen, its escapes as newlines
    (empty if the session closed)."""
    screen = ""

    async def read() -> None:
        nonlocal screen
        while not re.search(pattern, screen):
            msg = await w.receive()
            if msg.type == aiohttp.WSMsgType.BINARY:
                screen += ANSI.sub("\n", msg.data.decode("utf-8", "replace"))
            elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
                return

    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(read(), timeout)
    return screen


def _kill_all(pids: list[int]) -> None:
    import signal

    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_a_session_whose_app_died_is_closed_with_why_and_frees_its_slot(tmp_path: Path) -> None:
    """An app killed under its session (the OOM killer, a crash) left the websocket open for good, the tab frozen
    and the session's slot taken: the next browser got 503 with nothing running. The server closes it, saying why
    (the page shows the session ended), and the slot is free again."""
    import signal

    logs = _a_run(tmp_path / "logs")
    with _serve(logs, "--max-sessions", "1") as (port, _):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[int | None, str, int]:
            async with aiohttp.ClientSession() as s:
                async with s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as w:
                    apps = await _apps_of(logs)
                    assert apps
                    for pid in apps:
                        os.kill(pid, signal.SIGKILL)
                    code, reason = await _until_closed(w)
                deadline = time.monotonic() + 30  # (the slot is freed just after the close frame went out)
                while True:
                    async with s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as again:
                        if (await again.receive()).type == aiohttp.WSMsgType.BINARY:  # (else closed: the cap)
                            return code, reason, len(await _apps_of(logs))
                        if time.monotonic() > deadline:
                            return code, reason, -1
                    await asyncio.sleep(0.1)

        try:
            code, reason, second = _run(go())
        finally:
            _kill_all(_watch_processes(logs))
    assert code == aiohttp.WSCloseCode.INTERNAL_ERROR and reason == "the app was killed (signal 9)"
    assert second == 1  # (not -1: refused past the cap)


def test_a_session_whose_app_cannot_start_is_closed_with_its_error_said_once(tmp_path: Path) -> None:
    """The app refuses what it is given (a steptable.toml made unusable after serve started: serve refuses one at
    its start) and exits 2 at its start: the session showed nothing, open for good, and the server's log said the
    app's error twice."""
    logs = _a_run(tmp_path / "logs")
    with _serve(logs) as (port, proc):
        (logs / "steptable.toml").write_text('[schema]\nname = "bad name"\n')
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[int | None, str]:
            async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as w:
                return await _until_closed(w)

        code, reason = _run(go())
    assert proc.stdout is not None
    log = proc.stdout.read()
    assert code == aiohttp.WSCloseCode.INTERNAL_ERROR
    assert reason.startswith("the app ended (exit status 2): steptable watch: ")
    assert len(reason.encode()) <= 123  # (a close frame's reason: the temporary directory's long name is cut)
    said = re.findall(r"^steptable watch: .*", log, re.M)
    assert len(said) == 1 and "steptable.toml" in said[0], log


def test_a_path_that_does_not_exist_yet_is_followed_by_the_sessions(tmp_path: Path) -> None:
    """serve says "no such path (yet)" and follows it (a training about to start makes its directory), but each
    session's app refused the path and showed nothing. The session waits for it and shows its rows once written."""
    later = tmp_path / "later"
    with _serve(later) as (port, proc):
        origin = f"http://127.0.0.1:{port}"

        screen = ""

        async def go() -> None:
            nonlocal screen
            async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}?width=120&height=40",
                                                                  origin=origin) as w:
                while not re.search(r"\n\s*4321\s", screen):
                    msg = await w.receive()
                    if msg.type == aiohttp.WSMsgType.BINARY:
                        screen += ANSI.sub("\n", msg.data.decode("utf-8", "replace"))
                        if not later.exists():  # (the app is up and drawing: the run starts now)
                            _a_run(later)
                    elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
                        break

        with contextlib.suppress(asyncio.TimeoutError):
            _run(asyncio.wait_for(go(), 60))
    assert proc.stdout is not None
    assert "no such path (yet)" in proc.stdout.read()
    assert re.search(r"\n\s*4321\s", screen), screen[-2000:]


def test_the_sessions_apps_end_when_the_server_is_killed(tmp_path: Path) -> None:
    """serve killed with SIGKILL (the OOM killer) ran no shutdown: its sessions' apps lived on, children of init,
    for good. Each ends by itself once its server is gone."""
    logs = _a_run(tmp_path / "logs")
    apps: list[int] = []
    try:
        with _serve(logs) as (port, proc):
            origin = f"http://127.0.0.1:{port}"

            async def go() -> None:
                async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as w:
                    await _until_drawn(w, r"\n\s*4321\s")  # (then the app waits, writing nothing: a write to
                    apps.extend(_watch_processes(logs))      # the dead server's pipe would end it anyway)
                    proc.kill()
                    proc.wait()

            _run(go())
        assert apps
        deadline = time.monotonic() + 60
        while any(_alive(pid) for pid in apps) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(pid) for pid in apps)
    finally:
        _kill_all(apps)


def test_a_message_the_page_does_not_send_ends_its_session_in_one_log_line(tmp_path: Path) -> None:
    """A token holder's message that is not JSON, or not of the page's shape, ended the session with a close that
    said nothing (1000, as a normal quit) and a traceback of twenty lines in the server's log."""
    from steptable.serve.web import BAD_MESSAGE

    logs = _a_run(tmp_path / "logs")
    closes = []
    with _serve(logs) as (port, proc):
        origin = f"http://127.0.0.1:{port}"

        async def go(message: str) -> tuple[int | None, str]:
            async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as w:
                await _until_drawn(w, r"\n\s*4321\s")
                await w.send_str(message)
                return await _until_closed(w)

        try:
            for message in ("not json \x1b[2J", '["resize", {"width": 80}]', '["stdin", 7]'):
                closes.append(_run(go(message)))
        finally:
            _kill_all(_watch_processes(logs))
    assert proc.stdout is not None
    log = proc.stdout.read()
    assert closes == [(aiohttp.WSCloseCode.UNSUPPORTED_DATA, BAD_MESSAGE)] * 3
    said = [line for line in log.splitlines() if "cannot read" in line]
    assert "Traceback" not in log and len(said) == 3 and "\x1b" not in log, log


def test_the_sessions_are_told_the_server_stopped(tmp_path: Path) -> None:
    """Ctrl-C (or TERM) on the server closed each session's websocket as an app that quit does (1000, no reason):
    the page said "Session ended." and its Restart button reloaded a page no longer served."""
    import signal

    from steptable.serve.web import SERVER_STOPPED

    logs = _a_run(tmp_path / "logs")
    with _serve(logs) as (port, proc):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[int | None, str]:
            async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as w:
                await _until_drawn(w, r"\n\s*4321\s")
                proc.send_signal(signal.SIGINT)
                return await _until_closed(w)

        try:
            said = _run(go())
        finally:
            _kill_all(_watch_processes(logs))
    assert said == (aiohttp.WSCloseCode.GOING_AWAY, SERVER_STOPPED)


def test_a_malformed_websocket_handshake_is_answered_400_in_one_log_line(demo_dir: Path) -> None:
    """An upgrade with the token but no Sec-WebSocket-Key nor -Version got no answer at all (the connection
    dropped) and a traceback of a hundred lines in the server's log."""
    with _serve(demo_dir) as (port, proc):
        base = f"http://127.0.0.1:{port}"
        status = _run(_status(f"{base}/ws/{TOKEN}", headers={"Upgrade": "websocket", "Connection": "Upgrade",
                                                             "Origin": base}))
    assert proc.stdout is not None
    log = proc.stdout.read()
    assert status == 400
    assert "Traceback" not in log and len([line for line in log.splitlines() if "refused" in line]) == 1, log


def test_a_request_that_cannot_be_parsed_is_logged_in_one_line(demo_dir: Path) -> None:
    """A request aiohttp cannot parse (a bad header name, a bare control character), from anyone who reaches the
    port, without the token, put a traceback of twenty lines into the server's log each time."""
    with _serve(demo_dir) as (port, proc):
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


def test_the_pages_closed_dialog_says_the_reason_the_session_was_closed_with(server: tuple[int, Any]) -> None:
    """textual-serve's page said only "Session ended." whatever the server's close frame said (an app killed, an app
    that refused its paths): its script reads no reason. The page's own scripts, run in node against the page's
    dialog, put the close frame's reason there; a close without one keeps the page's words; a session refused past
    the cap (1013: none started) says its reason alone."""
    import json
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    port, _ = server

    async def go() -> str:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/?token={TOKEN}") as r:
            return await r.text()

    page = _run(go())
    assert re.search(r'class="[^"]*\bclosed-dialog\b[^"]*"[\s\S]*?<div class="message">Session ended\.</div>', page)
    scripts = "\n".join(re.findall(r"<script>([\s\S]*?)</script>", page))
    said = []
    for code, reason in ((1011, "the app was killed (signal 9): <b>MemoryError</b>"), (1011, ""),
                         (1013, "1 session is open already (serve --max-sessions 1): close one, then Restart")):
        program = """
            const message = {textContent: "Session ended."};
            globalThis.window = globalThis;
            window.open = () => null;
            globalThis.document = {querySelector: (s) => s === ".closed-dialog .message" ? message : null};
            globalThis.WebSocket = class {
                constructor(url) { this.url = url; this.handlers = []; }
                addEventListener(type, f) { if (type === "close") this.handlers.push(f); }
            };
            PAGE_SCRIPTS
            const socket = new WebSocket("ws://127.0.0.1/ws/key?width=80&height=24");  // as textual.js makes it
            socket.handlers.forEach((f) => f({code: CODE, reason: REASON, wasClean: true}));
            console.log(message.textContent);
        """.replace("PAGE_SCRIPTS", scripts).replace("REASON", json.dumps(reason)).replace("CODE", str(code))
        out = subprocess.run([node, "-e", program], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        said.append(out.stdout.strip())
    assert said == ["Session ended: the app was killed (signal 9): <b>MemoryError</b>", "Session ended.",
                    "1 session is open already (serve --max-sessions 1): close one, then Restart"]


def test_a_file_the_app_delivers_is_asked_for_with_the_token(server: tuple[int, Any]) -> None:
    """The command palette's screenshot: textual-serve's script opens ``/download/KEY`` in a new tab, without the
    token, and the gate answered it 401 (the tab said "a token is needed"). The page's own scripts, run in node,
    add the page's token to that URL and to no other."""
    import json
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    port, _ = server
    origin = f"http://127.0.0.1:{port}"

    async def go() -> str:
        async with aiohttp.ClientSession() as s, s.get(f"{origin}/?token={TOKEN}") as r:
            return await r.text()

    scripts = "\n".join(re.findall(r"<script>([\s\S]*?)</script>", _run(go())))
    program = """
        globalThis.window = globalThis;
        window.location = {href: ORIGIN + "/?token=" + TOKEN, origin: ORIGIN};
        const opened = [];
        window.open = (url, target) => { opened.push([url, target]); };
        window.WebSocket = class {};
        PAGE_SCRIPTS
        window.open(ORIGIN + "/download/k3y?instance=i1", "_blank");  // as textual.js opens a delivered file
        window.open("https://example.org/download/x", "_blank");
        console.log(JSON.stringify(opened));
    """.replace("PAGE_SCRIPTS", scripts).replace("ORIGIN", json.dumps(origin)).replace("TOKEN", json.dumps(TOKEN))
    out = subprocess.run([node, "-e", program], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [[f"{origin}/download/k3y?instance=i1&token={TOKEN}", "_blank"],
                                      ["https://example.org/download/x", "_blank"]]


def test_a_delivered_screenshot_is_sandboxed_and_loads_nothing(tmp_path: Path) -> None:
    """A response its handler sends itself (textual-serve's download of a file the app delivers) went out before
    the gate's middleware could add its headers: the screenshot's SVG, which holds the runs' text, came with no
    policy at all (its web font fetched from cdnjs, a script in it run on the server's origin). It is sandboxed
    now, loads nothing, and sends no Referer."""
    logs = _a_run(tmp_path / "logs")
    with _serve(logs) as (port, _):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[int, Any, str]:
            async with aiohttp.ClientSession() as s:
                async with s.ws_connect(f"{origin}/ws/{TOKEN}?width=120&height=40", origin=origin) as w:
                    await _until_drawn(w, r"\n\s*4321\s")
                    await w.send_json(["stdin", "\x10"])  # ctrl+p: the command palette
                    await _until_drawn(w, r"Search")
                    await w.send_json(["stdin", "screenshot"])
                    await _until_drawn(w, r"(?i)screenshot")
                    await w.send_json(["stdin", "\r"])
                    key = await asyncio.wait_for(_delivered(w), 60)
                    async with s.get(f"{origin}/download/{key}?token={TOKEN}") as r:  # (the app sends it)
                        return r.status, r.headers, await r.text()

        try:
            status, headers, svg = _run(go())
        finally:
            _kill_all(_watch_processes(logs))
    assert status == 200 and "<svg" in svg and "https://" in svg  # (Rich's SVG names its web font's URL)
    policy = dict(d.strip().partition(" ")[::2] for d in headers["Content-Security-Policy"].split(";"))
    assert "sandbox" in policy and policy["default-src"] == "'none'" and "https:" not in str(policy)
    assert policy["font-src"] == "data:" and "script-src" not in policy
    assert headers["Referrer-Policy"] == "no-referrer" and headers["X-Content-Type-Options"] == "nosniff"


async def _delivered(w: Any) -> str:
    """The key of the next file the session's app delivers (textual-serve's ``deliver_file_start`` message)."""
    import json

    while True:
        msg = await w.receive()
        if msg.type == aiohttp.WSMsgType.TEXT and (said := json.loads(msg.data))[0] == "deliver_file_start":
            return str(said[1])
        if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
            raise AssertionError("the session closed before its app delivered a file")
