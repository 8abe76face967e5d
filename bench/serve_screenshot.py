"""The served watch app in a real headless browser: a demo run and a TRL-like run whose generations hold hostile
text, ``steptable serve --max-sessions 2`` on a free port with a known token, Chromium (the OS package:
``apt-get install -y chromium``) driven over its DevTools protocol. It prints one line per check and saves
screenshots of each arm's generations (not committed):

- the page without the token: 401; with it: the app's frames arrive, the console holds no policy error;
- a key typed into the page reaches the app (``?`` opens its key list: the screen changes), so does a resize;
- a second tab gets its own app; a third, past the cap, says why on its page;
- the generations viewer (``v``, each arm) over hostile text runs no script in the page and leaves its title alone;
- closing a tab ends its app (its process is gone); a killed app's tab says why;
- Ctrl-C on the server ends every app, and the page says the server stopped.

    python bench/serve_screenshot.py [OUT.png]      (from the repository root; needs steptable[serve])
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
HOSTILE = ("\x1b[2J\x1b]0;PWNED\x07\x1b]52;c;ZXZpbA==\x07 [bold red]MARKUP[/] <script>window.pwned=1</script>"
           "<img src=x onerror=\"window.pwned=2\"> \x1b]8;;javascript:window.pwned=3\x07link\x1b]8;;\x07 \u202eevil")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listens on {port}")


def apps(root: Path) -> list[int]:
    """The sessions' apps: processes running ``steptable watch`` over something under ``root``."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"watch" in argv and any(str(root).encode() in a for a in argv):
            out.append(int(pid))
    return out


def write_runs(root: Path) -> None:
    """A demo run (three arms) and a TRL GRPO run: trainer_state.json and completions parquet with HOSTILE text."""
    from steptable.demo.run import run_demo

    run_demo(root / "demo", steps=120, interval=0, console=False)
    trl = root / "trl"
    state = {"global_step": 3, "log_history": [{"step": s, "loss": 0.1 / s, "reward": 0.2 * s, "kl": 0.001 * s}
                                               for s in (1, 2, 3)]}
    (trl / "checkpoint-3").mkdir(parents=True)
    (trl / "checkpoint-3" / "trainer_state.json").write_text(json.dumps(state))
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # (the steptable[parquet] extra: no generations to show then)
        return
    (trl / "completions").mkdir()
    for s in (1, 2, 3):
        pq.write_table(pa.table({"step": [s, s], "prompt": [HOSTILE, "p"], "completion": [HOSTILE, "c"],
                                 "accuracy_reward": [1.0, 0.0]}), trl / "completions" / f"completions_{s:05d}.parquet")


class Tab:
    """One browser tab over its DevTools websocket."""

    def __init__(self, http: aiohttp.ClientSession, cdp: aiohttp.ClientWebSocketResponse, target: str,
                 id: str) -> None:
        self.http, self.cdp, self.target, self.id, self.ids = http, cdp, target, id, itertools.count(1)
        self.events: list[dict[str, Any]] = []

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        n = next(self.ids)
        await self.cdp.send_json({"id": n, "method": method, "params": params})
        async for msg in self.cdp:
            data = json.loads(msg.data)
            if data.get("id") == n:
                return dict(data.get("result", {}))
            self.events.append(data)
        raise SystemExit("the browser went away")

    async def js(self, expression: str) -> Any:
        res = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return res.get("result", {}).get("value")

    async def shot(self) -> bytes:
        return base64.b64decode((await self.call("Page.captureScreenshot", format="png"))["data"])

    async def size(self, width: int, height: int) -> None:
        await self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                        mobile=False)

    async def key(self, text: str, code: str, vk: int = 0) -> None:
        for kind in ("keyDown", "keyUp"):
            await self.call("Input.dispatchKeyEvent", type=kind, key=text, code=code, windowsVirtualKeyCode=vk,
                            **({"text": text} if kind == "keyDown" and len(text) == 1 else {}))

    async def click(self, x: int, y: int) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            await self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    async def dialog(self) -> str:
        return str(await self.js("document.querySelector('.closed-dialog .message').textContent"))

    async def until(self, word: str, seconds: float = 30) -> str:
        """Wait until the body's classes hold ``word`` (``-first-byte``: the app drew; ``-closed``: it ended)."""
        classes = ""
        deadline = time.monotonic() + seconds
        while word not in classes and time.monotonic() < deadline:
            await asyncio.sleep(0.3)
            classes = str(await self.js("document.body ? document.body.className : ''") or "")
        return classes

    async def close(self) -> None:
        await self.cdp.close()
        async with self.http.get(f"{self.target}/json/close/{self.id}") as r:
            await r.read()


