"""The served watch app in a real headless browser, once: a demo run, ``steptable serve`` on a free port with a known
token, Chromium (the OS package: ``apt-get install -y chromium``) driven over its DevTools protocol: the page without
the token (expect 401), then with it; after the app has drawn, a screenshot (not committed).

    python bench/serve_screenshot.py [OUT.png]      (from the repository root; needs steptable[serve])
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listens on {port}")


async def shoot(debug_port: int, url: str, out: Path) -> str:
    """Load ``url`` in the browser's first tab, wait for the app's first frame, save a screenshot; the body's
    classes (``-connected``/``-first-byte``: the websocket opened, the app's output arrived)."""
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{debug_port}/json/list") as r:
            tab = next(t for t in await r.json() if t["type"] == "page")
        async with http.ws_connect(tab["webSocketDebuggerUrl"], max_msg_size=0) as cdp:
            ids = iter(range(1, 1 << 30))

            async def call(method: str, **params: Any) -> dict[str, Any]:
                n = next(ids)
                await cdp.send_json({"id": n, "method": method, "params": params})
                async for msg in cdp:
                    data = json.loads(msg.data)
                    if data.get("id") == n:
                        return dict(data.get("result", {}))
                raise SystemExit("the browser went away")

            await call("Emulation.setDeviceMetricsOverride", width=1600, height=1000, deviceScaleFactor=1,
                       mobile=False)
            await call("Page.navigate", url=url)
            classes = ""
            for _ in range(60):  # textual.js marks the body once the app's first bytes arrived over the websocket
                await asyncio.sleep(0.5)
                res = await call("Runtime.evaluate", expression="document.body.className", returnByValue=True)
                classes = str(res.get("result", {}).get("value") or "")
                if "-first-byte" in classes:
                    break
            await asyncio.sleep(3.0)  # (the app's first full frame: its tables read and drawn)
            shot = await call("Page.captureScreenshot", format="png")
            out.write_bytes(base64.b64decode(shot["data"]))
            return classes


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/steptable-serve.png").absolute()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("no chromium: apt-get install -y chromium")
    from steptable.demo.run import run_demo

    with tempfile.TemporaryDirectory() as work:
        run_demo(Path(work) / "run", steps=60, interval=0, console=False)
        port, debug_port, token = free_port(), free_port(), secrets.token_urlsafe(24)
        server = subprocess.Popen([sys.executable, "-m", "steptable", "serve", f"{work}/run", "--port", str(port),
                                   "--token", token], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        chrome = subprocess.Popen([browser, *FLAGS, f"--user-data-dir={work}/profile",
                                   f"--remote-debugging-port={debug_port}", "about:blank"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port)
            wait_port(debug_port)

            async def status() -> int:
                async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/") as r:
                    return r.status

            print(f"without the token: HTTP {asyncio.run(status())}")
            classes = asyncio.run(shoot(debug_port, f"http://127.0.0.1:{port}/?token={token}", out))
            print(f"with the token: page classes {classes!r} (-first-byte: the app's frames arrived)")
            print(f"screenshot: {out}")
        finally:
            for p in (chrome, server):
                p.terminate()
                p.wait(timeout=20)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
