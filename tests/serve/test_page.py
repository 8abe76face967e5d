"""The page steptable serve sends: its own scripts, run in node against textual-serve's page, say why a session
ended and ask for a delivered file with the token."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from typing import Any

import pytest

pytest.importorskip("textual_serve")
aiohttp = pytest.importorskip("aiohttp")

from tests.serve.helpers import TOKEN, run  # noqa: E402


def test_the_pages_closed_dialog_says_the_reason_the_session_was_closed_with(server: tuple[int, Any]) -> None:
    """textual-serve's page said only "Session ended." whatever the server's close frame said (an app killed, an app
    that refused its paths): its script reads no reason. The page's own scripts, run in node against the page's
    dialog, put the close frame's reason there; a close without one keeps the page's words; a session refused past
    the cap (1013: none started) says its reason alone."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    port, _ = server

    async def go() -> str:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/?token={TOKEN}") as r:
            return await r.text()

    page = run(go())
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
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    port, _ = server
    origin = f"http://127.0.0.1:{port}"

    async def go() -> str:
        async with aiohttp.ClientSession() as s, s.get(f"{origin}/?token={TOKEN}") as r:
            return await r.text()

    scripts = "\n".join(re.findall(r"<script>([\s\S]*?)</script>", run(go())))
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

