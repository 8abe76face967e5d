"""A stored history fed in quiet blocks (steptable.alerts.quiet) says exactly what feeding it row by row says: the same
alerts (steps, columns, text, order) over bench_alerts' corpus with every incident, every trainer's fixture tree
(summary's text), hostile columns, a RunStore read by the app's scanner; and leaves every detector in the same
state."""

from __future__ import annotations

import math
import random
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts import quiet
from steptable.alerts.detectors import KLBlowup, Saturation
from steptable.alerts.engine import Alert, AlertConfig, AlertEngine
from steptable.alerts.history import feed_store, scan
from steptable.alerts.window import Detector
from steptable.ingest.parsed import Parsed
from steptable.ingest.store import RunStore
from tests.alerts.helpers import HOSTILE, Columns, base, eval_rows, noisy, put, random_history
from tests.helpers import run_cli
from tests.trainer_logs import (
    write_generic,
    write_maxent_state,
    write_retrain,
    write_routing,
    write_tinker,
    write_tinyzero_console,
    write_trl_state,
    write_verl,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_alerts


@pytest.fixture
def rows_only(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], Any]], Any]:
    """Run a callable with quiet blocks off (every row fed one by one)."""

    def call(f: Callable[[], Any]) -> Any:
        with monkeypatch.context() as m:
            m.setattr(quiet, "MIN_ROWS", 10**9)
            return f()

    return call


def both(rows_only: Callable[[Callable[[], Any]], Any], steps: Sequence[int], cols: Mapping[str, Sequence[Any]],
         walls: Sequence[Any] | None = None, **kw: Any) -> tuple[list[Alert], list[Alert]]:
    fast = scan(steps, cols, walls, **kw)
    slow = rows_only(lambda: scan(steps, cols, walls, **kw))
    return fast, slow


