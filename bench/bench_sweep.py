"""A sweep in the watch app and in ``summary --top``: the run list's first frame, opening runs, memory, filtering.
Anchored on a bare Textual app (one Static) measured in the same run, headless (``App.run_test``) and in a real
terminal (tmux).

    python bench/bench_sweep.py                      # 200 runs x 10,000 steps x 20 metrics, 2,000 x 1,000
    python bench/bench_sweep.py --runs 200 --steps 2000 --big-runs 0   # smaller

The sweeps are written by bench/sweepdata.py under --data (kept between runs: they take minutes to write; delete
them when done). "First frame" is the time from launching the interpreter to the refresh that shows the run list
with every run in it ("N of N shown"); imports count on both sides. Goals: first frame <= 2x the bare app; opening one
run's table (its whole history read) <= 300 ms; resident memory after the first frame <= 150 MB and after opening 10
runs <= 150 MB + 2x their numeric payload; filtering 2,000 runs by a glob <= 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_app
from bench_app import _after_refresh, _rss_mb, child_bare
from sweepdata import make_sweep

SIZE = (200, 50)
CHILD_ENV: dict[str, str] = {}


async def _listed(app: Any, runs: int) -> Any:
    from steptable.app.screens.runs import RunsScreen

    while True:
        scr = app.screen
        if isinstance(scr, RunsScreen) and scr.is_mounted and len(scr.listed) >= runs:
            return scr
        await asyncio.sleep(0.002)


def child_sweep(launch: float, root: str, runs: int, steps: int, metrics: int, opens: bool) -> dict[str, Any]:
    from steptable.app import make_app

    async def main() -> dict[str, Any]:
        app = make_app([root])
        out: dict[str, Any] = {}
        async with app.run_test(size=SIZE) as pilot:
            scr = await _listed(app, runs)
            out["first_frame_s"] = await _after_refresh(app) - launch
            out["rss_first_mb"], _ = _rss_mb()
            t0 = time.time()
            while app.feed.sweep.index.pending():
                await asyncio.sleep(0.01)
            out["digests_s"] = time.time() - t0
            filt = []
            for pat in ("*seed1?_*", "*r1*", "re:seed[0-4]_", "lr=1e-05", ""):
                t0 = time.perf_counter()
                scr.state.pattern = pat
                scr.refresh_list()
                await _after_refresh(app)
                filt.append(time.perf_counter() - t0)
            out["filter_ms"] = [1000 * x for x in filt]
            out["new_run_ms"] = await _new_runs(app, scr, Path(root), NEW_RUNS)
            if opens:
                scr.runlist.move_to(0)
                t0 = time.time()
                scr.action_open()
                while not app.panels or next(iter(app.panels.values())).grid.rows < steps:
                    await asyncio.sleep(0.002)
                out["open_one_ms"] = 1000 * (await _after_refresh(app) - t0)
                await pilot.press("r")
                await pilot.pause(0.05)
                scr.state.selected = {e.run_id for e in scr.listed[:10]}
                t0 = time.time()
                scr.action_open()
                while len(app.panels) < 10 or any(p.grid.rows < steps for p in app.panels.values()):
                    await asyncio.sleep(0.01)
                out["open_ten_s"] = await _after_refresh(app) - t0
                out["rss_ten_mb"], out["rss_peak_mb"] = _rss_mb()
                out["payload_ten_mb"] = 10 * steps * (metrics + 1) * 8 / 1e6
        return out

    return asyncio.run(main())


NEW_RUNS = 20


def write_new_run(run: Path) -> None:
    """A run that appears under the sweep: its directory and a metrics.jsonl of 5 rows."""
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "reward/mean": 0.1 * s, "loss": 1.0 - 0.1 * s}) + "\n" for s in range(5)))


async def until_listed(scr: Any, name: str) -> None:
    """Poll (every 2 ms) until the run list ``scr`` holds the run ``name``."""
    while not any(e.run_id.startswith(name) for e in scr.listed):
        await asyncio.sleep(0.002)


async def _new_runs(app: Any, scr: Any, root: Path, count: int) -> list[float]:
    """Milliseconds from writing a new run (its directory and a metrics.jsonl of 5 rows) under ``root`` to the list
    refreshed with it, for ``count`` runs one after the other (removed afterwards: the sweep stays as made)."""
    made, out = [], []
    try:
        for i in range(count):
            await asyncio.sleep(0.2)
            run = root / f"zz_new_{os.getpid()}_{i}"
            made.append(run)
            t0 = time.perf_counter()
            write_new_run(run)
            await until_listed(scr, run.name)
            await _after_refresh(app)
            out.append(1000 * (time.perf_counter() - t0))
    finally:
        for run in made:
            shutil.rmtree(run, ignore_errors=True)
    return out


def pty_first_frame(cmd: list[str], needle: str | re.Pattern[str], timeout: float = 60.0) -> float:
    """Seconds from starting ``cmd`` in a detached 200x50 tmux session to ``needle`` (a text, or a pattern
    searched for) on its screen."""
    name = f"stb{os.getpid()}"
    env = " ".join(f"{k}={v}" for k, v in (("PYTHONPATH", os.environ.get("PYTHONPATH", "")),
                                           ("PYTHONPYCACHEPREFIX", CHILD_ENV.get("PYTHONPYCACHEPREFIX", ""))) if v)
    time.sleep(0.3)  # (the server of the previous session may still be exiting: a new one started then dies)
    t0 = time.time()
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", str(SIZE[0]), "-y", str(SIZE[1]),
                    f"env {env} {' '.join(cmd)}"], check=True)
    try:
        while time.time() - t0 < timeout:
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout
            if (needle.search(screen) is not None) if isinstance(needle, re.Pattern) else needle in screen:
                return time.time() - t0
            time.sleep(0.005)
        raise RuntimeError(f"{needle!r} not on screen after {timeout} s")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def run_child(*args: str, timeout: float = 900) -> dict[str, Any]:
    return bench_app.run_child(*args, timeout=timeout, script=__file__, env=CHILD_ENV)


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=CHILD_ENV or None)
    return time.perf_counter() - t0


def sweep_case(root: Path, runs: int, steps: int, metrics: int, repeat: int, opens: bool) -> None:
    t0 = time.time()
    size = make_sweep(root, runs, steps, metrics)
    print(f"{runs} runs x {steps:,} steps x {metrics} metrics: {size / 1e6:.0f} MB (ready in {time.time() - t0:.0f} s)",
          flush=True)
    bare, mine = [], []
    extra: dict[str, Any] = {}
    for r in range(repeat):
        bare.append(run_child("_bare")["first_frame_s"])
        res = run_child("_sweep", str(root), str(runs), str(steps), str(metrics), "1" if opens and r == 0 else "0")
        mine.append(res["first_frame_s"])
        extra = extra or res
    b, m = max(bare), max(mine)  # the worst of the repeats on both sides
    print(f"  run list first frame (run_test): bare Textual {1000 * b:.0f} ms, steptable {1000 * m:.0f} ms, ratio "
          f"{m / b:.2f}x (goal <= 2x)  [bare {', '.join(f'{1000 * x:.0f}' for x in bare)}; steptable "
          f"{', '.join(f'{1000 * x:.0f}' for x in mine)} ms]", flush=True)
    print(f"  every run's tail read {extra['digests_s']:.2f} s after the first frame; RSS at the first frame "
          f"{extra['rss_first_mb']:.0f} MB (goal <= 150 MB)", flush=True)
    print(f"  filter + redraw: {', '.join(f'{x:.0f}' for x in extra['filter_ms'])} ms (globs, regex, config, none; "
          f"goal <= 100 ms)", flush=True)
    lat = sorted(extra["new_run_ms"])
    print(f"  a new run written during the watch, on the list: median {lat[len(lat) // 2]:.0f} ms, worst "
          f"{lat[-1]:.0f} ms of {len(lat)} (goal: the append latency goal, p99 <= 150 ms)", flush=True)
    if "open_one_ms" in extra:
        print(f"  open one run ({steps:,} rows read whole, on screen): {extra['open_one_ms']:.0f} ms (goal <= 300 ms); "
              f"ten runs {extra['open_ten_s']:.2f} s, RSS {extra['rss_ten_mb']:.0f} MB (peak {extra['rss_peak_mb']:.0f}"
              f"; goal <= 150 + 2 x {extra['payload_ten_mb']:.0f} MB payload = "
              f"{150 + 2 * extra['payload_ten_mb']:.0f} MB)", flush=True)
    if shutil.which("tmux"):
        bare_cmd = [sys.executable, __file__, "_bare_tty"]
        app_cmd = [sys.executable, "-m", "steptable", "watch", str(root)]
        pb = [pty_first_frame(bare_cmd, "a bare Textual app") for _ in range(repeat)]
        pm = [pty_first_frame(app_cmd, f"{runs} of {runs} shown") for _ in range(repeat)]
        print(f"  run list first frame (tmux {SIZE[0]}x{SIZE[1]}): bare {1000 * max(pb):.0f} ms, steptable "
              f"{1000 * max(pm):.0f} ms, ratio {max(pm) / max(pb):.2f}x (worst of {repeat})", flush=True)
    top = [_timed([sys.executable, "-m", "steptable", "summary", str(root), "--top", "5", "--by", "reward/mean"])
           for _ in range(repeat)]
    print(f"  summary --top 5 --by reward/mean: {max(top):.2f} s (worst of {repeat})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "steptable-bench-sweep"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--metrics", type=int, default=20)
    ap.add_argument("--big-runs", type=int, default=2000)
    ap.add_argument("--big-steps", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="steptable-bench-sweep-"))
    CHILD_ENV.update(os.environ)
    CHILD_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    CHILD_ENV["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    data = Path(args.data)
    try:
        run_child("_warm")
        sweep_case(data / f"s{args.runs}x{args.steps}", args.runs, args.steps, args.metrics, args.repeat, True)
        if args.big_runs:
            sweep_case(data / f"s{args.big_runs}x{args.big_steps}", args.big_runs, args.big_steps, args.metrics,
                       1, False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _bare_tty() -> None:
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("a bare Textual app")

    Bare().run()


def _child_main() -> None:
    mode, launch = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    rest = sys.argv[3:]
    out: dict[str, Any] = {}
    if mode == "_warm":
        import steptable.app
        import steptable.app.screens.runs
        import steptable.summary.sweep  # noqa: F401
    elif mode == "_bare":
        out = child_bare(launch)
    elif mode == "_bare_tty":
        _bare_tty()
        return
    elif mode == "_sweep":
        out = child_sweep(launch, rest[0], int(rest[1]), int(rest[2]), int(rest[3]), rest[4] == "1")
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        _child_main()
    else:
        main()
