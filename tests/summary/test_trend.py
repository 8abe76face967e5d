"""tr% of a held series: a metric logged every step but updated every few (Otsu thresholds between refreshes, an
eval score carried forward). Its successive pairs are mostly equal, which read as no noise: 85% of flat series held
10 steps read a trend. It is judged by its updates instead."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from steptable.summary.trend import hold_length, trend_pct
from tests.helpers import run_cli, write_rows

Cap = pytest.CaptureFixture[str]


def _held(n: int, hold: int, rng: random.Random, draw: str = "normal", rise_at: int | None = None,
          rise: float = 0.0) -> list[float]:
    """n steps of a value drawn every ``hold`` steps (N(1, 0.1), or a mean of 32 coin flips at 0.3), plus ``rise``
    from step ``rise_at`` on."""
    xs: list[float] = []
    x = 0.0
    for i in range(n):
        if i % hold == 0:
            x = rng.gauss(1.0, 0.1) if draw == "normal" else sum(rng.random() < 0.3 for _ in range(32)) / 32
            if rise_at is not None and i >= rise_at:
                x += rise
        xs.append(x)
    return xs


@pytest.mark.parametrize("draw", ["normal", "grid"])
@pytest.mark.parametrize(("n", "hold"), [(60, 5), (200, 10), (1000, 2), (1000, 10), (5000, 50)])
def test_a_flat_held_series_reads_a_trend_about_as_rarely_as_a_plain_one(n: int, hold: int, draw: str) -> None:
    # before: 34-100 of 100 read a trend (held 2: a third; held 10: 85 or more)
    rng = random.Random(n * 100 + hold)
    hits = sum(trend_pct(_held(n, hold, rng, draw)) != 0 for _ in range(100))
    assert hits <= 12


@pytest.mark.parametrize("hold", [2, 5])
def test_a_rise_of_a_held_series_still_shows_at_its_size(hold: int) -> None:
    # two standard deviations of an update, over the last 10% of the steps: +20% of the level
    trends = []
    for seed in range(100):
        t = trend_pct(_held(1000, hold, random.Random(seed), rise_at=900, rise=0.2))
        assert t is not None
        trends.append(t)
    assert sum(t != 0 for t in trends) >= 95
    assert 15 < sorted(trends)[50] < 25


def test_a_level_then_another_is_a_change_not_a_hold() -> None:
    # too few runs to learn a hold from: the step is read as before
    assert trend_pct([1.0] * 90 + [2.0] * 10) == pytest.approx(100.0)
    assert trend_pct([0.5] * 54 + [0.7] * 6) == pytest.approx(40.0)
    assert hold_length([1.0] * 90 + [2.0] * 10, 80) == (1, 80)


def test_a_stepped_schedule_reads_its_fall() -> None:
    # a learning rate cut by 10% every 10 steps (deterministic, held between cuts): the last 100 steps sit ~10 cuts
    # below the 100 before
    xs = [1e-3 * 0.9 ** (i // 10) for i in range(1000)]
    assert hold_length(xs, 800)[0] == 10
    t = trend_pct(xs)
    assert t is not None and -70 < t < -60
    # shorter, exact staircases: a slope, not noise (read by the size of a step they read 0)
    assert trend_pct([1e-3 * 0.9 ** (i // 10) for i in range(300)]) == pytest.approx(-27.1)
    assert trend_pct([0.2 + (i // 20) / 30 for i in range(300)]) == pytest.approx(7.745, abs=0.01)


def test_an_eval_score_rising_in_steps_of_its_noise_reads_a_rise() -> None:
    # 0.2 -> 0.7 over 300 steps, evaluated every 20 steps with sd 0.01: a rise in every seed
    for seed in range(20):
        rng = random.Random(seed)
        xs = [v for u in range(15) for v in [0.2 + u / 28 + rng.gauss(0, 0.01)] * 20]
        t = trend_pct(xs)
        assert t is not None and t > 5


def test_a_plain_series_that_turns_held_is_read_as_plain_when_no_hold_is_found() -> None:
    # the hold is 1: the noise is read from where a plain series' is
    rng = random.Random(2)
    xs = [rng.gauss(1, 0.1) for _ in range(91)] + [v for v in (rng.gauss(1, 0.1) for _ in range(7)) for _ in range(11)]
    hold, start = hold_length(xs, len(xs) - 34)
    assert hold > 1 or start == len(xs) - 34


@pytest.mark.parametrize(("xs", "hold"), [
    ([float(random.Random(1).random() < 0.5) for _ in range(1000)], 1),  # a 0/1 column: repeats by chance
    ([sum(random.Random(i).random() < 0.3 for _ in range(32)) / 32 for i in range(1000)], 1),  # a reward on a grid
    ([0.0 if random.Random(i).random() < 0.9 else 0.01 * i for i in range(1000)], 1),  # a mostly-zero clip ratio
    ([v for v in (random.Random(i).gauss(1, 0.1) for i in range(400)) for _ in range(3)], 3),
    ([0.0] * 400 + [random.Random(i // 2).choice([0.0, random.Random(i // 2).random()]) for i in range(600)], 2),
])
def test_the_hold_is_read_from_how_often_values_repeat_beyond_chance(xs: list[float], hold: int) -> None:
    # (the last: zeros, then a value updated every 2 steps, half the time to 0: its zero runs are 2, 4, 6... long)
    assert hold_length(xs, len(xs) - 200)[0] == hold


def test_a_held_series_reads_its_noise_from_at_least_twenty_updates() -> None:
    xs = _held(5000, 50, random.Random(3))
    assert hold_length(xs, 4000) == (50, 4000)  # 20 holds of 50 are the last 1000 values
    assert hold_length(xs, 4900) == (50, 4000)


def test_the_summary_of_flat_thresholds_held_between_refreshes_reads_zero(tmp_path: Path, capsys: Cap) -> None:
    # the routing arm's tlo / thi: recomputed every 8 steps, logged every step; 800 flat steps, 10 seeds
    trends = []
    for seed in range(10):
        rng = random.Random(seed)
        tlo, thi = _held(800, 8, rng), _held(800, 8, rng)
        run = tmp_path / f"s{seed}" / "metrics.jsonl"
        write_rows(run, ({"step": s, "tlo": a, "thi": b + 1} for s, (a, b) in enumerate(zip(tlo, thi, strict=True))))
        rc, out, _ = run_cli(["summary", str(run)], capsys)
        assert rc == 0
        trends += [line.split()[-1] for line in out.splitlines() if line.startswith(("tlo", "thi"))]
    assert len(trends) == 20 and trends.count("=") >= 17, trends
