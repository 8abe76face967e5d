"""steptable.ingest.readers.fastpath: the typed whole-chunk decoder gives what the tolerant line-by-line path
gives, and falls back on a new key, a type change or a bad line."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from steptable.ingest.readers.jsonl import JsonlParser
from steptable.ingest.store import RunStore
from tests.ingest.helpers import feed_chunks


def _rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for s in range(n):
        r: dict[str, Any] = {"step": s, "loss": rng.random(), "n": rng.randrange(100), "phase": "a",
                             "data": {"x/y": rng.random()}}
        if s % 7 == 3:
            r["loss"] = None
        if s % 11 == 5:
            r["loss"] = float("nan")
        if s % 5 == 1:
            del r["n"]
        rows.append(r)
    return rows


def _dump(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _same(a: RunStore, b: RunStore) -> None:
    assert a.keys == b.keys and list(a.steps) == list(b.steps)
    for i in range(len(a)):
        ra, rb = a.row(i), b.row(i)
        assert ra.keys() == rb.keys()
        for k in ra:
            va, vb = ra[k], rb[k]
            assert (isinstance(va, float) and math.isnan(va) and math.isnan(vb)) or (va == vb and type(va) is type(vb))


def test_fast_path_matches_tolerant_path() -> None:
    rows = _rows(300)
    data = _dump(rows)
    lines = data.splitlines(keepends=True)
    chunks = [b"".join(lines[i : i + 20]) for i in range(0, len(lines), 20)]
    fast, parser = feed_chunks(chunks)
    assert parser.fast_chunks >= 10  # the fast path did run
    slow = RunStore("r", "r.jsonl")
    p2 = JsonlParser("r.jsonl")
    for i, ln in enumerate(lines):
        slow.add(p2._tolerant(ln, i + 1))
    _same(fast, slow)
    assert fast.is_integer("n") and fast.value(1, "n") is None and isinstance(fast.value(0, "n"), int)
    assert fast.value(3, "loss") is not None and math.isnan(fast.value(3, "loss"))
    assert fast.column("phase")[5] == "a" and fast.value(0, "x/y") == rows[0]["data"]["x/y"]


def test_fast_path_falls_back_on_new_key_type_change_and_bad_line() -> None:
    rows = _rows(60)
    rows[45]["new"] = 1.5
    rows[50]["loss"] = True  # a bool where numbers were: the column becomes a list
    data = _dump(rows).replace(b'{"step": 55,', b'{"step": 55, oops')
    lines = data.splitlines(keepends=True)
    chunks = [b"".join(lines[i : i + 10]) for i in range(0, len(lines), 10)]
    store, _ = feed_chunks(chunks)
    assert [b.lineno for b in store.bad] == [56]
    assert list(store.steps) == [s for s in range(60) if s != 55]
    assert store.value(store.index_of_step(45), "new") == 1.5 and store.value(0, "new") is None
    assert not store.is_numeric("loss") and store.value(store.index_of_step(50), "loss") is True
    assert store.value(0, "loss") == rows[0]["loss"]


def _chunks(rows: list[dict[str, Any]], size: int) -> list[bytes]:
    lines = _dump(rows).splitlines(keepends=True)
    return [b"".join(lines[i : i + size]) for i in range(0, len(lines), size)]


def test_fast_path_nested_step_and_verl_envelope() -> None:
    rows = [{"training": {"global_step": 10 * s}, "data": {"actor/pg_loss": s / 10, "perf": {"mfu": 0.5}}}
            for s in range(80)]
    store, parser = feed_chunks(_chunks(rows, 10))
    assert parser.fast_chunks >= 6 and parser.step_key == "training/global_step"
    assert list(store.steps) == [10 * s for s in range(80)]
    assert store.keys == ["training/global_step", "actor/pg_loss", "perf/mfu"]
    assert store.value(79, "actor/pg_loss") == 7.9


def test_fast_path_resume_and_merge_in_later_chunks() -> None:
    rows = [{"step": s, "loss": float(s), "lr": 0.1} for s in range(50)]
    rows += [{"step": s, "loss": 100.0 + s, "lr": 0.2} for s in range(30, 60)]  # resumed at 30
    rows.insert(20, {"step": 19, "test/acc": 0.5, "lr": 0.1})  # a late eval row, next to its step
    store, parser = feed_chunks(_chunks(rows, 10))
    assert parser.fast_chunks >= 4 and store.resumes == [30]
    assert list(store.steps) == list(range(60)) and store.value(30, "loss") == 130.0
    assert store.row(19) == {"step": 19, "loss": 19.0, "lr": 0.1, "test/acc": 0.5}


def test_no_typed_decoder_for_more_keys_than_a_run_keeps() -> None:
    """msgspec finds a row's key by scanning the Struct's fields on from the last one found, so rows of many keys in
    changing orders cost keys x keys each (6 rows of 50 000 shuffled keys: 35 s). A shape of more than MAX_KEYS
    leaves (nested ones counted) gets no typed decoder: the rows are read the line-by-line way, keys past MAX_KEYS
    not stored, as before. Up to MAX_KEYS the typed path still runs."""
    from steptable.ingest.table import MAX_KEYS

    def rows(n_keys: int) -> list[dict[str, Any]]:
        rng = random.Random(n_keys)
        keys = [f"m{j}" for j in range(n_keys - 2)]
        out = []
        for s in range(40):
            rng.shuffle(keys)
            out.append({"step": s, **{k: s + 0.5 for k in keys}, "data": {"x/y": float(s)}})
        return out

    store, parser = feed_chunks(_chunks(rows(MAX_KEYS), 10))
    assert parser.fast_chunks >= 3 and len(store.keys) == MAX_KEYS
    store, parser = feed_chunks(_chunks(rows(MAX_KEYS + 1), 10))
    assert parser.fast_chunks == 0 and parser.slow_chunks == 4
    assert list(store.steps) == list(range(40)) and len(store.keys) == MAX_KEYS
    assert all(store.value(39, k) == 39.5 for k in store.keys if k.startswith("m"))


def test_new_keys_on_every_row_build_no_struct_past_max_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows that each bring new keys (per-sample metrics), one row a chunk as ``tail -f`` meets them: the shape
    changes every chunk, and a typed decoder was rebuilt over all the keys seen each time (1,000 rows of 20 new keys:
    70 s). No Struct is built with more than MAX_KEYS fields."""
    import msgspec

    from steptable.ingest.readers import fastpath
    from steptable.ingest.table import MAX_KEYS

    sizes: list[int] = []
    build = msgspec.defstruct

    def defstruct(name: str, fields: list[Any], **kw: Any) -> Any:
        sizes.append(len(fields))
        return build(name, fields, **kw)

    monkeypatch.setattr(fastpath.msgspec, "defstruct", defstruct)
    rows = [{"step": i, "loss": 1 / (i + 1), **{f"k{i}_{j}": j for j in range(20)}} for i in range(300)]
    store, _ = feed_chunks(_chunks(rows, 1))
    assert sizes and max(sizes) <= MAX_KEYS
    assert list(store.steps) == list(range(300)) and len(store.keys) == MAX_KEYS
    assert store.value(50, "k50_19") == 19 and store.value(299, "loss") == 1 / 300
