"""steptable.ingest.parsed: which cells are measurements and which keys are counters (the resume rule's vocabulary,
shared by RunStore and the end-of-run table), and the Parsed chunk a reader hands a store."""

from __future__ import annotations

import math
from typing import Any

import pytest

from steptable.ingest.parse import STEP_KEYS
from steptable.ingest.parsed import BOOKKEEPING_KEYS, WALL_KEYS, Parsed, counter, measured


@pytest.mark.parametrize("value", [None, math.nan, "NaN", "nan"])
def test_no_value_and_nan_are_not_measurements(value: Any) -> None:
    # "NaN" is how a bare NaN reaches a store handed a chunk as columns: no measurement either
    assert not measured(value)


@pytest.mark.parametrize("value", [0, 0.0, -1.5, math.inf, "Infinity", "abc", "a text longer than nine", [1, 2], True])
def test_numbers_text_and_infinities_are_measurements(value: Any) -> None:
    assert measured(value)


@pytest.mark.parametrize("key", [*STEP_KEYS, "epoch", "train/epoch", "train/global_step"])
def test_step_keys_and_epochs_are_counters(key: str) -> None:
    assert counter(key)


@pytest.mark.parametrize("key", ["loss", "epochs", "eval/epoch_loss", "reward"])
def test_metrics_are_not_counters(key: str) -> None:
    assert not counter(key)


def test_bookkeeping_keys_are_the_clocks_the_arm_the_run_and_the_second_writers_mark() -> None:
    assert BOOKKEEPING_KEYS == frozenset(WALL_KEYS) | {"arm", "run", "writer_pid"}


def test_each_chunk_has_its_own_bad_lines_and_meta() -> None:
    a, b = Parsed(steps=[0]), Parsed(steps=[1])
    a.bad.append(object())  # type: ignore[arg-type]
    a.meta["x"] = 1
    assert b.bad == [] and b.meta == {} and a.rows is None and a.cols is None and a.int_keys is None
