"""The watch app's speed: first frame with rows, jumps, memory, append-to-screen latency. Anchored on a bare Textual
app (one Static) measured in the same run.

    python bench/bench_app.py                 # 148 MB and 1 GB files, 3 repeats, 10-arm latency for 10 s
    python bench/bench_app.py --quick         # 148 MB only, 1 repeat, 4 s of latency
    python bench/bench_app.py --latency-only --poll 0.1 --rate 20   # latency alone, other follow mode / load

Where tmux is installed, the first frame is also measured in a real terminal (a detached 200x50 tmux session):
``steptable watch FILE`` until the last step's row is on screen, against the bare app until its text is.

Each measurement runs in a fresh interpreter, headless (``App.run_test``), at 160 x 48. "First frame" is the time
from launching the interpreter to the end of the first screen refresh that shows data rows (the bare app: its first
refresh); imports are included on both sides, since the user waits for them too. Files are generated into a temp
dir and deleted. Goals: first frame <= 1.5x the bare app (both sizes; rows from the end of a big file may show before
the whole file is parsed), jump to the first row and back <= 50 ms each, append-to-screen p99 <= 150 ms while 10 arms
receive rows, resident memory bounded (reported).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SIZE = (160, 48)
KEYS = ["actor/pg_loss", "actor/entropy", "actor/grad_norm", "actor/pg_clipfrac", "actor/ppo_kl", "actor/lr",
        "critic/score/mean", "critic/score/max", "critic/score/min", "critic/rewards/mean", "critic/rewards/max",
        "critic/rewards/min", "critic/advantages/mean", "critic/advantages/max", "critic/advantages/min",
        "critic/returns/mean", "critic/returns/max", "critic/returns/min", "response_length/mean",
        "response_length/max", "response_length/min", "response_length/clip_ratio", "prompt_length/mean",
        "prompt_length/max", "timing_s/gen", "timing_s/ref", "timing_s/old_log_prob", "timing_s/adv",
        "timing_s/update_actor", "timing_s/step", "timing_per_token_ms/gen", "timing_per_token_ms/update_actor",
        "perf/mfu/actor", "perf/throughput", "perf/max_memory_allocated_gb", "perf/total_num_tokens",
        "val-core/gsm8k/reward/mean@1", "route/qmass", "route/auroc", "route/keep", "route/stale"]


# ---------------------------------------------------------------------------------------------------- data


def _bodies(n: int, seed: int) -> list[str]:
    """``n`` distinct row bodies (every key but step / ts): each metric noisy around its own level (levels span
    1e-4..1e3), so the values look like a run's and the alert detectors stay quiet, as on a healthy run."""
    rng = random.Random(seed)
    levels = {k: rng.choice((-1, 1)) * 10.0 ** rng.uniform(-4, 3) for k in KEYS}
    out = []
    for _ in range(n):
        row = {k: float(f"{lv * (1 + 0.05 * rng.gauss(0.0, 1.0)):.8g}") for k, lv in levels.items()}
        row["route/stale"] = rng.randrange(0, 50)
        out.append(json.dumps(row)[1:])
    return out


def generate(path: Path, target_bytes: int, seed: int = 0, t0: float = 1.7e9) -> int:
    """A metrics.jsonl of about ``target_bytes``: 43 keys per row (step, ts and 41 metrics). Returns rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    bodies = _bodies(997, seed)
    rows = 0
    size = 0
    with open(path, "w") as fh:
        while size < target_bytes:
            block = []
            for _ in range(1000):
                block.append(f'{{"step": {rows}, "ts": {t0 + 2.5 * rows}, {bodies[rows % len(bodies)]}\n')
                rows += 1
            text = "".join(block)
            fh.write(text)
            size += len(text)
    return rows


# ---------------------------------------------------------------------------------------------------- children


def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory in MB."""
    cur = peak = 0.0
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                cur = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    return cur, peak


def new_row_stamps(session: Any, seen: dict[str, int]) -> list[float]:
    """The write time of the last row of each run that gained rows since ``seen`` (run -> rows; updated)."""
    stamps = []
    for rid, run in session.runs.items():
        if run.rows > seen.get(rid, 0):
            seen[rid] = run.rows
            stamps.append(run.store.wall_times[run.rows - 1])
    return stamps


async def _after_refresh(app: Any) -> float:
    fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    app.call_after_refresh(lambda: fut.done() or fut.set_result(time.time()))
    return await fut


def child_bare(launch: float) -> dict[str, Any]:
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("a bare Textual app")

    async def main() -> dict[str, Any]:
        app = Bare()
        async with app.run_test(size=SIZE):
            t = await _after_refresh(app)
        return {"first_frame_s": t - launch, "cpu_s": time.process_time()}

    return asyncio.run(main())


