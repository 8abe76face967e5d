"""A run's alert scan split by column groups (steptable.alerts.parts) and merged says what one scan of every column
says: the same alerts, text and order, over the hostile columns, bench_alerts' corpus with every incident, clocks
with stalls and resumes, a divergence that turns every column non-finite at once, and the hack test."""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts import parts
from steptable.alerts.engine import Alert, AlertConfig
from steptable.alerts.history import scan
from tests.alerts.helpers import HOSTILE, base, put, random_history

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_alerts


def split(steps: Sequence[int], cols: Mapping[str, Sequence[Any]], walls: Sequence[Any] | None = None,
          config: AlertConfig | None = None, apart: bool = True, **kw: Any) -> list[Alert]:
    """The alerts of scans over each part of ``cols`` (``apart``: each of parts.scans, a column's detectors apart
    where it says so) and one over the clock alone, merged."""
    pieces = parts.scans(cols, config) if apart else [(p, None) for p in parts.parts(cols, config)]
    found = [scan(steps, {k: cols[k] for k in p}, None, config, resumes=kw.get("resumes", ()), merge=False, only=only)
             for p, only in pieces]
    found.append(scan(steps, {}, walls, config, merge=False, **kw))
    return parts.merge(found)


def test_the_parts_keep_the_engine_order_and_what_reads_together() -> None:
    cols = {**base(10), "hack_s": [0.1] * 10, "auroc": [0.9] * 10, "other": [1.0] * 10}
    assert parts.parts(cols) == [("loss", "grad_norm"), ("reward",), ("entropy",), ("kl",),
                                 ("response_length/clip_ratio",), ("hack_s", "auroc")]
    assert parts.parts(["kl", "loss", "other"]) == [("loss",), ("kl",)]  # (the run's keys, its order in a part)
    assert parts.parts(["other"]) == []
    # a key two roles watch: the roles between them read together too (the order in a row stays the engine's)
    shared = AlertConfig(roles={"kl": ("kl", "reward")})
    assert parts.parts(cols, shared) == [("loss", "grad_norm"), ("reward", "entropy", "kl"),
                                         ("response_length/clip_ratio",), ("hack_s", "auroc")]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_columns(name: str) -> None:
    cols = HOSTILE[name]()
    n = max(len(c) for c in cols.values())
    steps = list(range(n))
    walls = [1000.0 + 10 * i for i in range(n)]
    configs: list[dict[str, Any]] = [{}, {"config": AlertConfig(nan_missing=True)}]
    for kw in configs:
        want = scan(steps, cols, walls, **kw)
        assert split(steps, cols, walls, **kw) == want and split(steps, cols, walls, apart=False, **kw) == want, name
    assert split(steps, cols) == scan(steps, cols) == split(steps, cols, apart=False), name


def test_corpus_with_every_incident() -> None:
    said = 0
    for fam in bench_alerts.FAMILIES:
        for name, (inject, _) in bench_alerts.INCIDENTS.items():
            run = bench_alerts.healthy(fam, 0, 2000)
            inject(run, random.Random(f"{name}-{fam}").randrange(600, 1800))
            cols = {k: run[k] for k in bench_alerts.KEYS}
            want = scan(list(range(2000)), cols, run["_t"])
            assert split(list(range(2000)), cols, run["_t"]) == want, (fam, name)
            assert split(list(range(2000)), cols, run["_t"], apart=False) == want, (fam, name)
            said += len(want)
    assert said > 20  # (the incidents are said: not a comparison of empty lists)


def test_stalls_resumes_and_a_stall_at_the_end() -> None:
    cols = base()
    walls = [1000.0 + 10 * i + (7200 if i >= 800 else 0) for i in range(1500)]
    walls[1000] = math.nan
    steps = [2 * i for i in range(1500)]
    for resumes in (set(), {1300, 2400}):
        kw: dict[str, Any] = {"now": walls[-1] + 9000, "resumes": resumes}
        want = scan(steps, cols, walls, **kw)
        assert split(steps, cols, walls, **kw) == want
        assert any(a.kind == "stall" for a in want) and want[-1].kind == "stall"


