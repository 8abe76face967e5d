"""Fixtures shared by the app tests: fixed run files, a follower the test advances, waiting helpers.

No sleeps: the follower here is the real ``steptable.ingest.Follower``, but its scan runs when the test says so
(``tick``), and the app's messages are awaited with ``pilot.pause()``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from steptable.app import make_app
from steptable.app.app import StepTableApp
from steptable.app.feed import Feed
from steptable.app.screens.generations import GenerationsScreen
from steptable.app.session import Session
from steptable.ingest import Follower, RunStore
from steptable.ingest.files.follow import load

T0 = 1_700_000_000.0  # the first row's timestamp; rows are 2 s apart
ARMS = ("vanilla", "routeA", "absorb")
SIZE = (120, 32)

HOSTILE = (
    "clear\x1b[2Jscreen, clip\x1b]52;c;ZXZpbA==\x07board, \u202eesrever\u202c, [bold red]markup[/], "
    "[link=https://evil.example]click[/link], title\x1b]0;pwned\x07 end"
)


def row(arm_i: int, step: int, routed: bool = True) -> dict[str, Any]:
    """A deterministic routing-arm row (no randomness)."""
    t = step / 40
    r: dict[str, Any] = {
        "step": step,
        "ts": T0 + 2 * step,
        "rew": round(0.2 + 0.5 * (1 - math.exp(-t)) + 0.1 * math.sin(step + arm_i), 4),
        "rew_s": round(0.25 + 0.4 * (1 - math.exp(-t)) + 0.1 * math.cos(step * 1.3 + arm_i), 4),
        "gt_s": [(step * 7 + arm_i) % 9, 16],
        "hack_s": [(step * 5 + 3 * arm_i) % 7, 16],
        "loss": round(0.05 * math.sin(step / 3 + arm_i), 4),
        "gn": round(0.8 + 0.3 * math.cos(step / 5), 4),
        "lr": 1e-5,
    }
    if routed:
        r.update(
            auroc=round(0.6 + 0.25 * math.sin(step / 6 + arm_i), 3),
            cos=round(0.1 * math.cos(step / 4), 3),
            qmass=round(0.3 + 0.2 * math.sin(step / 9 + arm_i), 3),
            keep=0.5, resid=round(0.3 - 0.1 * math.sin(step / 7), 3), rout=round(0.2 + 0.1 * math.sin(step / 7), 3),
            tlo=-0.4, thi=round(1.1 + 0.1 * math.sin(step / 8), 3), stale=step % 10,
        )
    return r


def write_rows(path: Path, rows: Iterable[dict[str, Any]], extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
        fh.write(extra)


def make_runs(root: Path, steps: int = 40, arms: Iterable[str] = ARMS) -> Path:
    for i, arm in enumerate(arms):
        write_rows(root / arm / "metrics.jsonl", (row(i, s, routed=arm != "vanilla") for s in range(steps)))
    return root


def append(root: Path, arm: str, start: int, stop: int, arm_i: int = 0) -> None:
    write_rows(root / arm / "metrics.jsonl", (row(arm_i, s) for s in range(start, stop)))


class ManualFollower:
    """The real Follower; ``run`` only waits, the test calls ``tick`` to scan and report as ``run`` would."""

    def __init__(self, paths: list[Path]) -> None:
        from steptable.alerts.replaced import read_replaced

        # (as the app's feed makes it: a resume's dropped rows read for their alerts)
        self.real = Follower([str(p) for p in paths], on_resume=read_replaced)
        self.on_change: Callable[[set[str]], None] | None = None
        self.ready = threading.Event()

    @property
    def stores(self) -> Any:
        return self.real.stores

    def run(self, stop: threading.Event, on_change: Callable[[set[str]], None]) -> None:
        self.on_change = on_change
        self.ready.set()
        stop.wait()

    def tick(self) -> set[str]:
        assert self.ready.wait(10), "the feed worker did not start"
        changed = self.real.scan()
        if changed and self.on_change is not None:
            self.on_change(changed)
        return changed


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def manual_app(root: Path, now: float | None = None, **kw: Any) -> tuple[StepTableApp, ManualFollower, Clock]:
    follower = ManualFollower([root])
    clock = Clock(now if now is not None else T0 + 2 * 39 + 5)
    feed = Feed([str(root)], follower=follower, preview_min_bytes=0)
    app = make_app([str(root)], clock=clock, feed=feed, tick=3600, **kw)
    return app, follower, clock


async def sync(pilot: Any, follower: ManualFollower) -> None:
    """One follower pass, then let the app handle what it posted (rows, then the alerts they raise)."""
    follower.tick()
    await pilot.pause()
    idle = pilot.app.feed.scanner.idle
    for _ in range(1000):  # the alert thread: bounded wait, no fixed sleep
        if idle.is_set():
            break
        await pilot.pause(0.005)
    await pilot.pause()



async def until(pilot: Any, done: Callable[[], bool]) -> None:
    """Let the app run until ``done()`` (bounded: a generous wait for a worker's thread, never a timed assertion)."""
    for _ in range(3000):
        if done():
            return
        await pilot.pause(0.01)
    raise AssertionError("the condition waited for never came")


def screen_text(app: StepTableApp) -> str:
    """What the terminal shows, as plain text (one line per row)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(s.text.rstrip() for s in strips)


def write_generations(run_dir: Path) -> Path:
    """A retrain-style generations file with hostile completions at step 10 and plain ones at steps 0 and 20."""
    path = run_dir / "emergence" / "generations.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for step in (0, 10, 20):
            for k in range(2):
                completion = HOSTILE if step == 10 and k == 0 else f"answer {k} at step {step}\nsecond line"
                fh.write(json.dumps({"step": step, "prompt": f"prompt {k} [b]x[/b]", "completion": completion,
                                     "reward": 1.0 - k, "num_tokens": 12 + k}) + "\n")
    return path

async def open_generations(pilot: Any) -> GenerationsScreen:
    """Press v and wait until the viewer has indexed its files."""
    app = pilot.app
    await pilot.press("v")
    screen = app.screen
    assert isinstance(screen, GenerationsScreen)
    indexing = [w for w in app.workers if w.group == "gen-index"]
    if indexing:  # (an empty list would mean every worker, the feed's included)
        await app.workers.wait_for_complete(indexing)
    await pilot.pause()
    return screen


def scan_rounds(scanner: Any, rounds: Iterable[set[str]]) -> bool:
    """Run an AlertScanner's thread over ``rounds`` of changed runs, each waited for (bounded); True when the thread
    is still alive after the last."""
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=scanner.run, args=(stop,))
    thread.start()
    try:
        for ids in rounds:
            scanner.changed(ids)
            assert scanner.idle.wait(10)
        return thread.is_alive()
    finally:
        stop.set()
        thread.join()


def static_text(w: Static) -> str:
    """What a Static widget shows, as text."""
    return str(w.render())


def lines_of(app: Any, start: str, n: int) -> list[str]:
    """``n`` screen lines from the first one holding ``start``."""
    shown = screen_text(app).split("\n")
    i = next(k for k, line in enumerate(shown) if start in line)
    return shown[i : i + n]


def keyed_stores(tmp_path: Path, arms: int, keys: int) -> list[RunStore]:
    """The stores of ``arms`` runs of 40 steps, each logging ``keys`` keys in three groups."""
    for a in range(arms):
        write_rows(tmp_path / f"arm{a}" / "metrics.jsonl",
                   ({"step": s, **{f"g{k % 3}/m{k}": (s * 0.37 + k + a) % 3.1 for k in range(keys)}}
                    for s in range(40)))
    return list(load(tmp_path).values())


def session_counting_measures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[RunStore], Session, list[str]]:
    """A session over 4 runs of 30 keys, and the keys ``auto_col`` measures from then on."""
    import steptable.schemas as schemas

    stores = keyed_stores(tmp_path, 4, 30)
    session = Session()
    for s in stores:
        session.update(s.path.parent.name, s)
    measured: list[str] = []
    real = schemas.auto_col

    def counting(key: str, *a: Any, **kw: Any) -> Any:
        measured.append(key)
        return real(key, *a, **kw)

    monkeypatch.setattr(schemas, "auto_col", counting)
    monkeypatch.setattr(schemas.arrange, "auto_col", counting)  # (what schemas.layout calls)
    return stores, session, measured


def app_rows(start: int, stop: int, loss: float = 1.0) -> list[dict[str, Any]]:
    """Rows of steps ``start``..``stop - 1``: loss, reward and a clock 2 s a step."""
    return [{"step": s, "loss": loss + 0.01 * (s % 3), "rew": 0.5 + 0.01 * (s % 4), "ts": 1.7e9 + 2 * s}
            for s in range(start, stop)]


SIGNALS = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]


def handlers_are_ours() -> bool:
    """The handlers in place are quit_on_signals' (a TERM sent otherwise would end the test run)."""
    return all(getattr(signal.getsignal(s), "__qualname__", "").startswith("quit_on_signals") for s in SIGNALS)


class SignalledApp:
    """A stand-in for the demo's app: it is sent TERM while it runs, and returns when asked to exit (bounded)."""

    return_code = 0

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.handlers_were_ours = False

    def exit(self) -> None:
        self.asked.set()

    def run(self) -> None:
        self.handlers_were_ours = handlers_are_ours()
        if self.handlers_were_ours:
            os.kill(os.getpid(), signal.SIGTERM)
        self.asked.wait(10)


GOOD_SAMPLE = {"step": 0, "prompt": "p", "completion": "c", "reward": 1.0}


def write_side_file(run_dir: Path, *lines: str) -> Path:
    """retrain's generations side file in ``run_dir``: one good sample, then ``lines`` as they are."""
    path = run_dir / "emergence" / "generations.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in (json.dumps(GOOD_SAMPLE), *lines)))
    return path


class PtyWatch:
    """``steptable watch PATH`` in a subprocess on a fresh pty (a session of its own, ``xterm-256color``): ``read``
    collects what it draws into ``out``; ``close`` ends it (killed if still there) and gives its exit code."""

    def __init__(self, path: Path, cwd: Path) -> None:
        import subprocess
        import sys

        self.master, slave = os.openpty()
        root = Path(__file__).resolve().parents[2]
        env = {**os.environ, "PYTHONPATH": str(root), "TERM": "xterm-256color"}
        self.proc = subprocess.Popen([sys.executable, "-m", "steptable", "watch", str(path)], stdin=slave,
                                     stdout=slave, stderr=slave, env=env, start_new_session=True, close_fds=True,
                                     cwd=cwd)  # fmt: skip
        os.close(slave)
        self.out = b""

    def read(self, wait: float) -> bool:
        """What the app wrote within ``wait`` seconds, if anything (False: nothing, or the pty is gone)."""
        import select

        if not select.select([self.master], [], [], wait)[0]:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # (EIO: the process is gone and the pty with it)
            return False
        self.out += chunk
        return bool(chunk)

    def close(self) -> int:
        if self.proc.poll() is None:
            self.proc.kill()
        os.close(self.master)
        return self.proc.wait()
