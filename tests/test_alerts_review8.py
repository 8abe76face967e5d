"""Alerts review 8: a live reader's engine at a mid-run resume keeps the run-long levels the one-shot read has; no
spike when a column leaves an exact-0 stretch; no z against a reference that never varied, and no E "to floor" from
the floor itself; the merged non-finite line names every column with its value."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.engine import Alert, AlertConfig, AlertEngine, resumed_engine
from steptable.ingest import Follower
from tests.helpers import write_rows

Row = dict[str, Any]


def stream(rows: Iterable[Mapping[str, Any]], config: AlertConfig | None = None) -> list[Alert]:
    eng = AlertEngine(config)
    return [a for i, row in enumerate(rows) for a in eng.update(i, row)]


# ----------------------------------------------------------------------------------------- resume: run-long levels


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
    """The reward's peak, the grad norm's lowest level and the entropy's early level were set hundreds of rows before
    the resume, out of the bounded replay's reach: the live engine said the collapse late against a lower peak,
    missed the rise, and measured an entropy rise against an early level of the replay's rows."""
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
    once = stream(rows)
    assert once and [a.line() for a in live] == [a.line() for a in once]


def test_levels_set_from_the_replaced_rows_are_not_carried(tmp_path: Path) -> None:
    """The crashed run's rows from the resume step on were replaced: a peak or a lowest level set there is not the
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


# ------------------------------------------------------------------------------------- spike after an exact-0 run


@pytest.mark.parametrize("seed", range(10))
def test_no_spike_when_loss_and_grad_norm_leave_an_exact_0_stretch(seed: int) -> None:
    """GRPO while every group fails: loss and grad norm exactly 0, then ordinary values. The zeros are no noise to
    measure the first values against."""
    rng = random.Random(seed)
    rows = [{"loss": 0.0, "grad_norm": 0.0} if s < 120 else
            {"loss": rng.gauss(0, 0.01), "grad_norm": 0.25 * math.exp(rng.gauss(0, 0.2))} for s in range(300)]
    rows[280]["loss"] = 1.0  # once the window holds the new values, a real spike is one
    got = [a for a in stream(rows) if a.kind == "spike"]  # (the zeros are a flat W: said at step 49)
    assert [(a.step, a.column) for a in got] == [(280, "loss")], [a.line() for a in got]


# -------------------------------------------------------------------------- reward against a window that never moved


def _sds(alerts: list[Alert]) -> list[int]:
    return [int(m.group(1)) for a in alerts if (m := re.search(r"(\d+)sd\)", a.message))]


def test_a_reward_at_0_dipping_negative_is_no_collapse_to_floor() -> None:
    rng = random.Random(1)
    rows = [{"reward": 0.0 if s < 300 else -sum(rng.random() < 0.02 for _ in range(256)) / 512} for s in range(600)]
    got = [a for a in stream(rows) if a.kind == "reward_collapse"]
    assert all(a.level == "W" and "floor" not in a.message for a in got), [a.line() for a in got]
    assert all(z < 1000 for z in _sds(got)), [a.line() for a in got]


def test_a_reward_at_1_settling_lower_has_a_finite_z() -> None:
    rng = random.Random(1)
    rows = [{"reward": min(1.0, s / 300) if s < 900 else sum(rng.random() < 0.62 for _ in range(256)) / 256}
            for s in range(1200)]
    got = [a for a in stream(rows) if a.kind == "reward_collapse"]
    assert [a.level for a in got] == ["W"] and all(z < 1000 for z in _sds(got)), [a.line() for a in got]


def test_a_collapse_back_to_0_is_still_to_floor() -> None:
    rng = random.Random(2)
    rows = [{"reward": max(0.0, (0.0 if s < 100 else 0.7 if s < 400 else 0.0) + rng.gauss(0, 0.03))}
            for s in range(500)]
    got = [a for a in stream(rows) if a.kind == "reward_collapse"]
    assert any(a.level == "E" and "collapse to floor" in a.message for a in got), [a.line() for a in got]


# ----------------------------------------------------------------------------------------- merged non-finite line


def test_the_merged_non_finite_line_names_every_column_with_its_value() -> None:
    rows = [{"loss": 1.0, "grad_norm": 1.0, "entropy": 0.5, "kl": 0.01} for _ in range(40)]
    rows.append({"loss": math.nan, "grad_norm": math.inf, "entropy": math.nan, "kl": -math.inf})
    (a,) = stream(rows)
    assert a.message == "non-finite (nan) after 40 finite steps; also grad_norm (inf), entropy (nan), kl (-inf)"


@pytest.mark.parametrize(("zeros", "key", "noise", "big"), [(2, "loss", 0.02, 1e6), (3, "loss", 0.02, 1e6),
                                                           (5, "grad_norm", 1.0, 1e4)])
def test_a_few_leading_zeros_do_not_blind_the_spike_test(zeros: int, key: str, noise: float, big: float) -> None:
    # the "no spike against the zeros" rule kept the test off for a window's length after two leading zeros: an
    # explosion in those rows went unsaid
    rng = random.Random(zeros)
    eng = AlertEngine()
    values = [0.0] * zeros + [noise * (1 + rng.gauss(0, 0.2)) for _ in range(30)] + [big]
    spikes = [a for s, v in enumerate(values) for a in eng.update(s, {key: v}) if a.kind == "spike"]
    assert [a.step for a in spikes] == [len(values) - 1], spikes


def test_a_negative_reward_falling_far_below_its_floor_is_an_error() -> None:
    # a penalty-style reward at -1 falling to -3 read W once "to floor" needed a reference clearly above the floor
    rng = random.Random(7)
    eng = AlertEngine()
    rows = [-1 + rng.gauss(0, 0.05) for _ in range(200)] + [-3 + rng.gauss(0, 0.05) for _ in range(20)]
    found = [a for s, v in enumerate(rows) for a in eng.update(s, {"reward": v}) if a.kind == "reward_collapse"]
    assert found and found[0].level == "E" and "to floor" in found[0].message, found


def test_tail_and_summary_agree_on_a_tinker_kl_logged_without_its_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # tail fed the layout's rows (the alias filled in as optim/kl_sample_train_v1) to its alerts, summary and the
    # app the stored ones: an E in tail, "alerts 0" in summary
    from tests.helpers import run_cli

    rng = random.Random(3)
    rows = [{"step": s, "progress/done_frac": s / 300, "env/all/reward/total": 0.5 + rng.gauss(0, 0.02),
             "optim/lr": 1e-5, "kl_sample_train_v1": (0.001 if s < 250 else 0.24) * (1 + rng.gauss(0, 0.05))}
            for s in range(300)]
    write_rows(tmp_path / "tinker" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["tail", "--alerts-only", str(tmp_path)], capsys)
    assert rc == 1 and "step 250 kl_sample_train_v1 blow-up" in out, out
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert "E step 250 kl_sample_train_v1 blow-up" in out, out