def test_a_divergence_is_one_line_a_step() -> None:
    """Every column non-finite from one row on: the parts' non-finite alerts of that step are merged into the
    serial line (its first column's, the others after "also"), a stall after it."""
    cols = base()
    for k in cols:
        cols[k][900:] = [math.nan if k != "kl" else math.inf] * 600
    walls = [1000.0 + 10 * i for i in range(1500)]
    want = scan(list(range(1500)), cols, walls, now=walls[-1] + 9000)
    assert split(list(range(1500)), cols, walls, now=walls[-1] + 9000) == want
    first = next(a for a in want if a.kind == "nonfinite")
    assert "also" in first.message and "kl (inf)" in first.message


def test_the_hack_test_reads_its_part_last() -> None:
    rng = random.Random(5)
    n = 600
    cols: dict[str, list[Any]] = {**put(base(n), "loss", 400, [9.0]),
                                  "hack_s": [(5 if i < 400 else 40, 100) for i in range(n)],
                                  "auroc": [(0.9 if i < 400 else 0.8) + rng.gauss(0, 0.005) for i in range(n)]}
    want = scan(list(range(n)), cols)
    assert any(a.kind == "hack_auroc" for a in want)
    assert split(list(range(n)), cols) == want


def test_scans_read_a_columns_last_detectors_apart() -> None:
    from steptable.alerts.detectors import DETECTORS
    from steptable.alerts.levels import EntropyRise

    cols = {**base(10), "hack_s": [0.1] * 10, "auroc": [0.9] * 10}
    got = parts.scans(cols)
    assert [p for p, _ in got] == [("loss", "grad_norm"), ("reward",), ("entropy",), ("entropy",), ("kl",),
                                   ("response_length/clip_ratio",), ("hack_s", "auroc")]
    rest = tuple(c for c in DETECTORS["entropy"] if c is not EntropyRise)
    assert [only for p, only in got if p == ("entropy",)] == [rest, (EntropyRise,)]
    assert all(only is None for p, only in got if p != ("entropy",))
    # a part of more than one role (a key two roles watch) is read whole
    shared = AlertConfig(roles={"kl": ("kl", "entropy")})
    assert all(only is None for _, only in parts.scans(cols, shared))


def test_an_entropy_rise_and_collapse_read_apart() -> None:
    """An entropy that collapses, then rises far past its early level, with a non-finite cell on the way: each
    detector's alert at its row, in the engine's order, from two scans of the column."""
    n = 3000
    ent = [1.0 + 0.01 * math.sin(i) for i in range(n)]
    ent[900:1400] = [0.05 + 0.001 * math.sin(i) for i in range(500)]
    ent[2000:] = [4.0 + 0.01 * math.sin(i) for i in range(n - 2000)]
    ent[1700] = math.nan
    cols = {"entropy": ent, "loss": [1.0 / (1 + i) for i in range(n)]}
    want = scan(list(range(n)), cols)
    assert {a.kind for a in want} >= {"entropy_collapse", "entropy_rise", "nonfinite"}
    assert split(list(range(n)), cols) == want


def test_increasing() -> None:
    assert parts.increasing([]) and parts.increasing([3]) and parts.increasing([1, 2, 5])
    assert not parts.increasing([1, 1, 2]) and not parts.increasing([1, 3, 2])


@pytest.mark.parametrize("seeds", [range(0, 100), range(100, 200)])
def test_random_histories(seeds: range) -> None:
    """Seeded random runs (noisy, flat, stepwise, drifting, spiky columns; an entropy that collapses and rises;
    NaN, inf and None cells; a late key; a divergence; clock pauses), with and without ``nan_missing``: the parts'
    and the detectors' scans apart, merged, say what one scan says."""
    said = set()
    for seed in seeds:
        steps, cols, walls = random_history(seed)
        for config in (None, AlertConfig(nan_missing=True)):
            want = scan(steps, cols, walls, config)
            assert split(steps, cols, walls, config) == want, seed
            said |= {a.kind for a in want}
    assert {"entropy_collapse", "entropy_rise", "spike", "stall", "nonfinite"} <= said  # (not empty alert lines)
