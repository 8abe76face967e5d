"""steptable.ingest.keycut (and the store's cap on distinct keys that uses it): of a batch that brings more new keys
than a run has room for, the headline metrics are kept and the per-layer family cut, whatever the batch's order."""

from __future__ import annotations

import math
import random

import pytest

from steptable.ingest.keycut import past_room, rank
from steptable.ingest.parsed import Parsed
from steptable.ingest.store import RunStore


def test_step_and_clock_keys_then_plain_names_then_numbered_families() -> None:
    keys = ["grad_norm/layer0001", "train/loss", "a/b/c", "loss", "_timestamp", "step", "reward", "top5"]
    assert sorted(keys, key=rank) == ["step", "_timestamp", "loss", "reward", "train/loss", "a/b/c", "top5",
                                      "grad_norm/layer0001"]
    first = dict.fromkeys(keys, 0)
    assert past_room(first, 5) == ["a/b/c", "top5", "grad_norm/layer0001"] and past_room(first, 8) == []
    assert past_room(first, -1) == past_room(first, 0) == sorted(keys, key=rank)
    assert past_room({"loss": 1, "grad/l1": 0, "grad/l2": 0}, 2) == ["loss"]  # (row by row: the first row's first)


def test_the_keys_kept_past_the_cap_do_not_depend_on_how_the_file_is_cut_into_reads(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows that each bring new keys past the cap, taken in one batch or one row a batch (a follower polling after
    each line): the same keys kept, the same first key named as left out (ranked over a batch, a key of a later row
    could take the room a key of an earlier row had when read alone)."""
    from steptable.ingest import store, table

    monkeypatch.setattr(table, "MAX_KEYS", 8)
    monkeypatch.setattr(store, "MAX_KEYS", 8)
    rows = [{"step": 0, **{f"m{k}": 1.0 for k in range(5)}}, {"step": 1, **{f"grad/layer{k}": 1.0 for k in range(3)}},
            {"step": 2, "reward": 1.0}]
    whole, lines = RunStore("r", "/nonexistent/a.jsonl"), RunStore("r", "/nonexistent/b.jsonl")
    whole.add(Parsed(steps=[0, 1, 2], rows=rows), now=math.nan)
    told = []
    for i, r in enumerate(rows):
        p = Parsed(steps=[i], rows=[r])
        lines.add(p, now=math.nan)
        told += p.bad
    assert whole.keys == lines.keys == ["step", *(f"m{k}" for k in range(5)), "grad/layer0", "grad/layer1"]
    assert whole.first_dropped == lines.first_dropped == "grad/layer2"


@pytest.mark.parametrize("seed", range(5))
def test_a_batch_past_the_cap_keeps_the_same_keys_in_any_order(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """wandb-core writes a record's items in map order: the keys kept were the first in it, random per run (the
    loss dropped in most of them). The kept set is now the batch's keys' alone; the columns keep the batch's order."""
    from steptable.ingest import store, table

    monkeypatch.setattr(table, "MAX_KEYS", 5)
    monkeypatch.setattr(store, "MAX_KEYS", 5)
    keys = ["step", "loss", "reward", *(f"grad_norm/layer{k:04d}" for k in range(30))]
    random.Random(seed).shuffle(keys)
    row = {k: 0 if k == "step" else 1.0 for k in keys}
    for rows_given in ("one row", "rows"):  # (a row merged alone, a batch appended)
        s = RunStore("r", "/nonexistent/metrics.jsonl")
        p = Parsed(steps=[0], rows=[row]) if rows_given == "one row" else Parsed(
            steps=[0, 1], rows=[row, {**row, "step": 1}])
        s.add(p, now=math.nan)
        assert set(s.keys) == {"step", "loss", "reward", "grad_norm/layer0000", "grad_norm/layer0001"}, rows_given
        assert s.keys == [k for k in keys if k in s.keys]  # (in the order they came)
        assert [b.reason for b in p.bad] == [store._too_many_keys("grad_norm/layer0002")]


def test_a_row_past_a_full_table_names_the_first_key_left_out_by_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    from steptable.ingest import store, table

    monkeypatch.setattr(table, "MAX_KEYS", 2)
    monkeypatch.setattr(store, "MAX_KEYS", 2)
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    s.add(Parsed(steps=[0], rows=[{"step": 0, "loss": 1.0}]), now=math.nan)
    p = Parsed(steps=[1], rows=[{"step": 1, "z/layer9": 1.0, "loss": 0.5, "acc": 1.0}])
    s.add(p, now=math.nan)
    assert [b.reason for b in p.bad] == [store._too_many_keys("acc")]
