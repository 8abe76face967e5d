"""steptable.demo.diagnostics: the demo's routing columns come from the real RoutingMonitor on seeded synthetic
rollouts whose hacks lean along the probe direction."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")

from steptable.demo.diagnostics import SyntheticRouting
from steptable.diagnostics import COLUMNS


def test_each_step_gives_the_monitor_columns_with_stale_counting_from_the_refresh() -> None:
    routing = SyntheticRouting(seed=0, n=64, dim=8, refresh_every=5)
    rows = [routing.synthetic_step(s, hack_p=0.3) for s in range(7)]
    assert all(set(r) == set(COLUMNS) for r in rows)
    assert [r["stale"] for r in rows] == [0, 1, 2, 3, 4, 0, 1]
    assert all(type(r["stale"]) is int for r in rows)


def test_hacks_along_the_probe_are_told_apart() -> None:
    routing = SyntheticRouting(seed=1)
    row = routing.synthetic_step(0, hack_p=0.3)
    assert row["auroc"] > 0.8 and 0 < row["qmass"] < 1


def test_without_hacks_there_is_no_auroc() -> None:
    row = SyntheticRouting(seed=2, n=64, dim=8).synthetic_step(0, hack_p=0.0)
    assert math.isnan(row["auroc"])


def test_a_seed_gives_the_same_run() -> None:
    def run(seed: int) -> str:
        routing = SyntheticRouting(seed=seed, n=64, dim=8)
        return repr([routing.synthetic_step(s, 0.3) for s in range(3)])  # (repr: nan == nan)

    assert run(3) == run(3) != run(4)