async def open_tab(http: aiohttp.ClientSession, debug_port: int, url: str, width: int = 1400,
                   height: int = 900) -> Tab:
    target = f"http://127.0.0.1:{debug_port}"
    async with http.put(f"{target}/json/new?about:blank") as r:
        info = await r.json()
    tab = Tab(http, await http.ws_connect(info["webSocketDebuggerUrl"], max_msg_size=0), target, info["id"])
    for domain in ("Page", "Runtime", "Log"):
        await tab.call(f"{domain}.enable")
    await tab.size(width, height)
    await tab.call("Page.navigate", url=url)
    return tab


def check(name: str, ok: bool, detail: str = "") -> bool:
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    return ok


async def drive(root: Path, port: int, debug_port: int, token: str, server: subprocess.Popen[bytes],
                out: Path) -> bool:
    base = f"http://127.0.0.1:{port}"
    url = f"{base}/?token={token}"
    good = True
    shots: list[bytes] = []
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/") as r:
            good &= check("no token: 401", r.status == 401, str(r.status))
        a = await open_tab(http, debug_port, url)
        good &= check("the app draws", "-first-byte" in await a.until("-first-byte"))
        await asyncio.sleep(3)
        policy = [e for e in a.events if e.get("method") == "Log.entryAdded"
                  and e["params"]["entry"].get("source") == "security"]
        good &= check("no policy error in the console", not policy, str(policy)[:200])
        before = await a.shot()
        await a.click(700, 300)
        await a.key("?", "Slash")
        await asyncio.sleep(2)
        good &= check("a key reaches the app (? opens the key list)", await a.shot() != before)
        await a.key("Escape", "Escape", 27)
        width = "document.querySelector('.xterm-screen').getBoundingClientRect().width"
        wide = await a.js(width)
        await a.size(900, 600)
        await asyncio.sleep(2)
        narrow = await a.js(width)
        await a.size(1400, 900)
        await asyncio.sleep(2)
        good &= check("the terminal follows a resize", narrow <= 900 < wide, f"{wide} -> {narrow} px")
        b = await open_tab(http, debug_port, url, 1000, 700)
        await b.until("-first-byte")
        await asyncio.sleep(2)
        good &= check("a second tab gets its own app", len(apps(root)) == 2, str(apps(root)))
        c = await open_tab(http, debug_port, url, 1000, 700)
        await c.until("-closed")
        said = await c.dialog()
        good &= check("a third tab, past the cap, says why", "--max-sessions 2" in said, said)
        await c.close()
        await a.click(700, 300)
        await a.key("v", "KeyV")
        await asyncio.sleep(3)
        for _ in range(4):  # (a: the next arm with samples; four of them, the TRL run's among them)
            await a.key("a", "KeyA")
            await asyncio.sleep(1.5)
            shots.append(await a.shot())
        hostile = await a.js("[window.pwned, document.title]")
        good &= check("hostile generations run nothing in the page", hostile == [None, ""], str(hostile))
        for n, shot in enumerate(shots):
            out.with_name(f"{out.stem}-{n}{out.suffix}").write_bytes(shot)
        left = apps(root)
        await b.close()
        deadline = time.monotonic() + 20
        while len(apps(root)) >= len(left) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        good &= check("closing a tab ends its app", len(apps(root)) == len(left) - 1, f"{left} -> {apps(root)}")
        for pid in apps(root):
            os.kill(pid, signal.SIGKILL)
        await a.until("-closed")
        said = await a.dialog()
        good &= check("a killed app's tab says why", "killed (signal 9)" in said, said)
        await a.close()
        d = await open_tab(http, debug_port, url)
        await d.until("-first-byte")
        server.send_signal(signal.SIGINT)
        await d.until("-closed")
        said = await d.dialog()
        good &= check("Ctrl-C on the server: the page says it stopped", "serve stopped" in said, said)
        server.wait(timeout=30)
        await asyncio.sleep(1)
        good &= check("Ctrl-C on the server ends every app", apps(root) == [], str(apps(root)))
        await d.close()
    return good


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/steptable-serve.png").absolute()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("no chromium: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as work:
        root = Path(work) / "runs"
        write_runs(root)
        port, debug_port, token = free_port(), free_port(), secrets.token_urlsafe(24)
        server = subprocess.Popen([sys.executable, "-m", "steptable", "serve", str(root / "demo"), str(root / "trl"),
                                   "--port", str(port), "--token", token, "--max-sessions", "2"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        chrome = subprocess.Popen([browser, *FLAGS, f"--user-data-dir={work}/profile",
                                   f"--remote-debugging-port={debug_port}", "about:blank"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port)
            wait_port(debug_port)
            good = asyncio.run(drive(root, port, debug_port, token, server, out))
            print(f"screenshots: {out.with_name(out.stem + '-N' + out.suffix)} (N: 0-3, each arm's generations)")
        finally:
            for p in (chrome, server):
                if p.poll() is None:
                    p.terminate()
                    p.wait(timeout=20)
            for pid in apps(root):
                os.kill(pid, signal.SIGKILL)
    return 0 if good else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