def child_app(launch: float, path: str, rows: int, full: bool, jumps: bool) -> dict[str, Any]:
    from steptable.app import make_app
    from steptable.app.widgets.grid import StepGrid

    async def main() -> dict[str, Any]:
        app = make_app([path])
        out: dict[str, Any] = {}
        drawn: list[tuple[float, float]] = []
        shown = app._display

        def display(screen: Any, renderable: Any) -> None:  # (the end of each refresh's output)
            shown(screen, renderable)
            if not drawn and renderable is not None and any(g.drawn_rows for g in app.query(StepGrid)):
                drawn.append((time.time(), time.process_time()))

        app._display = display  # type: ignore[method-assign]
        async with app.run_test(size=SIZE):
            while True:  # poll every 2 ms for rows, then wait for the refresh that draws them
                grids = list(app.query(StepGrid))
                if grids and grids[0].rows:
                    break
                if time.time() - launch > 60:  # (an app that died or never got rows: said, not waited for)
                    raise RuntimeError(f"no rows on screen 60 s after launch (app running: {app.is_running})")
                await asyncio.sleep(0.002)
            t = await _after_refresh(app)
            out["cpu_s"] = time.process_time()
            grid = grids[0]
            out["first_frame_s"] = t - launch
            # (that refresh may come before the new table is laid out and drawn, or a refresh or two after it: the
            # end of the output of the refresh that drew the table's first data row)
            while not drawn:
                await _after_refresh(app)
            out["drawn_s"], out["drawn_cpu_s"] = drawn[0][0] - launch, drawn[0][1]
            out["first_rows"] = grid.rows
            out["preview"] = app.session.runs[next(iter(app.session.runs))].preview is not None
            out["rss_first_mb"], _ = _rss_mb()
            if full:
                t_full = time.time()
                while grid.rows < rows:
                    await asyncio.sleep(0.01)
                await _after_refresh(app)
                out["full_rows"] = grid.rows
                out["full_after_first_s"] = time.time() - t_full
                t_scan = time.time()
                while not app.feed.scanner.idle.is_set() and time.time() - t_scan < 120:
                    await asyncio.sleep(0.05)  # the alert detectors go through the history in the background
                out["alerts_after_full_s"] = time.time() - t_scan
                out["rss_full_mb"], out["rss_peak_mb"] = _rss_mb()
            if jumps:
                firsts, backs = [], []
                for _ in range(7):
                    t0 = time.perf_counter()
                    grid.action_first()
                    await _after_refresh(app)
                    firsts.append(time.perf_counter() - t0)
                    assert grid.scroll_y == 0
                    t0 = time.perf_counter()
                    grid.action_follow()
                    await _after_refresh(app)
                    backs.append(time.perf_counter() - t0)
                    assert grid.scroll_y == grid.max_scroll_y
                out["jump_first_ms"] = 1000 * statistics.median(firsts)
                out["jump_back_ms"] = 1000 * statistics.median(backs)
                out["jump_max_ms"] = 1000 * max(firsts + backs)
        return out

    return asyncio.run(main())