def corpus(rows: int, seeds: int) -> Iterator[tuple[str, dict[str, list[float]]]]:
    for fam in bench_alerts.FAMILIES:
        for seed in range(seeds):
            yield f"{fam} {seed}", bench_alerts.healthy(fam, seed, rows)
            for name, (inject, _) in bench_alerts.INCIDENTS.items():
                run = bench_alerts.healthy(fam, seed, rows)
                inject(run, random.Random(f"{name}-{fam}-{seed}").randrange(rows // 3, rows - 120))
                yield f"{fam} {seed} {name}", run


def test_corpus_same_alerts(rows_only: Callable[[Callable[[], Any]], Any]) -> None:
    said = 0
    for name, run in corpus(3000, 2):
        n = len(run["_t"])
        fast, slow = both(rows_only, list(range(n)), {k: run[k] for k in bench_alerts.KEYS}, run["_t"])
        assert fast == slow, name
        said += len(slow)
    assert said > 50  # (the incidents are said: the comparison is not of empty lists)


def _bulk_share(monkeypatch: pytest.MonkeyPatch, steps: list[int], cols: dict[str, Any],
                walls: list[float]) -> list[bool]:
    """For each detector handed a quiet block while ``scan`` reads the columns: was it advanced in bulk?"""
    taken: list[bool] = []
    real = quiet.advance

    def spy(dets: Sequence[Any], xs: list[float], at: Sequence[int], hints: Any = None) -> list[Any]:
        got = real(dets, xs, at, hints)
        taken.extend(c is not None for c in got)
        return got

    monkeypatch.setattr(quiet, "advance", spy)
    scan(steps, cols, walls)
    return taken


def test_quiet_blocks_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a healthy run most blocks are fed in bulk (else the equivalence above would be vacuous)."""
    run = bench_alerts.healthy("drifting", 0, 5000)
    taken = _bulk_share(monkeypatch, list(range(5000)), {k: run[k] for k in bench_alerts.KEYS}, run["_t"])
    assert len(taken) > 300 and sum(taken) > 0.8 * len(taken)


def _rows_fed(monkeypatch: pytest.MonkeyPatch, kind: type[Detector]) -> list[int]:
    """A counter (one item) of the rows fed one by one to detectors of ``kind`` from now on."""
    fed = [0]
    real = kind.feed

    def count(d: Detector, step: int, x: float) -> Any:
        fed[0] += 1
        return real(d, step, x)

    monkeypatch.setattr(kind, "feed", count)
    return fed


def test_a_said_kl_episode_is_taken_in_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A KL past its levels for the whole run (said once) is advanced in bulk, not row by row."""
    fed = _rows_fed(monkeypatch, KLBlowup)
    alerts = scan(list(range(3000)), {"kl": noisy(3000, 15.0, 0.1, 12)}, [1000.0 + 10 * i for i in range(3000)])
    assert [a.level for a in alerts if a.kind == "kl_blowup"] == ["E"]
    assert fed[0] < 0.2 * 3000  # (row by row until the window is full and in the blocks a bound does not clear)


def test_a_said_saturation_is_taken_in_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ratio past its saturation level for the whole run (said once) is advanced in bulk."""
    fed = _rows_fed(monkeypatch, Saturation)
    alerts = scan(list(range(3000)), {"response_length/clip_ratio": noisy(3000, 8.0, 0.1, 17)})
    assert [a.kind for a in alerts] == ["saturation"]
    assert fed[0] < 0.2 * 3000


def test_quiet_blocks_between_eval_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows without the training keys split the blocks: the stretches between them are still fed in bulk."""
    cols = eval_rows(base(3000))
    taken = _bulk_share(monkeypatch, list(range(3000)), cols, [1000.0 + 10 * i for i in range(3000)])
    assert len(taken) > 300 and sum(taken) > 0.8 * len(taken)


def _state(eng: AlertEngine) -> dict[str, Any]:
    """Every detector's state, comparable (windows as lists with their sorted copies and resolution)."""
    def plain(v: Any) -> Any:
        if hasattr(v, "ordered"):
            return (list(v), list(v.ordered), v.gap)
        if hasattr(v, "__slots__"):
            return {s: getattr(v, s) for s in v.__slots__}
        if isinstance(v, (list, tuple)) or type(v).__name__ == "deque":
            return [plain(x) for x in v]
        return v

    out: dict[str, Any] = {}
    for rk, dets in eng._dets.items():
        for d in dets:
            out[f"{rk} {type(d).__name__}"] = {k: plain(v) for k, v in vars(d).items() if k not in ("near", "gate")}
    out["clock"] = (plain(eng._dts), eng._last_wall, eng._last_step, eng._stalled)
    return out


@pytest.mark.parametrize("family", bench_alerts.FAMILIES)
def test_same_state_after_bulk(family: str, rows_only: Callable[[Callable[[], Any]], Any]) -> None:
    run = bench_alerts.healthy(family, 1, 4000)

    def fed() -> dict[str, Any]:
        eng = AlertEngine()
        store = _store({k: run[k] for k in bench_alerts.KEYS}, run["_t"])
        with store.lock:
            feed_store(eng, store, 0, len(store), stalls=True)
        return _state(eng)

    assert fed() == rows_only(fed)


def _uniform(n: int, seed: int) -> Columns:
    """Uniform noise in every watched column (as the 148 MB bench run logs): bounded, so rows near the tail's top
    and levels under half the window's median come every few rows, all within the noise."""
    rnd = random.Random(seed)
    return {k: [rnd.random() for _ in range(n)] for k in ("loss", "grad_norm", "entropy", "kl")}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_uniform_noise(seed: int, rows_only: Callable[[Callable[[], Any]], Any],
                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The same alerts and detector states as row by row, and few rows fed one by one: the tails' rows checked
    against their own medians where the block's bounds are too loose, the level tests' drops within the noise."""
    cols = _uniform(6000, seed)
    walls = [1.7e9 + 10 * i for i in range(6000)]

    def fed() -> tuple[list[Alert], dict[str, Any]]:
        eng = AlertEngine()
        store = _store(cols, walls)
        with store.lock:
            found = feed_store(eng, store, 0, len(store))
        return found, _state(eng)

    fast = fed()
    assert fast == rows_only(fed)
    assert scan(list(range(6000)), cols, walls) == fast[0]
    fed_rows = _rows_fed(monkeypatch, Detector)
    scan(list(range(6000)), cols)
    assert fed_rows[0] < 0.07 * 6000 * 13  # (13 detectors on the four columns; 26% before these bounds)


def _store(cols: Mapping[str, Sequence[Any]], walls: Sequence[float] | None = None) -> RunStore:
    n = max(len(c) for c in cols.values())
    rows = []
    for i in range(n):
        row: dict[str, Any] = {"step": i}
        if walls is not None:
            row["ts"] = walls[i]
        row.update({k: c[i] for k, c in cols.items() if i < len(c) and c[i] is not None})
        rows.append(row)
    store = RunStore("run", Path("run.jsonl"))
    store.add(Parsed(steps=list(range(n)), rows=rows))
    return store


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_columns(name: str, rows_only: Callable[[Callable[[], Any]], Any]) -> None:
    cols = HOSTILE[name]()
    n = max(len(c) for c in cols.values())
    walls = [1000.0 + 10 * i for i in range(n)]
    for kw in ({}, {"config": AlertConfig(nan_missing=True)}):
        fast, slow = both(rows_only, list(range(n)), cols, walls, **kw)
        assert fast == slow, (name, kw)
    fast, slow = both(rows_only, list(range(n)), cols, None)  # no clock
    assert fast == slow, name


def test_clock_gaps_and_resumes(rows_only: Callable[[Callable[[], Any]], Any]) -> None:
    cols = base()
    walls = [1000.0 + 10 * i + (7200 if i >= 800 else 0) - (50 if 400 <= i < 420 else 0) for i in range(1500)]
    walls[1000] = math.nan
    steps = list(range(1500))
    for resumes in (set(), {650, 1200}):
        fast, slow = both(rows_only, steps, cols, walls, now=walls[-1] + 9000, resumes=resumes)
        assert fast == slow
        assert any(a.kind == "stall" for a in slow)


@pytest.mark.parametrize("clock", ["one time for every row", "a clock that goes back", "repeated times"])
def test_clocks_that_do_not_move_on(clock: str, rows_only: Callable[[Callable[[], Any]], Any]) -> None:
    """A store without a clock reads its file's time for every row; a clock put back; rows logged at one time."""
    walls = {"one time for every row": [1.8e9] * 1500,
             "a clock that goes back": [1000.0 + 10 * i - (500 if i >= 700 else 0) for i in range(1500)],
             "repeated times": [1000.0 + 10 * (i // 3) for i in range(1500)]}[clock]
    fast, slow = both(rows_only, list(range(1500)), base(), walls, now=walls[-1] + 5000)
    assert fast == slow


def test_store_and_scanner(rows_only: Callable[[Callable[[], Any]], Any]) -> None:
    """The app's path: a RunStore (numeric columns padded with NaN where a row lacks the key) through the
    scanner's feed, a chunk at a time."""
    from steptable.app.alerting import AlertScanner

    cols = put(put(base(3000), "loss", 1200, [math.nan]), "reward", 2000, [0.01] * 50)
    cols["entropy"][500:700] = [None] * 200  # a sparse stretch
    walls = [1000.0 + 10 * i for i in range(3000)]

    def found() -> list[Alert]:
        scanner = AlertScanner(lambda: {}, lambda _m: None)
        return scanner.scan("run", _store(cols, walls))

    fast, slow = found(), rows_only(found)
    assert fast == slow and slow


WRITERS: dict[str, Callable[[Path], Path]] = {
    "retrain": lambda d: write_retrain(d, steps=400, resume_at=250)["metrics"],
    "routing": lambda d: write_routing(d, steps=300)["routeA"],
    "verl": lambda d: write_verl(d / "grpo.jsonl", steps=400),
    "tinyzero": lambda d: write_tinyzero_console(d / "train.log", steps=300),
    "tinker": lambda d: write_tinker(d, steps=300)["metrics"],
    "trl": lambda d: write_trl_state(d, steps=300),
    "maxent": lambda d: write_maxent_state(d, steps=300)["state"],
    "generic": lambda d: write_generic(d / "run.jsonl", steps=400),
}


@pytest.mark.parametrize("tree", sorted(WRITERS))
def test_fixture_trees_summary(tree: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               rows_only: Callable[[Callable[[], Any]], Any]) -> None:
    path = WRITERS[tree](tmp_path)

    def summary() -> tuple[int, str, str]:
        rc, out, err = run_cli(["summary", str(path)], capsys)
        return rc, re.sub(r"\d+[smhd] ago", "ago", out), err  # (the file's age moves on between the two)

    fast = summary()
    assert fast == rows_only(summary)
    assert fast[0] == 0


def test_the_tier_a_quiet_test_starts_from_does_not_change_its_outcome() -> None:
    """``_Levels.holds`` tries first the tier of spans a detector's test last held over (the column's hints): on
    columns of several noises, with and without a drop, each test holds or not whatever tier it starts from, and a
    hint it leaves is a tier it held over."""
    from steptable.alerts.quietlevels import _Levels

    rnd = random.Random(7)
    nw, nh, n = 50, 10, 250
    seen = set()
    for trial in range(300):
        level = rnd.choice([1.0, 0.05, 4.0])
        vals = [level + rnd.choice([0.001, 0.05, 0.5]) * rnd.gauss(0, 1) for _ in range(nw + nh + n)]
        if trial % 3 == 0:  # a drop in the block
            at = rnd.randrange(nw + nh, nw + nh + n)
            vals[at:] = [v / 10 for v in vals[at:]]
        limit = rnd.uniform(0.2, 2.0)

        def test(a: int, b: int, bounds: tuple[float, float, float, float], limit: float = limit) -> bool:
            mlo, mhi, cur_lo, cur_hi = bounds
            return mhi - cur_lo <= limit * abs(mlo) and cur_hi <= (1 + limit) * mhi

        want = _Levels(vals, nw, nh).holds(test, "k")
        for start in (None, 0, 1, 2):
            hints = {} if start is None else {"k": start}
            lv = _Levels(vals, nw, nh, hints)
            assert lv.holds(test, "k") == want
            if hints.get("k", start) != start:  # (a hint left is a tier the test held over)
                assert want and all(test(a, b, lv.bounds(a, b)) for a, b in lv.tiers[hints["k"]])
        seen.add(want)
    assert seen == {True, False}


def test_any_tier_hints_give_the_same_alerts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded random runs scanned with every level test's hints set at random before its first test (any tier,
    one past the last too, or none) say what a scan with the hints its own tests left says: the hints change where
    a test starts, never its outcome, whatever order the column's tests left them in."""
    from steptable.alerts import quietlevels

    kinds = ("entropy_collapse", "entropy_rise", "reward_collapse", "grad_rise")
    real = quietlevels._Levels.__init__
    rng = random.Random(3)
    tests: list[int] = []

    def hinted(self: Any, vals: list[float], nw: int, nh: int, hints: dict[str, int] | None = None) -> None:
        real(self, vals, nw, nh, hints)
        tests.append(1)
        for kind in kinds:
            if rng.random() < 0.7:
                self.hints[kind] = rng.randrange(len(self.tiers) + 1)

    for seed in range(60):
        steps, cols, walls = random_history(seed)
        want = scan(steps, cols, walls)
        with monkeypatch.context() as m:
            m.setattr(quietlevels._Levels, "__init__", hinted)
            assert scan(steps, cols, walls) == want, seed
    assert len(tests) > 100  # (level tests ran: not a scan that never asks them)
