"""The run list's rows patched where only some runs changed (steptable.app.runrows.patched): the same list as
``shown`` makes whole, for new runs, new digests, runs still being read, pins, a filter and every timeless sort."""

from __future__ import annotations

import random

import pytest

from steptable.app.runrows import PATCH_MAX, TIMELESS, ListState, patched, shown
from steptable.summary.sweep import RunDigest
from tests.app.sweephelpers import Row


def _digest(rng: random.Random, run: str) -> RunDigest | None:
    if rng.random() < 0.15:
        return None  # still being read
    last = {"loss": rng.choice([0.5, 0.25, rng.random(), float("nan")])} if rng.random() < 0.8 else {}
    return RunDigest(run, run, rng.choice(["jsonl", "csv"]), 10, rng.choice([1, 5, 5, 9]), True,
                     rng.choice([None, 3, 7, 7]), 0.0, None, None, 1, last=last, errors=rng.choice([0, 0, 2]),
                     warnings=rng.choice([0, 1]))


def _row(rng: random.Random, i: int) -> Row:
    name = f"lr{rng.choice(['1e-5', '2e-5', '3e-5'])}_seed{i % 7}_r{i}"
    return Row(f"sweep/{name}", name, {"lr": rng.choice([1e-5, 2e-5])}, digest=None, size=rng.choice([10, 20]))


@pytest.mark.parametrize("seed", range(40))
def test_patched_gives_the_list_shown_gives(seed: int) -> None:
    rng = random.Random(seed)
    rows = [_row(rng, i) for i in range(rng.randrange(0, 30))]
    for r in rows:
        r.digest = _digest(rng, r.run_id)
    state = ListState(metrics=["loss"], sort=rng.choice([*sorted(TIMELESS), "loss"]), reverse=rng.random() < 0.5,
                      pattern=rng.choice(["", "seed1", "*seed[12]*", "lr=1e-5", "re:r1"]))
    if rows and rng.random() < 0.5:
        state.pinned = [r.run_id for r in rng.sample(rows, min(2, len(rows)))]
    for _ in range(8):
        before = shown(rows, state, 0.0)
        changed = []
        for _ in range(rng.randrange(1, 5)):
            if rows and rng.random() < 0.6:  # a run read again: a new digest (its object stays in the index)
                r = rng.choice(rows)
                r.digest = _digest(rng, r.run_id)
            else:
                r = _row(rng, len(rows))
                r.digest = _digest(rng, r.run_id)
                rows.append(r)
            changed.append(r.run_id)
        changed += [r.run_id for r in rows if r.digest is None]
        got = patched(before, rows, set(changed), state, 0.0)
        want = shown(rows, state, 0.0)
        if got is None:  # (only a pin come back or too many changed may refuse)
            assert len(set(changed)) > PATCH_MAX
            continue
        assert [e.run_id for e in got] == [e.run_id for e in want]


def test_a_sort_by_the_clock_or_a_run_gone_is_made_whole() -> None:
    rows = [Row(f"r{i}", f"r{i}") for i in range(3)]
    state = ListState(sort="age")
    assert patched(rows, rows, {"r1"}, state, 0.0) is None  # ages move with the clock
    state.sort = "name"
    assert patched(rows, rows[:2], {"r1"}, state, 0.0) is None  # r2 left the index
    assert patched(rows, rows, {f"x{i}" for i in range(PATCH_MAX + 1)}, state, 0.0) is None
    assert [e.run_id for e in patched(rows, rows, set(), state, 0.0) or []] == ["r0", "r1", "r2"]
