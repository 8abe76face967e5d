"""steptable.table.direction: a cell is coloured where its column's level moved beyond the column's noise."""

from __future__ import annotations

import math
import random

from steptable.table.direction import BEFORE, MIN_RECENT, direction, directions, noise


def test_noise_is_one_sigma_of_gaussian_noise_and_of_a_quantised_column() -> None:
    rnd = random.Random(3)
    assert 0.9 < noise([rnd.gauss(0, 1) for _ in range(5000)]) < 1.1
    assert noise([0.0] * 10) == 0.0 and noise([1.0]) == 0.0
    assert noise([0, 0, 0, 1, 1, 1, 1, 1]) > 0  # most neighbours equal: the mean difference, not 0


def test_a_trend_is_coloured_by_its_direction_and_noise_is_not() -> None:
    rnd = random.Random(11)
    up = [0.02 * i + rnd.gauss(0, 0.1) for i in range(200)]
    assert all(direction("higher", up[i], up[:i]) == 1 for i in range(100, 200))
    assert all(direction("lower", up[i], up[:i]) == -1 for i in range(100, 200))
    flat = [rnd.gauss(0, 0.1) for _ in range(3000)]
    coloured = sum(direction("higher", flat[i], flat[:i]) != 0 for i in range(60, 3000))
    assert coloured / 2940 < 0.01


def test_a_step_is_coloured_once_the_level_moved_and_a_lone_spike_is_not() -> None:
    before = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95] * 10
    assert direction("higher", 3.0, before) == 0  # one value does not move a level (an alert may mark it)
    stepped = [*before, 3.0, 3.1, 2.9, 3.0]
    assert direction("higher", 3.05, stepped) == 1 and direction("lower", 3.05, stepped) == -1
    assert direction("higher", 0.99, stepped) == 0  # the level moved, but this cell is not past it


def test_no_colour_without_a_direction_a_finite_value_or_enough_values() -> None:
    ramp = [float(i) for i in range(40)]
    assert direction(None, 100.0, ramp) == 0
    assert direction("higher", float("nan"), ramp) == 0 and direction("higher", float("inf"), ramp) == 0
    assert direction("higher", 100.0, ramp[: MIN_RECENT + 7]) == 0  # too few before the current level
    assert direction("higher", 100.0, ramp[: MIN_RECENT + 8]) == 1
    assert direction("higher", 5.0, [5.0] * 30) == 0  # nothing moved


def _one_by_one(better: str, values: list[float], first: int) -> list[int]:
    return [direction(better, values[i], [v for v in values[max(0, i - BEFORE):i] if math.isfinite(v)])
            for i in range(first, len(values))]


def test_the_one_pass_gives_what_each_cell_alone_gives() -> None:
    """``directions`` (sliding sorted windows) and ``direction`` cell by cell agree exactly: on noise, trends,
    steps, a quantised column, a constant one, with NaN / inf / gaps anywhere, from any first row."""
    rnd = random.Random(5)
    for case in range(60):
        n = rnd.choice([5, 30, 70, 200])
        kind = case % 5
        values = [
            [rnd.gauss(0, 1) for _ in range(n)],
            [0.05 * i + rnd.gauss(0, 1) for i in range(n)],
            [float(rnd.random() < 0.1) for _ in range(n)],
            [3.0] * n,
            [(5.0 if i > n // 2 else 0.0) + rnd.gauss(0, 1) for i in range(n)],
        ][kind]
        for i in range(n):
            if rnd.random() < 0.15:
                values[i] = rnd.choice([math.nan, math.inf, -math.inf])
        first = rnd.randrange(n)
        for better in ("higher", "lower"):
            assert directions(better, values, first) == _one_by_one(better, values, first), (case, first)
    assert directions(None, [1.0, 2.0, 3.0], 1) == [0, 0]
