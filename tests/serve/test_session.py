"""One session of steptable serve: its app in a process of its own, ended with the session (killed if it hangs),
and a session whose app ended by itself closed saying why."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("textual_serve")
aiohttp = pytest.importorskip("aiohttp")

from tests.serve.helpers import (  # noqa: E402
    ANSI,
    TOKEN,
    a_run,
    alive,
    apps_of,
    kill_all,
    run,
    serving,
    until_closed,
    until_drawn,
    watch_processes,
)


def test_a_session_whose_app_hangs_or_asks_for_a_huge_terminal_ends_with_the_browser(demo_dir: Path) -> None:
    """The app ran under /bin/sh, and the kill after the browser left hit the shell: a hung app (here: stopped)
    lived on as a child of init, outside the session cap; a resize to 10**30 cells made it grow to 8 GB. The app
    is the session's process now, and a side is at most MAX_CELLS cells."""
    from steptable.serve.session import MAX_CELLS, QUIT_WAIT_S, cells

    assert (cells(10**30, 80), cells("99999999999", 80), cells("-5", 24), cells("x", 24)) == (MAX_CELLS, MAX_CELLS,
                                                                                              1, 24)
    with pytest.raises(ValueError):
        cells(1.5, 80)
    with serving(demo_dir, "--max-sessions", "1") as (port, _):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> list[int]:
            async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}?width={10**30}&height=40",
                                                                  origin=origin) as w:
                await w.send_json(["resize", {"width": 10**30, "height": 10**30}])
                deadline = time.monotonic() + 30
                while not watch_processes(demo_dir) and time.monotonic() < deadline:
                    await asyncio.sleep(0.2)
                apps = watch_processes(demo_dir)
                for pid in apps:
                    os.kill(pid, signal.SIGSTOP)  # (an app that will not quit)
                return apps

        apps = run(go())
        assert apps
        deadline = time.monotonic() + 3 * QUIT_WAIT_S + 10
        while any(alive(pid) for pid in apps) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(pid) for pid in apps)


def test_a_session_whose_app_died_is_closed_with_why_and_frees_its_slot(tmp_path: Path) -> None:
    """An app killed under its session (the OOM killer, a crash) left the websocket open for good, the tab frozen
    and the session's slot taken: the next browser got 503 with nothing running. The server closes it, saying why
    (the page shows the session ended), and the slot is free again."""
    logs = a_run(tmp_path / "logs")
    with serving(logs, "--max-sessions", "1") as (port, _):
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[int | None, str, int]:
            async with aiohttp.ClientSession() as s:
                async with s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as w:
                    apps = await apps_of(logs)
                    assert apps
                    for pid in apps:
                        os.kill(pid, signal.SIGKILL)
                    code, reason = await until_closed(w)
                deadline = time.monotonic() + 30  # (the slot is freed just after the close frame went out)
                while True:
                    async with s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as again:
                        if (await again.receive()).type == aiohttp.WSMsgType.BINARY:  # (else closed: the cap)
                            return code, reason, len(await apps_of(logs))
                        if time.monotonic() > deadline:
                            return code, reason, -1
                    await asyncio.sleep(0.1)

        try:
            code, reason, second = run(go())
        finally:
            kill_all(watch_processes(logs))
    assert code == aiohttp.WSCloseCode.INTERNAL_ERROR and reason == "the app was killed (signal 9)"
    assert second == 1  # (not -1: refused past the cap)


def test_a_session_whose_app_cannot_start_is_closed_with_its_error_said_once(tmp_path: Path) -> None:
    """The app refuses what it is given (a steptable.toml made unusable after serve started: serve refuses one at
    its start) and exits 2 at its start: the session showed nothing, open for good, and the server's log said the
    app's error twice."""
    logs = a_run(tmp_path / "logs")
    with serving(logs) as (port, proc):
        (logs / "steptable.toml").write_text('[schema]\nname = "bad name"\n')
        origin = f"http://127.0.0.1:{port}"

        async def go() -> tuple[int | None, str]:
            async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as w:
                return await until_closed(w)

        code, reason = run(go())
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
    with serving(later) as (port, proc):
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
                            a_run(later)
                    elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
                        break

        with contextlib.suppress(asyncio.TimeoutError):
            run(asyncio.wait_for(go(), 60))
    assert proc.stdout is not None
    assert "no such path (yet)" in proc.stdout.read()
    assert re.search(r"\n\s*4321\s", screen), screen[-2000:]


def test_the_sessions_apps_end_when_the_server_is_killed(tmp_path: Path) -> None:
    """serve killed with SIGKILL (the OOM killer) ran no shutdown: its sessions' apps lived on, children of init,
    for good. Each ends by itself once its server is gone."""
    logs = a_run(tmp_path / "logs")
    apps: list[int] = []
    try:
        with serving(logs) as (port, proc):
            origin = f"http://127.0.0.1:{port}"

            async def go() -> None:
                async with aiohttp.ClientSession() as s, s.ws_connect(f"{origin}/ws/{TOKEN}", origin=origin) as w:
                    await until_drawn(w, r"\n\s*4321\s")  # (then the app waits, writing nothing: a write to
                    apps.extend(watch_processes(logs))      # the dead server's pipe would end it anyway)
                    proc.kill()
                    proc.wait()

            run(go())
        assert apps
        deadline = time.monotonic() + 60
        while any(alive(pid) for pid in apps) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(pid) for pid in apps)
    finally:
        kill_all(apps)



def test_an_app_that_quits_is_left_to_end_and_a_hung_one_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    """textual-serve's stop returns once the app closed its output, while its process is still ending: the server
    killed it there and then (SIGKILL in its own teardown), or, where it had just exited, the kill's poll reaped it
    under asyncio's child watcher ("Unknown child process pid N, will report returncode 255" in the log, about every
    other session). An app that quits is waited for; one that does not is killed after QUIT_WAIT_S."""
    from steptable.serve import session

    monkeypatch.setattr(session, "QUIT_WAIT_S", 2.0)

    class Quitting:  # (the part of textual-serve's AppService that end() uses)
        def __init__(self, process: asyncio.subprocess.Process) -> None:
            self._process = process

        async def stop(self) -> None:  # the app said it quits: its output is closed, its process ends soon after
            pass

    async def go(seconds: float) -> int | None:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", f"import time; time.sleep({seconds})")
        await session.end(Quitting(proc))  # type: ignore[arg-type]
        return proc.returncode

    assert run(go(0.3)) == 0
    assert run(go(60)) == -signal.SIGKILL
