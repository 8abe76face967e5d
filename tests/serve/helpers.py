"""Driving ``steptable serve`` from the serve tests: a server on a free port with a known token, runs to serve, the
sessions' app processes, and textual-serve's websocket protocol (a session read until drawn or closed)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "t0ken-for-the-test-0123456789"
ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[@-Z\\-_])")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(path: Path, *extra: str) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """``steptable serve PATH EXTRA...`` on a free port with TOKEN, once it listens: its port and process (its
    output: proc.stdout, once it ended)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "steptable", "serve", str(path), "--port", str(port), "--token", TOKEN, *extra],
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


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def get_status(url: str, **kw: Any) -> int:
    async with aiohttp.ClientSession() as s, s.get(url, allow_redirects=False, **kw) as r:
        return int(r.status)


def watch_processes(path: Path) -> list[int]:
    """Processes running `steptable watch` over ``path`` (the sessions' apps)."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"watch" in cmd and str(path).encode() in cmd:
                out.append(int(pid))
    return out


async def get_with_headers(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        return int(r.status), r.headers


def alive(pid: int) -> bool:
    """The process is there and not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def a_run(root: Path, last: int = 4321) -> Path:
    """A finished run under ``root`` whose last row's step is ``last`` (a number no other cell shows)."""

    (root / "r").mkdir(parents=True)
    rows = (json.dumps({"step": s, "loss": 1 / s}) + "\n" for s in range(last - 20, last + 1))
    (root / "r" / "metrics.jsonl").write_text("".join(rows))
    return root


async def apps_of(path: Path, timeout: float = 30) -> list[int]:
    """The sessions' apps over ``path``, once there is one (none after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not watch_processes(path) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return watch_processes(path)


async def until_closed(w: Any, timeout: float = 30) -> tuple[int | None, str]:
    """Read the session until the server closes it (``timeout`` in all: the server's pings restart a receive's own):
    the close code and its reason."""

    async def read() -> tuple[int | None, str]:
        while True:
            msg = await w.receive()
            if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
                return w.close_code, str(msg.extra or "")

    return await asyncio.wait_for(read(), timeout)


async def until_drawn(w: Any, pattern: str, timeout: float = 60) -> str:
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


def kill_all(pids: list[int]) -> None:

    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


async def delivered(w: Any) -> str:
    """The key of the next file the session's app delivers (textual-serve's ``deliver_file_start`` message)."""

    while True:
        msg = await w.receive()
        if msg.type == aiohttp.WSMsgType.TEXT and (said := json.loads(msg.data))[0] == "deliver_file_start":
            return str(said[1])
        if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
            raise AssertionError("the session closed before its app delivered a file")

