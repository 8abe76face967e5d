"""RowCut: the rows of a range of a store with some keys only, built a batch at a time, are the store's own rows
(``RunStore.rows``) restricted to those keys: gaps, logged nulls, integer and text columns, a file numbered by
position, a resumed run."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import store_of


def same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """Equal rows, key order included, NaN equal to NaN, an int never equal to a float."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if list(x) != list(y):
            return False
        for k in x:
            u, v = x[k], y[k]
            if type(u) is not type(v) or not (u == v or (u != u and v != v)):
                return False
    return True


def mixed_rows(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for s in range(n):
        r: dict[str, Any] = {"step": s, "loss": rng.random(), "count": rng.randrange(100)}
        if s % 3:
            r["eval"] = rng.random()  # a column with gaps
        if s % 5 == 0:
            r["loss"] = None  # a logged null (present, not finite)
        if s % 7 == 0:
            r["tag"] = rng.choice(["code", "math"])  # a text column with gaps
        if s % 11 == 0:
            r["half"] = 1.5 if s % 2 else 2  # ints then a float: no longer an integer column
        rows.append(r)
    return rows


@pytest.mark.parametrize("keys", [None, {"step", "loss"}, {"eval", "tag"}, {"count", "half", "nothing"}, set()])
@pytest.mark.parametrize("span", [(0, None), (7, 93), (-20, None), (50, 50)])
def test_a_cut_is_the_stores_rows_with_those_keys(tmp_path: Path, keys: set[str] | None,
                                                  span: tuple[int, int | None]) -> None:
    store = store_of(tmp_path / "r" / "metrics.jsonl", mixed_rows(300, 0))
    start, stop = span
    want = [{k: v for k, v in r.items() if keys is None or k in keys} for r in store.rows(start, stop)]
    cut = store.cut(keys, start, stop)
    assert len(cut) == len(want)
    assert same(cut.rows(), want)
    batched = [r for b in cut.batches(16) for r in b]  # batches of any size give the same rows
    assert same(batched, want)
    # (the run has what the comparison must cover: an integer column, one that stopped being one, gaps, text)
    assert store.is_integer("count") and not store.is_integer("half") and not store.is_numeric("tag")


def test_a_cut_of_a_file_without_a_step_numbers_its_rows(tmp_path: Path) -> None:
    store = store_of(tmp_path / "r" / "metrics.jsonl", [{"loss": 0.5 + i, "note": "x"} for i in range(10)])
    cut = store.cut({"loss"}, 2, 5)
    assert cut.rows() == [{"step": i, "loss": 0.5 + i} for i in range(2, 5)]
    assert same(store.cut(None).rows(), store.rows())


def test_a_cut_of_a_resumed_run_holds_the_rows_that_replaced_the_old_ones(tmp_path: Path) -> None:
    rows = [{"step": s, "loss": 1.0 + s} for s in range(100)] + [{"step": s, "loss": -1.0 * s} for s in range(60, 80)]
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert store.resumes == [60]
    got = store.cut({"step", "loss"}).rows()
    assert [r["step"] for r in got] == list(range(80))
    assert got[-1]["loss"] == -79.0 and got[59]["loss"] == 60.0


def test_a_cut_is_a_copy(tmp_path: Path) -> None:
    """Rows added after the cut was taken are not in it (it is built outside the store's lock)."""
    path = tmp_path / "r" / "metrics.jsonl"
    store = store_of(path, [{"step": s, "loss": float(s)} for s in range(5)])
    cut = store.cut({"loss"})
    from steptable.ingest.parsed import Parsed

    store.add(Parsed(steps=[5], rows=[{"step": 5, "loss": math.inf}]))
    assert len(store) == 6 and len(cut) == 5 and [r["loss"] for r in cut.rows()] == [0.0, 1.0, 2.0, 3.0, 4.0]
