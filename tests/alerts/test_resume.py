"""A resumed AlertEngine (steptable.alerts.history.resumed_engine and each detector's carry) says what one engine
fed the run straight says: run-long levels set before the bounded replay are carried, levels set in the replaced
rows are not."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.engine import AlertConfig, AlertEngine
from steptable.alerts.history import resumed_engine
from steptable.ingest import Follower
from tests.alerts.helpers import fed, resumed, reward_rows
from tests.helpers import grpo_row, store_of, write_rows


def test_a_resumed_engine_has_read_the_rows_before_the_resume(tmp_path: Path) -> None:
    write_rows(tmp_path / "r" / "metrics.jsonl", reward_rows(range(100), 0.8, 6))
    f = Follower([tmp_path])
    f.scan()
    (store,) = f.stores.values()
    with store.lock:
        eng = resumed_engine(store, 60)
    # the rows of steps < 60 were read: a drop to .05 at the resume is a collapse against them
    alerts = [a for s in range(60, 80) for a in eng.update(s, {"rew": 0.05})]
    assert any(a.kind == "reward_collapse" for a in alerts), alerts


Row = dict[str, Any]


def _slow_collapse(rng: random.Random, s: int) -> Row:
    p = 0.2 + 0.55 * min(1, s / 800) - (0.45 * min(1, (s - 1000) / 600) if s > 1000 else 0)
    return {"step": s, "reward": round(min(1.0, max(0.0, p + rng.gauss(0, 0.044))) * 128) / 128}


def _grad_rise(rng: random.Random, s: int) -> Row:
    gn = 0.1 * (1 + 5 * max(0, min(1, (s - 1000) / 800))) * math.exp(rng.gauss(0, 0.1))
    return {"step": s, "grad_norm": gn, "loss": rng.gauss(0, 0.02)}


def _entropy_rise(rng: random.Random, s: int) -> Row:
    ent = (0.6 - 0.4 * min(1, s / 1000)) * (1 + 4 * max(0, min(1, (s - 1300) / 200))) * math.exp(rng.gauss(0, 0.04))
    return {"step": s, "entropy": ent}


def _sparse_entropy_rise(rng: random.Random, s: int) -> Row:
    """Entropy every 5th row: the replay's first rows hold too few of it to set the early level."""
    row = _entropy_rise(rng, s)
    return row if s % 5 == 0 else {"step": s, "loss": rng.gauss(0, 0.02)}


def _nan_in_the_middle(rng: random.Random, s: int) -> Row:
    """A NaN loss at step 500 (out of the replay's reach at a resume at 1300), another at 1400: finite for 899."""
    return {"step": s, "loss": math.nan if s in (500, 1400) else rng.gauss(0.5, 0.02)}


@pytest.mark.parametrize(("make", "crash", "at"), [
    (_slow_collapse, 1250, 1200), (_grad_rise, 1350, 1300), (_entropy_rise, 1350, 1300),
    (_sparse_entropy_rise, 1350, 1300), (_nan_in_the_middle, 1350, 1300)])
def test_a_resumed_engine_says_what_the_one_shot_read_says(tmp_path: Path, make: Any, crash: int, at: int) -> None:
    """The reward's peak, the grad norm's lowest level and the entropy's early level set hundreds of rows before
    the resume, out of the bounded replay's reach, are carried: without them the live engine would say the collapse
    late against a lower peak, miss the rise, and measure an entropy rise against an early level of the replay."""
    rng = random.Random(0)
    rows = [make(rng, s) for s in range(2000)]
    old = AlertEngine()
    before = [a for r in rows[:crash] for a in old.update(r["step"], r)]  # the crashed run, read live
    write_rows(tmp_path / "r" / "metrics.jsonl", rows[:crash])
    f = Follower([tmp_path])
    f.scan()
    (store,) = f.stores.values()
    with store.lock:
        eng = resumed_engine(store, at, old=old)
    live = before + [a for r in rows[at:] for a in eng.update(r["step"], r)]
    once = fed(rows)
    assert once and [a.line() for a in live] == [a.line() for a in once]


