"""The comparison's numbers: against numpy/scipy on the same windows, interval coverage in simulations, alignment on
tokens, NaN and missing values, windows an arm has not reached."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from steptable.compare import (
    CompareError,
    Result,
    choose_window,
    compare,
    group_runs,
    make_arms,
    parse_window,
    pick_metrics,
)
from tests.compare.helpers import MemRun, write_arms

np = pytest.importorskip("numpy")
stats = pytest.importorskip("scipy.stats")


def run_compare(runs: Sequence[Any], baseline: str, x: str = "step", window: str | None = None,
                metrics: Sequence[str] = ()) -> list[Result]:
    arms = make_arms(group_runs(runs), x)
    w = choose_window(arms, parse_window(window))
    return compare(arms, baseline, list(metrics) or pick_metrics(arms), w)


def by(results: Sequence[Result], arm: str, metric: str) -> Result:
    return next(r for r in results if r.arm == arm and r.metric == metric)


def noisy_runs(rng: random.Random, n: int = 500) -> list[Any]:
    runs = []
    for arm, seeds, shift in (("vanilla", 3, 0.0), ("routeA", 4, 0.05), ("absorb", 1, -0.02)):
        for s in range(1, seeds + 1):
            name = f"{arm}_seed{s}" if seeds > 1 else arm
            reward = [0.3 + shift + 0.2 * i / n + rng.gauss(0, 0.05) for i in range(n)]
            loss = [rng.gauss(1, 0.1) if i % 7 else math.nan for i in range(n)]
            runs.append(MemRun(name, range(n), {"reward": reward, "loss": loss}))
    return runs


def window_values(run: Any, key: str, lo: float, hi: float) -> Any:
    steps = np.asarray(run.steps, dtype=float)
    col = np.asarray(run.column(key))
    sel = col[(steps >= lo) & (steps <= hi)]
    return sel[np.isfinite(sel)]


def test_numbers_match_numpy_and_scipy() -> None:
    runs = noisy_runs(random.Random(7))
    results = run_compare(runs, "vanilla")
    r0 = results[0]
    assert (r0.x_from, r0.x_to) == pytest.approx((499 - 0.1 * 499, 499))  # the last 10% of the common 0-499
    groups = {"vanilla": runs[0:3], "routeA": runs[3:7], "absorb": runs[7:8]}
    for key in ("reward", "loss"):
        per = {a: [window_values(r, key, r0.x_from, r0.x_to) for r in rs] for a, rs in groups.items()}
        seed_means = {a: np.array([v.mean() for v in vs]) for a, vs in per.items()}
        for arm in ("vanilla", "routeA"):
            m = seed_means[arm]
            lo, hi = stats.t.interval(0.95, len(m) - 1, loc=m.mean(), scale=stats.sem(m))
            got = by(results, arm, key)
            assert (got.mean, got.lo, got.hi) == pytest.approx((m.mean(), lo, hi), rel=1e-9, abs=1e-12)
            assert got.n_seeds == len(m) and got.ci == "seeds"
            assert got.n_points == sum(len(v) for v in per[arm])
        # one seed beside arms of several: one seed of their pooled seed-to-seed variance, t with 2 + 3 df
        vals = per["absorb"][0]
        pooled = (2 * seed_means["vanilla"].var(ddof=1) + 3 * seed_means["routeA"].var(ddof=1)) / 5
        half = stats.t.ppf(0.975, 5) * math.sqrt(pooled)
        got = by(results, "absorb", key)
        assert (got.mean, got.lo, got.hi) == pytest.approx((vals.mean(), vals.mean() - half, vals.mean() + half),
                                                           rel=1e-9, abs=1e-12)
        assert got.n_seeds == 1 and got.ci == "pooled"
        # routeA vs vanilla: Welch on the seeds' means
        welch = stats.ttest_ind(seed_means["routeA"], seed_means["vanilla"], equal_var=False)
        ci = welch.confidence_interval(0.95)
        got = by(results, "routeA", key)
        d = seed_means["routeA"].mean() - seed_means["vanilla"].mean()
        assert (got.delta, got.delta_lo, got.delta_hi) == pytest.approx((d, ci.low, ci.high), rel=1e-9, abs=1e-12)
        # absorb (one seed) vs vanilla (3): the pooled t, 5 df
        m = seed_means["vanilla"]
        d = vals.mean() - m.mean()
        h = stats.t.ppf(0.975, 5) * math.sqrt(pooled * (1 + 1 / 3))
        got = by(results, "absorb", key)
        assert (got.delta, got.delta_lo, got.delta_hi) == pytest.approx((d, d - h, d + h), rel=1e-9, abs=1e-12)
        assert by(results, "vanilla", key).delta is None  # the baseline has no difference of its own


def test_numbers_match_on_files_read_like_the_cli(tmp_path: Path) -> None:
    """The same definitions on RunStores read from JSONL files (window by x = a cumulative token count)."""
    from steptable.ingest import Follower

    rng = random.Random(3)
    runs = {f"{arm}_s{s}": [{"step": i, "num_tokens": (i + 1) * 512, "acc": rng.random() + (arm == "b") * 0.1}
                            for i in range(300)] for arm in ("a", "b") for s in (1, 2)}
    base = write_arms(tmp_path / "exp", runs)
    f = Follower([base])
    f.scan()
    f.finish()
    stores = sorted(f.stores.values(), key=lambda s: s.arm)
    results = run_compare(stores, "a", x="tokens", window="0.25")
    got = by(results, "b", "acc")
    lo_x = 300 * 512 - 0.25 * (300 * 512 - 512)
    means = {a: np.array([np.mean([r["acc"] for r in runs[f"{a}_s{s}"] if lo_x <= r["num_tokens"]])
                          for s in (1, 2)]) for a in ("a", "b")}
    ci = stats.ttest_ind(means["b"], means["a"], equal_var=False).confidence_interval(0.95)
    assert (got.delta, got.delta_lo, got.delta_hi) == pytest.approx(
        (means["b"].mean() - means["a"].mean(), ci.low, ci.high), rel=1e-9, abs=1e-12)
    assert got.x == "tokens" and got.x_from == pytest.approx(lo_x)


def _ar1(rng: random.Random, n: int, phi: float, sd: float) -> list[float]:
    out, e = [], rng.gauss(0, sd)
    for _ in range(n):
        e = phi * e + rng.gauss(0, sd * math.sqrt(1 - phi * phi))
        out.append(e)
    return out


def _simulate(rng: random.Random, true_delta: float, autocorrelated: bool, seeds: tuple[int, int] = (3, 3),
              seed_sd: float = 0.05) -> Result:
    runs = []
    for (arm, shift), n in zip((("base", 0.0), ("arm", true_delta)), seeds, strict=True):
        for s in range(n):
            level = 1.0 + shift + rng.gauss(0, seed_sd)  # a seed's own level: what seeds differ by
            noise = _ar1(rng, 400, 0.9, 0.1) if autocorrelated else [rng.gauss(0, 0.1) for _ in range(400)]
            runs.append(MemRun(f"{arm}_seed{s}" if n > 1 else arm, range(400), {"m": [level + e for e in noise]}))
    return by(run_compare(runs, "base"), "arm", "m")


@pytest.mark.parametrize("seeds", [(3, 1), (1, 3), (5, 1)])
def test_one_seed_beside_arms_of_several_is_spread_as_one_of_their_seeds(seeds: tuple[int, int]) -> None:
    """Arms that differ by nothing but their seeds (a seed's level spread 1/2 of the within-run noise): the arm of
    one seed has its interval from the other arm's seed spread, so the difference is called in at most 10% of 200
    comparisons, and a true difference of .1 is held in its interval in at least 90%. From that one run's batch
    means (within-run noise only) they were called apart in 25-40% (reviewed: 18% of 3 seeds against 1)."""
    rng = random.Random(sum(seeds))
    false = [_simulate(rng, 0.0, False, seeds) for _ in range(200)]
    assert sum(not r.delta_lo <= 0 <= r.delta_hi for r in false) <= 0.10 * 200
    assert {r.ci for r in false} == {"pooled" if seeds[1] == 1 else "seeds"}
    held = sum(r.delta_lo <= 0.1 <= r.delta_hi for r in (_simulate(rng, 0.1, False, seeds) for _ in range(200)))
    assert held >= 0.90 * 200, held


@pytest.mark.parametrize("autocorrelated", [False, True])
def test_interval_coverage(autocorrelated: bool) -> None:
    rng = random.Random(20261128 + autocorrelated)
    held = sum(r.delta_lo <= 0.1 <= r.delta_hi for r in (_simulate(rng, 0.1, autocorrelated)
                                                        for _ in range(200)))
    assert 0.90 * 200 <= held <= 0.99 * 200, held
    false = sum(not r.delta_lo <= 0 <= r.delta_hi for r in (_simulate(rng, 0.0, autocorrelated)
                                                           for _ in range(200)))
    assert false <= 0.10 * 200, false


def test_alignment_on_tokens() -> None:
    """Arm B processes 4x the tokens of A per step; the metric depends on progress (tokens). On tokens the windows are
    token-equivalent and the arms agree; on steps B looks 4x better."""
    rng = random.Random(5)
    runs = []
    for arm, per_step in (("a", 1000.0), ("b", 4000.0)):
        for s in range(3):
            tokens = [per_step] * 1000  # a per-step amount: summed into the x
            m = [per_step * (i + 1) / 1e6 + rng.gauss(0, 0.01) for i in range(1000)]
            runs.append(MemRun(f"{arm}_seed{s}", range(1000), {"perf/total_num_tokens": tokens, "m": m}))
    on_tokens = run_compare(runs, "a", x="tokens", metrics=["m"])
    a, b = by(on_tokens, "a", "m"), by(on_tokens, "b", "m")
    assert (a.x_from, a.x_to) == (b.x_from, b.x_to) == pytest.approx((1e6 - 0.1 * (1e6 - 4000), 1e6))
    assert b.n_points * 4 == pytest.approx(a.n_points, abs=12)  # B's window is a quarter of the steps
    assert b.delta_lo <= 0 <= b.delta_hi and abs(b.delta) < 0.01
    on_steps = run_compare(runs, "a", x="step", metrics=["m"])
    a, b = by(on_steps, "a", "m"), by(on_steps, "b", "m")
    assert a.n_points == b.n_points
    assert b.delta == pytest.approx(3 * a.mean, rel=0.01) and b.delta_lo > 0 and b.verdict == "differs"


def test_nan_and_missing_values_are_left_out_and_counted() -> None:
    vals = [float(i) for i in range(100)]
    holes = [v if i % 4 else math.nan for i, v in enumerate(vals)]
    runs = [MemRun("x_seed1", range(100), {"m": holes, "inf": [math.inf] * 99 + [1.0]}),
            MemRun("x_seed2", range(100), {"m": vals, "inf": [1.0] * 100}),
            MemRun("y", range(100), {"m": vals})]
    res = run_compare(runs, "x", window="50:99", metrics=["m", "inf"])
    r = by(res, "x", "m")
    expect = np.array([np.nanmean(np.asarray(holes)[50:100]), np.mean(vals[50:100])])
    assert r.mean == pytest.approx(expect.mean(), rel=1e-12)
    assert (r.n_points, r.n_missing) == (50 + 38, 12)  # 52, 56, ..., 96 are NaN
    assert all(v is None or math.isfinite(v) for v in r.record().values() if isinstance(v, float | type(None)))
    r = by(res, "x", "inf")  # inf is left out too; one seed keeps one value
    assert (r.n_seeds, r.n_points, r.n_missing) == (2, 51, 49)
    r = by(res, "y", "inf")  # a key the arm does not log: no value, no difference, all counted missing
    assert (r.mean, r.delta, r.n_seeds, r.n_missing) == (None, None, 0, 50)
    assert r.record()["mean"] is None and r.record()["delta_lo"] is None


def test_arms_logging_one_constant_do_not_differ(tmp_path: Path) -> None:
    """Arms that log the same constant (a clip range, a temperature) with different numbers of points in the window
    have the same mean: no difference, no verdict (13 and 12 values of .0123 once gave -1.73e-18, "differs")."""
    rng = random.Random(1)
    runs = [MemRun(name, range(130), {"clip": [0.0123 if i != hole else math.nan for i in range(130)],
                                      "reward": [rng.random() for _ in range(130)]})
            for name, hole in (("a", -1), ("b", 125))]
    res = run_compare(runs, "a")
    a, b = by(res, "a", "clip"), by(res, "b", "clip")
    assert (a.n_points, b.n_points) == (13, 12)
    assert a.mean == b.mean == 0.0123 and (b.delta, b.delta_lo, b.delta_hi, b.verdict) == (0.0, 0.0, 0.0, None)


def test_window_an_arm_has_not_reached_is_an_error_naming_it() -> None:
    runs = [MemRun("a_seed1", range(100), {"m": [1.0] * 100}), MemRun("a_seed2", range(100), {"m": [1.0] * 100}),
            MemRun("slow_seed1", range(60), {"m": [1.0] * 60})]
    with pytest.raises(CompareError, match=r"^1 run of the arms ends before the window does \(at step 99\): "
                                           r"slow_seed1 at 59$"):
        run_compare(runs, "a", window="80:99")
    many = [MemRun(f"s{i}_seed1", range(50 + i), {"m": [1.0] * (50 + i)}) for i in range(5)]
    with pytest.raises(CompareError, match=r"^5 runs of the arms end before the window does \(at step 99\): "
                                           r"s0_seed1 at 49, s1_seed1 at 50, s2_seed1 at 51 and 2 more$"):
        run_compare([*runs[:2], *many], "a", window="80:99")
    late = MemRun("late", range(30, 100), {"m": [1.0] * 70})
    with pytest.raises(CompareError, match=r"arm 'late' \(late\) starts after the window's start"):
        run_compare([*runs[:2], late], "a", window="0:50")
    gone = MemRun("gone", range(200, 300), {"m": [1.0] * 100})
    with pytest.raises(CompareError, match=r"no common range of x=step: arm 'a' \(a_seed1\) ends at 99 before "
                       r"arm 'gone' \(gone\) starts at 200"):
        run_compare([*runs[:2], gone], "a")
    # the default window is where every run has been: the slow arm's end, which the window names
    r = run_compare(runs, "a")[0]
    assert (r.x_from, r.x_to) == pytest.approx((59 - 5.9, 59))
    assert choose_window(make_arms(group_runs(runs), "step"), parse_window(None)).ended_by == "slow_seed1 ends at 59"
    assert choose_window(make_arms(group_runs(runs[:2]), "step"), parse_window(None)).ended_by == ""  # (both at 99)


def test_window_spec_parsing() -> None:
    assert parse_window(None) == 0.1 and parse_window("25%") == 0.25 and parse_window("0.5") == 0.5
    assert parse_window("100:200") == (100.0, 200.0) and parse_window(":5") == (None, 5.0)
    for bad in ("0", "1.5", "abc", "5:1", "nan:3", "-10%"):
        with pytest.raises(CompareError):
            parse_window(bad)


def test_unknown_baseline() -> None:
    runs = [MemRun("a", range(10), {"m": [1.0] * 10}), MemRun("b", range(10), {"m": [1.0] * 10})]
    with pytest.raises(CompareError, match=r"no arm 'c' \(arms: a, b\)"):
        run_compare(runs, "c")


def test_verdict_follows_the_metrics_direction() -> None:
    rng = random.Random(1)
    runs = [MemRun(f"{arm}_seed{s}", range(100), {"loss": [1.0 + lift + rng.gauss(0, 0.01) for _ in range(100)],
                                                   "acc": [0.5 + lift + rng.gauss(0, 0.01) for _ in range(100)]})
            for arm, lift in (("a", 0.0), ("b", 0.2)) for s in range(3)]
    arms = make_arms(group_runs(runs), "step")
    w = choose_window(arms, 0.1)
    res = compare(arms, "a", ["loss", "acc"], w, {"loss": "lower", "acc": "higher"})
    assert by(res, "b", "loss").verdict == "worse" and by(res, "b", "acc").verdict == "better"
    res = compare(arms, "a", ["loss"], w, {})
    assert by(res, "b", "loss").verdict == "differs"


def test_too_few_values_give_no_interval() -> None:
    """One seed with one value in its window: a mean, no interval, no interval of its difference either."""
    runs = [MemRun("a", range(100), {"m": [math.nan] * 99 + [2.0]}), MemRun("b", range(100), {"m": [1.0] * 100})]
    res = run_compare(runs, "b", metrics=["m"])
    a = by(res, "a", "m")
    assert (a.mean, a.lo, a.hi, a.ci, a.n_points) == (2.0, None, None, None, 1)
    assert (a.delta, a.delta_lo, a.delta_hi, a.verdict) == (1.0, None, None, None)
    b = by(res, "b", "m")  # a constant: an interval of no width
    assert (b.mean, b.lo, b.hi, b.ci) == (1.0, 1.0, 1.0, "batches")


def test_counters_in_any_namespace_are_not_compared() -> None:
    """The step and epoch counters trainers log beside their metrics (HF's ``train/global_step`` and ``train/epoch``
    in W&B and trackio, SB3's ``time/total_timesteps``) are functions of the step: never a compared metric."""
    n = 50
    steps, epochs = [float(i) for i in range(n)], [i / 10 for i in range(n)]
    counters = {"train/global_step": steps, "train/epoch": epochs, "time/total_timesteps": [256 * s for s in steps],
                "training/global_step": steps, "epoch": epochs}
    runs = [MemRun(arm, range(n), {**counters, "train/reward": [lift + i / n for i in range(n)]})
            for arm, lift in (("a", 0.0), ("b", 0.1))]
    arms = make_arms(group_runs(runs), "step")
    assert pick_metrics(arms) == ["train/reward"]
    assert pick_metrics(arms, ["train/*"]) == ["train/global_step", "train/epoch", "train/reward"]  # asked for by name


def _holm_by_hand(p: dict[str, float]) -> set[str]:
    """Holm's step-down at 5%, written out: the k-th smallest p (from 0) against .05 / (m - k), until one fails."""
    out: set[str] = set()
    for k, (arm, pk) in enumerate(sorted(p.items(), key=lambda kv: kv[1])):
        if pk > 0.05 / (len(p) - k):
            break
        out.add(arm)
    return out


def test_verdicts_over_several_arms_are_holms() -> None:
    """Three seeds an arm, each seed one constant (its window mean exact): the baseline's 0, 1, 2, and arms of the
    same shifted by 4, 3.5, 2.5 and 0. Welch's p-values (scipy): .0080, .0128, .0376, 1. Each of the first three
    intervals excludes 0 (the per-pair test), but Holm over m = 4 steps .0080 <= .0125, .0128 <= .0167 (past
    Bonferroni's .0125), .0376 > .025: ``near`` is not called better."""
    lifts = {"base": 0.0, "far": 4.0, "mid": 3.5, "near": 2.5, "flat": 0.0}
    runs = [MemRun(f"{arm}_seed{s}", range(20), {"m": [lift + s] * 20})
            for arm, lift in lifts.items() for s in (0, 1, 2)]
    base = np.array([0.0, 1.0, 2.0])
    p = {arm: stats.ttest_ind(base + lift, base, equal_var=False).pvalue
         for arm, lift in lifts.items() if arm != "base"}
    assert p["far"] < 0.0125 < p["mid"] < 0.05 / 3 < 0.025 < p["near"] < 0.05  # the case the docstring works
    assert _holm_by_hand(p) == {"far", "mid"}
    arms = make_arms(group_runs(runs), "step")
    res = compare(arms, "base", ["m"], choose_window(arms, 0.1), {"m": "higher"})
    assert {r.arm for r in res if r.verdict == "better"} == {"far", "mid"}
    near = by(res, "near", "m")
    assert near.delta_lo is not None and near.delta_lo > 0  # its own interval is off 0, as before
    assert near.verdict is None
    # compared alone with the baseline, near is called better by its interval, as any one arm is
    pair = [a for a in arms if a.name in ("base", "near")]
    assert by(compare(pair, "base", ["m"], choose_window(pair, 0.1), {"m": "higher"}), "near", "m").verdict == "better"


def test_two_arms_are_judged_by_the_interval_alone() -> None:
    """One arm against the baseline: its verdict is its interval's (excludes 0), as before any correction, across
    draws near the edge (a true difference of about the interval's half-width)."""
    rng = random.Random(23)
    called = 0
    for _ in range(300):
        runs = [MemRun(f"{arm}_seed{s}", range(20), {"m": [lift + rng.gauss(0, 1)] * 20})
                for arm, lift in (("a", 0.0), ("b", 2.0)) for s in range(3)]
        r = by(run_compare(runs, "a", metrics=["m"]), "b", "m")
        assert r.delta_lo is not None and r.delta_hi is not None
        assert (r.verdict == "differs") == (not r.delta_lo <= 0.0 <= r.delta_hi)
        called += r.verdict == "differs"
    assert 0.2 * 300 < called < 0.8 * 300  # (draws on both sides of the edge)
