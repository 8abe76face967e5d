"""``steptable compare`` figures, each against an anchor measured in the same run.

1. End to end: 3 arms x 3 seeds x 100k steps x 40 metrics (9 JSONL files), ``steptable compare DIR --baseline
   vanilla --format jsonl`` against a pandas script doing the same (read_json(lines=True), the common range, the
   last 10% window, per-seed means, t intervals over seeds, Welch differences), each in a fresh interpreter,
   interleaved; the numbers of both are checked to agree. Goal: steptable <= 0.5x pandas.
2. Tokens: ``steptable summary`` of 3 arms (10k steps, 6 metrics) with the comparison lines, and the lines alone
   (o200k, offline; needs bpe-openai), over ``--seeds`` seeds of the data (worst and mean). Goal: the whole summary
   <= 300 tokens.
3. Live: the cost of bringing steptable.compare.live.LiveCompare up to date after one appended row per run, at
   several run lengths (goal: independent of the run length), against a full ``compare`` of the same runs.
4. Groups: watch's table of a seed group's means made whole and after one row a seed, and the chart's band of 3
   seeds against the same seeds drawn as lines; and the UI thread's longest block while watch takes a new group of
   3 seeds (the event loop's lag, from a 2 ms ticker), the build on its own thread against the same build made at
   once on the UI thread (``INLINE_ROWS`` raised past the rows), interleaved.

5. Rates: how often an arm that differs from the baseline by nothing but its seeds is called better or worse
   (nominal 5%), per seeds an arm, over ``--draws`` draws of in-memory runs (1000 steps, a seed's level spread .05,
   the within-run noise .2); the anchor is the same draws judged with the one-seed arm's interval from its own
   batch means (the rule before pooling), and the power at a true difference of .1.

6. Sweep: the share of null sweeps (10 and 100 arms, 3 seeds each and 1 seed each, none different) whose verdict
   line calls its best arm better beyond chance (Holm's procedure over the arms: nominal 5% family-wise), against
   the rule before it in the same draws (the best arm's own interval off 0), and the power at a true +.1 of one arm
   among 9 / 99 nulls (that arm called better); over ``--sweep-seeds`` seeds, each printed, the worst last. Only the
   window's values are drawn (the 100 steps of 1000 compared; seed level sd .05, noise sd .2; one seed each: level
   sd 0, the runs of one process, as an interval of one run's batch means tests them).

    python bench/bench_compare.py                      # all of them; data generated once into a temp dir
    python bench/bench_compare.py --only e2e --rows 20000 --reps 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent))  # this checkout's steptable, not an installed one

ARMS = (("vanilla", 0.0), ("routeA", 0.05), ("absorb", 0.02))
SEEDS = 3

PANDAS = textwrap.dedent('''
    import glob, json, math, os, sys
    import numpy as np, pandas as pd
    from scipy import stats
    root, base = sys.argv[1], sys.argv[2]
    frames = []
    for path in sorted(glob.glob(os.path.join(root, "*", "metrics.jsonl"))):
        arm, seed = os.path.basename(os.path.dirname(path)).rsplit("_seed", 1)
        df = pd.read_json(path, lines=True)
        df["arm"], df["seed"] = arm, seed
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    span = df.groupby(["arm", "seed"])["step"].agg(["min", "max"])
    lo, hi = span["min"].max(), span["max"].min()
    win = df[(df["step"] >= hi - 0.1 * (hi - lo)) & (df["step"] <= hi)]
    metrics = [c for c in df.columns if c not in ("step", "arm", "seed")]
    seeds = win.groupby(["arm", "seed"])[metrics].mean()
    g = seeds.groupby(level="arm")
    mean, n = g.mean(), g.count()
    se2 = g.var(ddof=1) / n
    half = stats.t.ppf(0.975, n - 1) * np.sqrt(se2)
    out = []
    for arm in mean.index:
        for m in metrics:
            rec = {"arm": arm, "metric": m, "mean": mean.loc[arm, m], "lo": mean.loc[arm, m] - half.loc[arm, m],
                   "hi": mean.loc[arm, m] + half.loc[arm, m]}
            if arm != base:
                a, b = se2.loc[arm, m], se2.loc[base, m]
                dof = (a + b) ** 2 / (a * a / (n.loc[arm, m] - 1) + b * b / (n.loc[base, m] - 1))
                d, h = mean.loc[arm, m] - mean.loc[base, m], stats.t.ppf(0.975, dof) * math.sqrt(a + b)
                rec.update(delta=d, delta_lo=d - h, delta_hi=d + h)
            out.append(rec)
    print(json.dumps(out))
''')


def generate(root: Path, rows: int, metrics: int) -> None:
    names = [f"m{j:02d}/value" for j in range(metrics)]
    for arm, lift in ARMS:
        for s in range(1, SEEDS + 1):
            path = root / f"{arm}_seed{s}" / "metrics.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            rng = random.Random(f"{arm}{s}")
            with open(path, "w") as f:
                for step in range(rows):
                    row: dict[str, Any] = {"step": step}
                    for j, name in enumerate(names):
                        v = (1 + j) * (0.5 + lift + 0.2 * step / rows) + rng.gauss(0, 0.1)
                        row[name] = None if rng.random() < 0.01 else v
                    f.write(json.dumps(row) + "\n")


def _timed(cmd: list[str], out: Path) -> float:
    t = time.perf_counter()
    with open(out, "w") as f:
        subprocess.run(cmd, stdout=f, check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    return time.perf_counter() - t


def end_to_end(root: Path, reps: int) -> None:
    script = root.parent / "anchor.py"
    script.write_text(PANDAS)
    ours, theirs = [], []
    for _ in range(reps):  # interleaved: a busy moment on a shared machine hits both
        ours.append(_timed([sys.executable, "-m", "steptable", "compare", str(root), "--baseline", "vanilla",
                            "--format", "jsonl"], root.parent / "ours.jsonl"))
        theirs.append(_timed([sys.executable, str(script), str(root), "vanilla"], root.parent / "pandas.json"))
    mine = {(r["arm"], r["metric"]): r for r in map(json.loads, (root.parent / "ours.jsonl").read_text().splitlines())}
    worst = 0.0
    for r in json.loads((root.parent / "pandas.json").read_text()):
        got = mine[(r["arm"], r["metric"])]
        for k in ("mean", "lo", "hi", "delta", "delta_lo", "delta_hi"):
            if k in r:
                worst = max(worst, abs(got[k] - r[k]) / max(abs(r[k]), 1e-300))
    print(f"end to end, {len(ARMS)} arms x {SEEDS} seeds x {args.rows} steps x {args.metrics} metrics:")
    print(f"  steptable compare: best {min(ours):.2f} s, median {statistics.median(ours):.2f} s")
    print(f"  pandas (anchor):   best {min(theirs):.2f} s, median {statistics.median(theirs):.2f} s")
    print(f"  ratio (best / best): {min(ours) / min(theirs):.2f}x (goal <= 0.5x); {len(mine)} results, "
          f"max relative difference from pandas {worst:.1e}")


def tokens(seeds: int) -> None:
    from bpe_openai import get_encoding

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_agent import run_cli

    enc = get_encoding("o200k_base")

    def count(text: str) -> int:
        return sum(len(enc.encode(line)) for line in text.splitlines(keepends=True))

    wholes, parts, shown = [], [], ""
    for seed in range(seeds):
        with tempfile.TemporaryDirectory() as tmp:
            for arm, lift in ARMS:
                rng = random.Random(arm if seed == 0 else f"{arm}/{seed}")  # (seed 0: the data of earlier figures)
                p = Path(tmp) / "exp" / arm / "metrics.jsonl"
                p.parent.mkdir(parents=True)
                with open(p, "w") as f:
                    for s in range(10_000):
                        f.write(json.dumps({
                            "step": s, "ts": 1.8e9 + 30 * s, "loss": rng.gauss(0, 0.05) - lift,
                            "grad_norm": abs(rng.gauss(0.4, 0.05)),
                            "reward": 0.3 + lift + 0.4 * s / 1e4 + rng.gauss(0, 0.03),
                            "kl": abs(rng.gauss(0.002, 0.0005)), "entropy": 0.6 + rng.gauss(0, 0.02),
                            "accuracy": rng.uniform(0.3, 0.7)}) + "\n")
            _, out = run_cli(["summary", str(Path(tmp) / "exp")])
        lines = out.splitlines(keepends=True)
        start = next(i for i, ln in enumerate(lines) if ln.startswith("Δ vs"))
        end = next(i for i, ln in enumerate(lines) if " alerts" in ln)
        wholes.append(count(out))
        parts.append(count("".join(lines[start:end])))
        shown = shown or out
    worst = max(range(seeds), key=wholes.__getitem__)
    print(f"summary of 3 arms (10k steps, 6 metrics), {seeds} seeds of the data:")
    print(f"  whole summary: worst {wholes[worst]} tokens (seed {worst}), mean {statistics.mean(wholes):.1f} "
          f"(goal <= 300 every seed); comparison lines: worst {max(parts)}, mean {statistics.mean(parts):.1f}")
    print("  seed 0:")
    print("".join("    " + ln for ln in shown.splitlines(keepends=True)), end="")


def live(lengths: list[int], metrics: int) -> None:
    from steptable.compare import choose_window, compare, group_runs, make_arms, pick_metrics
    from steptable.compare.live import LiveCompare
    from steptable.ingest import RunStore
    from steptable.ingest.parsed import Parsed

    print(f"live: one row appended to each of {len(ARMS) * SEEDS} runs ({metrics} metrics), then the table brought "
          "up to date")
    for n in lengths:
        stores = []
        for arm, lift in ARMS:
            for s in range(1, SEEDS + 1):
                st = RunStore(f"{arm}_seed{s}/metrics.jsonl", f"/nonexistent/{arm}_seed{s}.jsonl", arm=f"{arm}_seed{s}")
                rng = random.Random(f"{arm}{s}")
                cols = {f"m{j:02d}": [(1 + j) * (0.5 + lift) + rng.gauss(0, 0.1) for _ in range(n)]
                        for j in range(metrics)}
                st.add(Parsed(steps=list(range(n)), cols=cols, int_keys=frozenset()), now=math.nan)
                stores.append(st)
        lc = LiveCompare(stores, "vanilla")
        lc.update()
        per_row = []
        for k in range(200):
            for st in stores:
                row = {f"m{j:02d}": 1.0 + j + 0.01 * k for j in range(metrics)}
                st.add(Parsed(steps=[n + k], rows=[row]), now=math.nan)
            t = time.perf_counter()
            lc.update()
            per_row.append(time.perf_counter() - t)
        t = time.perf_counter()
        arms = make_arms(group_runs(stores), "step")
        compare(arms, "vanilla", pick_metrics(arms), choose_window(arms, 0.1))
        full = time.perf_counter() - t
        print(f"  {n:>9,} rows a run: update {1e3 * statistics.median(per_row):6.2f} ms (median of 200), "
              f"a full compare {1e3 * full:8.1f} ms")


def groups(lengths: list[int], metrics: int) -> None:
    """watch's seed groups: the table of means (steptable.app.seedmeans) made whole, then one appended row a seed
    (anchor: made whole again at the same length); the chart's band of the 3 seeds (steptable.app.charts.bands)
    against drawing the same seeds as 3 lines, one 200-column chart each."""
    from rich.style import Style

    from steptable.app.charts.bands import Band, Seed, Sums
    from steptable.app.charts.draw import Line, Styles, chart
    from steptable.app.seedmeans import SeedMeans
    from steptable.ingest import RunStore
    from steptable.ingest.parsed import Parsed
    from steptable.ingest.pyramid import Pyramid

    styles = Styles(arms=[Style(color="red")] * 4, alert=Style(), axis=Style(), cross=Style())
    print(f"seed groups: 3 seeds x {metrics} metrics")
    for n in lengths:
        seeds = []
        for s in range(1, SEEDS + 1):
            st = RunStore(f"routeA_seed{s}", f"/nonexistent/routeA_seed{s}.jsonl", arm=f"routeA_seed{s}")
            rng = random.Random(s)
            st.add(Parsed(steps=list(range(n)), cols={f"m{j:02d}": [rng.gauss(j, 1) for _ in range(n)]
                                                      for j in range(metrics)}, int_keys=frozenset()), now=math.nan)
            seeds.append(st)
        t = time.perf_counter()
        SeedMeans("routeA", seeds).update(seeds)
        whole = time.perf_counter() - t
        means = SeedMeans("routeA", seeds)
        means.update(seeds)
        per_row = []
        for k in range(50):
            for st in seeds:
                st.add(Parsed(steps=[n + k], rows=[{f"m{j:02d}": 1.0 for j in range(metrics)}]), now=math.nan)
            t = time.perf_counter()
            means.update(seeds)
            per_row.append(time.perf_counter() - t)
        xs = [float(i) for i in range(n + 50)]
        vals = [st.column("m00") for st in seeds]
        pyramids = [Pyramid(v) for v in vals]
        sums = []
        for v in vals:
            sm = Sums()
            sm.extend(list(v))
            sums.append(sm)
        band = Band("routeA", [Seed(xs, p, sm) for p, sm in zip(pyramids, sums, strict=True)])
        lines = [Line(f"s{i}", xs, p) for i, p in enumerate(pyramids)]
        draws: dict[str, list[float]] = {"band": [], "lines": []}
        for _ in range(10):  # interleaved
            t = time.perf_counter()
            chart("m00", [], (0.0, xs[-1]), 209, 20, styles, bands=[(0, band)])
            draws["band"].append(time.perf_counter() - t)
            t = time.perf_counter()
            chart("m00", lines, (0.0, xs[-1]), 209, 20, styles)
            draws["lines"].append(time.perf_counter() - t)
        up = statistics.median(per_row)
        b, ln = statistics.median(draws["band"]), statistics.median(draws["lines"])
        print(f"  {n:>9,} rows a seed: table of means made whole {1e3 * whole:7.1f} ms, one row a seed "
              f"{1e3 * up:5.2f} ms (median of 50; {up / whole:.5f}x whole); chart band {1e3 * b:5.1f} ms vs the "
              f"3 seeds as lines {1e3 * ln:5.1f} ms ({b / ln:.2f}x)")
        blocks: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
        for _ in range(2):
            for off_thread in (True, False):
                blocks[off_thread].append(asyncio.run(_ui_block(seeds, off_thread)))
        for off_thread, how in ((True, "on its own thread"), (False, "at once on the UI thread (anchor)")):
            worst, seeds_take, after = (max(x[i] for x in blocks[off_thread]) for i in range(3))
            print(f"  {n:>9,} rows a seed, build {how}: watch's UI thread's longest block from the seeds' arrival "
                  f"until the table of means is on screen {1e3 * worst:7.1f} ms (of the arrival's handler, the "
                  f"seeds' own tables {1e3 * seeds_take:5.1f} ms); after that handler {1e3 * after:7.1f} ms "
                  f"(worst of 2)")
        ratio = max(x[0] for x in blocks[True]) / max(x[0] for x in blocks[False])
        print(f"  {n:>9,} rows a seed: longest block, own thread / at once: {ratio:.2f}x")


async def _ui_block(seeds: list[Any], off_thread: bool) -> tuple[float, float, float]:
    """In a headless watch app, the event loop's longest lag (a 2 ms ticker) from the seeds' arrival (their
    tables taken, then the group's, in one handler as watch does) until the group's table of means is on screen;
    the seeds' tables' part of that handler; the longest lag after the handler returned."""
    from steptable.app import make_app, seedgroups
    from steptable.app.seedgroups import GROUP_PREFIX

    inline = seedgroups.INLINE_ROWS
    seedgroups.INLINE_ROWS = inline if off_thread else 1 << 62
    try:
        with tempfile.TemporaryDirectory() as tmp:
            app = make_app([tmp], tick=3600)
            fresh = [_copy_store(st) for st in seeds]  # (before the ticker: not the app's work)
            async with app.run_test(size=(200, 50)) as pilot:
                await pilot.pause(0.2)
                lags: list[tuple[float, float]] = []  # (tick start, lag)
                done = False

                async def ticker() -> None:
                    while not done:
                        t = time.perf_counter()
                        await asyncio.sleep(0.002)
                        lags.append((t, time.perf_counter() - t - 0.002))

                task = asyncio.create_task(ticker())
                await asyncio.sleep(0.05)
                t0 = time.perf_counter()
                app._take([(st.run, st, None) for st in fresh])
                seeds_take = time.perf_counter() - t0
                app._take_groups()
                app._after_data()
                t1 = time.perf_counter()
                while GROUP_PREFIX + "routeA" not in app.panels:
                    await asyncio.sleep(0.01)
                await pilot.pause()
                done = True
                await task
                worst = max(lag for t, lag in lags if t + lag >= t0)
                after = max((lag for t, lag in lags if t >= t1), default=0.0)
                return worst, seeds_take, after
    finally:
        seedgroups.INLINE_ROWS = inline


def _copy_store(st: Any) -> Any:
    """A new store with ``st``'s rows (each app run takes seeds it has not seen)."""
    from steptable.ingest import RunStore
    from steptable.ingest.parsed import Parsed

    out = RunStore(st.run, st.path, arm=st.arm)
    out.add(Parsed(steps=list(st.steps), cols={k: list(st.column(k)) for k in st.keys},
                   int_keys=frozenset()), now=math.nan)
    return out


def rates(draws: int) -> None:
    """Part 5 (see the module doc)."""
    from steptable.compare import choose_window, compare, group_runs, make_arms
    from steptable.compare.stats import mean, seeds_spread, single_spread, welch
    from tests.compare.helpers import MemRun

    def called(lo: float | None, hi: float | None) -> bool:
        return lo is not None and hi is not None and not lo <= 0.0 <= hi

    print(f"verdicts over {draws} draws (1000 steps, the last 100 compared; seed level sd .05, noise sd .2):")
    rng = random.Random(0)
    for seeds in ((3, 1), (1, 3), (5, 1), (3, 3), (1, 1)):
        false = anchor = power = 0
        for d in range(2 * draws):
            delta = 0.0 if d < draws else 0.1
            runs, window = [], {}
            for (arm, shift), n in zip((("base", 0.0), ("arm", delta)), seeds, strict=True):
                for k in range(n):
                    level = shift + rng.gauss(0, 0.05)
                    vals = [level + rng.gauss(0, 0.2) for _ in range(1000)]
                    runs.append(MemRun(f"{arm}_seed{k}" if n > 1 else arm, range(1000), {"m": vals}))
                    window.setdefault(arm, []).append(vals[-100:])
            arms = make_arms(group_runs(runs), "step")
            r = next(x for x in compare(arms, "base", ["m"], choose_window(arms, 0.1), {"m": "higher"})
                     if x.arm == "arm")
            if delta:
                power += r.verdict == "better"
                continue
            false += r.verdict in ("better", "worse")
            old = {a: single_spread(v[0]) if len(v) == 1 else seeds_spread([mean(x) for x in v])
                   for a, v in window.items()}
            anchor += called(*welch(old["arm"], old["base"])[1:])
        who = f"{seeds[0]} seed{'s' * (seeds[0] > 1)} vs {seeds[1]}"
        print(f"  {who}: called apart {100 * false / draws:.1f}% (nominal 5%; own batch means: "
              f"{100 * anchor / draws:.1f}%), power at +.1 {100 * power / draws:.0f}%")


def _sweep_once(rng: random.Random, n_arms: int, seeds: int, lift: float) -> tuple[bool, bool, bool, bool]:
    """One sweep of ``n_arms`` (the first the baseline, the second ``lift`` above the rest): (the verdict line calls
    its best arm beyond chance, the best arm's own interval is off 0 above, the lifted arm's verdict is better, its
    own interval is off 0 above)."""
    from steptable.compare import choose_window, compare, group_runs, make_arms
    from steptable.compare.render import verdict_lines
    from tests.compare.helpers import MemRun

    level_sd = 0.05 if seeds > 1 else 0.0
    runs = []
    for k in range(n_arms):
        shift = lift if k == 1 else 0.0
        for s in range(seeds):
            level = shift + rng.gauss(0, level_sd)
            vals = [0.0] * 900 + [level + rng.gauss(0, 0.2) for _ in range(100)]  # (only the window is read)
            runs.append(MemRun(f"a{k:03d}_seed{s}" if seeds > 1 else f"a{k:03d}", range(1000), {"m": vals}))
    arms = make_arms(group_runs(runs), "step")
    rs = compare(arms, "a000", ["m"], choose_window(arms, 0.1), {"m": "higher"})
    (line,) = verdict_lines(rs, "a000", {"m": "higher"})
    best = max(rs, key=lambda r: r.mean if r.mean is not None else -math.inf)
    real = rs[1]
    off = best.arm != "a000" and best.delta_lo is not None and best.delta_lo > 0
    return ("(beyond" in line, off, real.verdict == "better", real.delta_lo is not None and real.delta_lo > 0)


def sweep(draws: int, seeds_run: int) -> None:
    """Part 6 (see the module doc)."""
    print(f"null sweeps, {draws} a configuration and seed: the best arm called beyond chance (Holm over the arms; "
          "the best arm's own interval as the anchor), and the power of one arm +.1 among the nulls")
    for n_arms in (10, 100):
        for seeds in (3, 1):
            worst = [0.0, 0.0, 100.0, 100.0]  # (rates in %: the most false calls, the least power)
            for seed in range(seeds_run):
                rng = random.Random(f"sweep/{n_arms}/{seeds}/{seed}")
                null = [_sweep_once(rng, n_arms, seeds, 0.0) for _ in range(draws)]
                real = [_sweep_once(rng, n_arms, seeds, 0.1) for _ in range(draws)]
                got = [100 * sum(x[0] for x in null) / draws, 100 * sum(x[1] for x in null) / draws,
                       100 * sum(x[2] for x in real) / draws, 100 * sum(x[3] for x in real) / draws]
                worst = [max(worst[0], got[0]), max(worst[1], got[1]), min(worst[2], got[2]), min(worst[3], got[3])]
                print(f"  {n_arms} arms x {seeds} seed{'s' * (seeds > 1)}, seed {seed}: best called {got[0]:.1f}% "
                      f"(own interval: {got[1]:.1f}%), power at +.1 {got[2]:.0f}% (own interval: {got[3]:.0f}%)")
            print(f"  {n_arms} arms x {seeds} seed{'s' * (seeds > 1)}, worst of {seeds_run} seeds: best called "
                  f"{worst[0]:.1f}% (nominal <= 5%; own interval: {worst[1]:.1f}%), power at +.1 {worst[2]:.0f}% "
                  f"(own interval: {worst[3]:.0f}%)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--metrics", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=10, help="seeds of the summary's data (tokens)")
    ap.add_argument("--data", type=Path, default=None, help="keep the generated files here (reused when present)")
    ap.add_argument("--only", choices=("e2e", "tokens", "live", "groups", "rates", "sweep"), default=None)
    ap.add_argument("--draws", type=int, default=1000, help="draws a configuration (rates)")
    ap.add_argument("--sweeps", type=int, default=200, help="sweeps a configuration and seed (sweep)")
    ap.add_argument("--sweep-seeds", type=int, default=3, help="seeds of the sweeps (sweep: the worst reported)")
    args = ap.parse_args()
    if args.only in (None, "e2e"):
        with tempfile.TemporaryDirectory() as tmp:
            root = (args.data or Path(tmp)) / "exp"
            if not (root / "absorb_seed3" / "metrics.jsonl").exists():
                t = time.perf_counter()
                generate(root, args.rows, args.metrics)
                print(f"(generated {len(ARMS) * SEEDS} files in {time.perf_counter() - t:.0f} s)")
            end_to_end(root, args.reps)
    if args.only in (None, "tokens"):
        tokens(args.seeds)
    if args.only in (None, "live"):
        live([10_000, 50_000, 200_000], args.metrics)
    if args.only in (None, "groups"):
        groups([10_000, 100_000], args.metrics)
    if args.only in (None, "rates"):
        rates(args.draws)
    if args.only in (None, "sweep"):
        sweep(args.sweeps, args.sweep_seeds)