def child_latency(root: str, arms: int, seconds: float, rate: float, poll: float | None) -> dict[str, Any]:
    """Append-to-screen latency: a writer process appends ``rate`` rows/s to each of ``arms`` files, each row
    stamped with its write time; the app notes, after each refresh that shows new rows, now - that stamp."""
    from steptable.app.app import StepTableApp
    from steptable.app.feed import Feed
    from steptable.app.messages import RunsChanged

    lat: list[float] = []

    class Timed(StepTableApp):
        seen: dict[str, int] = {}  # noqa: RUF012

        def on_runs_changed(self, message: RunsChanged) -> None:
            super().on_runs_changed(message)
            stamps = new_row_stamps(self.session, self.seen)
            if stamps:
                self.call_after_refresh(lambda: lat.extend(time.time() - s for s in stamps))

    async def main() -> dict[str, Any]:
        # (more runs than a screen of tables open as the run list: the latency is that of their tables, so they
        # are shown as tables, as after opening them all from the list)
        app = Timed(Feed([root], poll=poll, sweep_min=arms))
        async with app.run_test(size=SIZE):
            while len(app.session.runs) < arms:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            lat.clear()
            writer = subprocess.Popen([sys.executable, __file__, "_writer", root, str(arms), str(seconds), str(rate)])
            while writer.poll() is None:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
        lat.sort()
        return {
            "samples": len(lat),
            "p50_ms": 1000 * lat[len(lat) // 2],
            "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))],
            "max_ms": 1000 * lat[-1],
        }

    return asyncio.run(main())


def writer(root: str, arms: int, seconds: float, rate: float) -> None:
    """Append one row per arm every 1/rate s, each stamped with the time it is written."""
    bodies = _bodies(50, 1)
    files = [open(Path(root) / f"arm{i:02d}" / "metrics.jsonl", "a") for i in range(arms)]
    step = 100_000
    end = time.time() + seconds
    period = 1.0 / rate
    nxt = time.time()
    while time.time() < end:
        for i, fh in enumerate(files):
            fh.write(f'{{"step": {step}, "ts": {time.time()}, {bodies[(step + i) % len(bodies)]}\n')
            fh.flush()
        step += 1
        nxt += period
        time.sleep(max(0.0, nxt - time.time()))
    for fh in files:
        fh.close()


# ---------------------------------------------------------------------------------------------------- parent


CHILD_ENV: dict[str, str] = {}


def run_child(*args: str, timeout: float = 600, script: str = __file__,
              env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``script``'s child mode ``args[0]`` (its launch time passed after it) in a fresh interpreter with ``env``
    (default: this module's CHILD_ENV); the JSON object it prints last."""
    launch = time.time()
    proc = subprocess.run([sys.executable, script, *args[:1], str(launch), *args[1:]], capture_output=True,
                          text=True, timeout=timeout, env=(CHILD_ENV if env is None else env) or None)
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _ms(seconds: list[float]) -> str:
    return ", ".join(f"{1000 * x:.0f}" for x in seconds)


def pty_first_frames(path: Path, rows: int, repeat: int) -> tuple[list[float], list[float]]:
    """Seconds to the first frame in a real terminal (a detached tmux session, bench_sweep's ``pty_first_frame``),
    interleaved: the bare app to its text on screen, ``steptable watch`` to the last step's row on screen."""
    import re

    import bench_sweep

    bench_sweep.CHILD_ENV.update(CHILD_ENV)  # (the children's bytecode cache)
    here = Path(__file__).parent
    bare_cmd = [sys.executable, str(here / "bench_sweep.py"), "_bare_tty"]
    app_cmd = [sys.executable, "-m", "steptable", "watch", str(path)]
    last = re.compile(rf"(?<![\d.]){rows - 1}(?![\d.])")
    bare, mine = [], []
    for _ in range(repeat):
        bare.append(bench_sweep.pty_first_frame(bare_cmd, "a bare Textual app"))
        mine.append(bench_sweep.pty_first_frame(app_cmd, last))
    return bare, mine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gb", type=float, default=1.0, help="size of the big file (0 skips it)")
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=5.0, help="rows per second per arm while measuring latency")
    ap.add_argument("--poll", type=float, default=0.0, help="follow by stat polling every POLL s (0: notification)")
    ap.add_argument("--latency-only", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.repeat, args.gb, args.seconds = 1, 0.0, 4.0
    tmp = Path(tempfile.mkdtemp(prefix="steptable-bench-app-"))
    # Bytecode for the children in the temp dir: where PYTHONDONTWRITEBYTECODE is set (as here) every child would
    # compile steptable from source while Textual's installed .pyc load; an installed steptable has its .pyc too.
    CHILD_ENV.update(os.environ)
    CHILD_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    CHILD_ENV["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    try:
        run_child("_warm")  # fills the bytecode cache and the page cache for both sides
        sizes = [("148 MB", 148_000_000)] + ([(f"{args.gb:g} GB", int(args.gb * 1e9))] if args.gb > 0 else [])
        if args.latency_only:
            sizes = []
        for label, nbytes in sizes:
            path = tmp / label.replace(" ", "") / "run" / "metrics.jsonl"
            t0 = time.time()
            rows = generate(path, nbytes)
            print(f"{label}: {rows:,} rows x 43 keys, {path.stat().st_size / 1e6:.0f} MB (written in "
                  f"{time.time() - t0:.1f} s)", flush=True)
            bare, mine, bare_cpu, mine_cpu, drawn, drawn_cpu = [], [], [], [], [], []
            extra: dict[str, Any] = {}
            for r in range(args.repeat):
                res = run_child("_bare")
                bare.append(res["first_frame_s"])
                bare_cpu.append(res["cpu_s"])
                res = run_child("_app", str(path), str(rows), "1" if r == 0 else "0", "1" if r == 0 else "0")
                mine.append(res["first_frame_s"])
                mine_cpu.append(res["cpu_s"])
                drawn.append(res["drawn_s"])
                drawn_cpu.append(res["drawn_cpu_s"])
                if r == 0:
                    extra = res
            b, m = statistics.median(bare), statistics.median(mine)
            print(f"  first frame: bare Textual app {1000 * b:.0f} ms, steptable {1000 * m:.0f} ms "
                  f"({extra.get('first_rows', 0):,} rows, preview={extra.get('preview')}), ratio {m / b:.2f}x "
                  f"(worst of each {max(mine) / max(bare):.2f}x; goal <= 1.5x)  "
                  f"[runs: bare {', '.join(f'{1000 * x:.0f}' for x in bare)}; "
                  f"steptable {', '.join(f'{1000 * x:.0f}' for x in mine)} ms]", flush=True)
            # (CPU seconds of the process, all threads, to the same point: on a shared machine a wall time also
            # counts the other jobs' share of the cores)
            bc, mc = statistics.median(bare_cpu), statistics.median(mine_cpu)
            print(f"  first frame, CPU time of the process: bare Textual app {1000 * bc:.0f} ms, steptable "
                  f"{1000 * mc:.0f} ms, ratio {mc / bc:.2f}x (medians)  [bare "
                  f"{', '.join(f'{1000 * x:.0f}' for x in bare_cpu)}; steptable "
                  f"{', '.join(f'{1000 * x:.0f}' for x in mine_cpu)} ms]", flush=True)
            d, dc = statistics.median(drawn), statistics.median(drawn_cpu)
            print(f"  first frame with the rows drawn (the end of the output of the refresh that drew a data row; the "
                  f"lines above stop at the first refresh after the rows reached the table): wall {1000 * d:.0f} ms, "
                  f"ratio {d / b:.2f}x (worst of each {max(drawn) / max(bare):.2f}x); CPU {1000 * dc:.0f} ms, ratio "
                  f"{dc / bc:.2f}x (medians; goal <= 1.5x)  [wall {_ms(drawn)}; CPU {_ms(drawn_cpu)} ms]", flush=True)
            if shutil.which("tmux"):
                tb, tm = pty_first_frames(path, rows, args.repeat)
                print(f"  first frame in tmux 200x50 (until the last step's row is on screen): bare "
                      f"Textual app {1000 * max(tb):.0f} ms, steptable {1000 * max(tm):.0f} ms, ratio "
                      f"{max(tm) / max(tb):.2f}x (worst of {args.repeat}; goal <= 1.5x)  [bare "
                      f"{', '.join(f'{1000 * x:.0f}' for x in tb)}; steptable "
                      f"{', '.join(f'{1000 * x:.0f}' for x in tm)} ms]", flush=True)
            if "full_rows" in extra:
                print(f"  full store: {extra['full_rows']:,} rows {extra['full_after_first_s']:.1f} s after the first "
                      f"frame; alerts over the history {extra['alerts_after_full_s']:.1f} s after that", flush=True)
                print(f"  RSS {extra['rss_first_mb']:.0f} MB at the first frame, {extra['rss_full_mb']:.0f} MB loaded "
                      f"(peak {extra['rss_peak_mb']:.0f} MB; numeric payload {rows * 43 * 8 / 1e6:.0f} MB)", flush=True)
            if "jump_first_ms" in extra:
                print(f"  jump to the first row {extra['jump_first_ms']:.1f} ms, back to the newest "
                      f"{extra['jump_back_ms']:.1f} ms (medians of 7; max {extra['jump_max_ms']:.1f} ms; goal <= "
                      f"50 ms)", flush=True)
            shutil.rmtree(path.parent.parent)
        root = tmp / "arms"
        for i in range(args.arms):
            generate(root / f"arm{i:02d}" / "metrics.jsonl", 200_000, seed=i, t0=time.time() - 3600)
        res = run_child("_latency", str(root), str(args.arms), str(args.seconds), str(args.rate), str(args.poll))
        how = f"stat polling every {args.poll:g} s" if args.poll else "file notification"
        print(f"append-to-screen ({how}), {args.arms} arms x {args.rate:g} rows/s for {args.seconds:g} s: "
              f"p50 {res['p50_ms']:.0f} ms, p99 {res['p99_ms']:.0f} ms, max {res['max_ms']:.0f} ms "
              f"({res['samples']} samples; goal p99 <= 150 ms)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _child_main() -> None:
    mode, launch = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    rest = sys.argv[3:]
    if mode == "_warm":
        import steptable.alerts.engine
        import steptable.app
        import steptable.app.screens.generations
        import steptable.ingest
        import steptable.schemas  # noqa: F401

        out = {}
    elif mode == "_bare":
        out = child_bare(launch)
    elif mode == "_app":
        out = child_app(launch, rest[0], int(rest[1]), rest[2] == "1", rest[3] == "1")
    elif mode == "_latency":
        out = child_latency(rest[0], int(rest[1]), float(rest[2]), float(rest[3]), float(rest[4]) or None)
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out), flush=True)
    os._exit(0)  # do not wait for the follower thread (it may still be parsing a big file)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_writer":
        writer(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    elif len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        _child_main()
    else:
        main()