def test_levels_set_from_the_replaced_rows_are_not_carried(tmp_path: Path) -> None:
    """The crashed run's rows from the resume step on are replaced: a peak or a lowest level set there is not the
    run's (a restart from step 0 carries nothing at all)."""
    rng = random.Random(3)

    def row(s: int, rew: float, gn: float) -> Row:
        return {"step": s, "reward": rew + rng.gauss(0, 0.02), "grad_norm": gn * math.exp(rng.gauss(0, 0.1))}

    kept = [row(s, 0.2, 0.5) for s in range(100)]
    old = AlertEngine()
    for r in kept + [row(s, 0.9, 0.01) for s in range(100, 300)]:  # the replaced rows: reward up, grad norm down
        old.update(r["step"], r)
    write_rows(tmp_path / "r" / "metrics.jsonl", kept)
    f = Follower([tmp_path])
    f.scan()
    (store,) = f.stores.values()
    with store.lock:
        eng = resumed_engine(store, 100, old=old)
    got = [a for r in [row(s, 0.2, 0.5) for s in range(100, 300)] for a in eng.update(r["step"], r)]
    assert not got, [a.line() for a in got]


def test_a_resumed_engine_keeps_the_config_it_was_given(tmp_path: Path) -> None:
    # the tail/app's thresholds (e.g. a stricter reward drop) hold after a resume too, given or taken from the engine
    # the resumed one replaces
    rng = random.Random(22)
    store = store_of(tmp_path / "r" / "metrics.jsonl", [grpo_row(rng, s) for s in range(200)])
    cfg = AlertConfig(reward_rel_drop=0.1, window=100)
    with store.lock:
        assert resumed_engine(store, 150, cfg).config == cfg
        assert resumed_engine(store, 150, old=AlertEngine(cfg)).config == cfg
        assert resumed_engine(store, 150).config == AlertConfig()


def test_a_nan_in_the_replaced_rows_does_not_shorten_the_finite_run_after_a_resume() -> None:
    # the crashed run hit NaN at step 400; the resume from 300 never did: its NaN at 550 is after 550 finite steps
    rng = random.Random(11)
    kept = [(s, rng.gauss(0.7, 0.05)) for s in range(300)]
    crashed = kept + [(s, math.nan if s == 400 else rng.gauss(0.7, 0.05)) for s in range(300, 450)]
    new = [(s, math.nan if s == 550 else rng.gauss(0.7, 0.05)) for s in range(300, 600)]
    got, want = resumed("loss", crashed, kept, new)
    assert got == want == ["E step 550 loss non-finite (NaN) after 550 finite steps"]


def test_a_negative_floor_of_the_replaced_rows_is_not_carried() -> None:
    # the crashed run's reward fell to -1 after step 330; the resumed run never went below 0, so its fall to 0 is a
    # collapse to its floor (E), as for a run that never crashed
    rng = random.Random(12)
    kept = [(s, rng.gauss(0.6, 0.05)) for s in range(300)]
    crashed = kept + [(s, -1.0 if s >= 330 else rng.gauss(0.6, 0.05)) for s in range(300, 500)]
    new = [(s, rng.gauss(0.6, 0.05) if s < 450 else abs(rng.gauss(0.0, 0.01))) for s in range(300, 500)]
    got, want = resumed("reward", crashed, kept, new)
    assert got == want
    assert got[0].startswith("E step 45") and "collapse to floor" in got[0]


def test_a_penalty_floor_seen_before_the_resume_survives_it() -> None:
    # a -1 penalty at steps 30-39 (rows the bounded replay skips) and again in the replaced rows: the floor the
    # run reached before the resume is -1, so a fall to 0 later is no fall to the floor (W), as without a crash
    rng = random.Random(13)

    def early(s: int) -> float:
        return -1.0 if 30 <= s < 40 else rng.gauss(0.7 if 110 <= s < 160 else 0.6, 0.03)

    kept = [(s, early(s)) for s in range(300)]
    crashed = kept + [(s, -1.0 if 330 <= s < 360 else rng.gauss(0.6, 0.03)) for s in range(300, 450)]
    new = [(s, rng.gauss(0.6, 0.03) if s < 450 else abs(rng.gauss(0.0, 0.01))) for s in range(300, 500)]
    got, want = resumed("reward", crashed, kept, new)
    assert got == want
    assert got[0].startswith("W step 45") and "floor" not in got[0]
