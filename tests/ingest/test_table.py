"""steptable.ingest.table: the column storage under RunStore: a text repeated on every row stored once, and the
cap on distinct keys (keys past it are not stored, and said once)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from steptable.ingest import Follower
from steptable.ingest.parsed import Parsed
from steptable.ingest.store import RunStore
from tests.helpers import write_rows


def test_a_text_logged_on_every_row_is_stored_once(tmp_path: Path) -> None:
    """A tag column ("code", "math") holds a pointer to one shared string object, not one object per row (about
    60 bytes a cell). Long or many distinct texts are stored as they come, and every value reads back as logged."""
    path = tmp_path / "a" / "metrics.jsonl"
    tags = ["code", "math", None, "code"]
    write_rows(path, [{"step": s, "tag": tags[s % 4], "note": f"sample {s}", "long": "x" * 100 + str(s % 2)}
                      for s in range(600)])
    f = Follower([tmp_path])
    f.scan()  # (the fast path: a whole chunk decoded at once)
    write_rows(path, [{"step": 600, "tag": "code", "extra": 1}, {"step": 601, "tag": ["a", "list"]}])
    f.scan()  # (rows of other shapes: the line-by-line path)
    st = f.stores["a/metrics.jsonl"]
    tag = st.column("tag")
    assert list(tag[:600]) == [tags[s % 4] for s in range(600)] and tag[600] == "code" and tag[601] == ["a", "list"]
    assert len({id(v) for v in tag[:601] if v is not None}) == 2
    note = st.column("note")
    assert list(note[:600]) == [f"sample {s}" for s in range(600)]
    from steptable.ingest.table import SHARED_TEXTS

    assert len(st._texts["note"]) == SHARED_TEXTS  # (bounded: texts past that are kept as they come)
    assert len({id(v) for v in st.column("long")}) > 2 and set(st.column("long")[:600]) == {"x" * 100 + "0",
                                                                                          "x" * 100 + "1"}


def test_keys_past_the_cap_are_not_stored_and_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log naming a new key on every row (per-sample metrics) cost rows x keys cells: 10 GB for 30k rows."""
    from steptable.ingest import Follower, store, table

    monkeypatch.setattr(table, "MAX_KEYS", 50)
    monkeypatch.setattr(store, "MAX_KEYS", 50)
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    with open(path, "w") as f:
        for i in range(3000):
            f.write(json.dumps({"step": i, "loss": 0.5, f"sample/{i}": 1.0}) + "\n")
    fol = Follower([tmp_path])
    fol.scan()
    s = fol.stores["run/metrics.jsonl"]
    assert len(s) == 3000 and len(s.keys) == 50 and s.value(2999, "loss") == 0.5
    assert s.keys[:3] == ["step", "loss", "sample/0"] and s.value(0, "sample/0") == 1.0
    assert [e.split(": ", 1)[1][:40] for e in fol.errors] == ["more than 50 distinct keys: keys first s"]
    with open(path, "a") as f:
        f.write(json.dumps({"step": 3000, "loss": 0.25, "sample/x": 1.0}) + "\n")
    fol.scan()
    assert s.value(3000, "loss") == 0.25 and len(fol.errors) == 1  # said once


def test_the_key_cap_notice_names_the_first_key_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from steptable.ingest import store, table

    monkeypatch.setattr(table, "MAX_KEYS", 3)
    monkeypatch.setattr(store, "MAX_KEYS", 3)
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    s.add(Parsed(steps=[0], rows=[{"step": 0, "a": 1.0, "b": 2.0}]), now=math.nan)  # exactly at the cap
    p = Parsed(steps=[1, 2], rows=[{"step": 1, "a": 1.0, "c": 3.0}, {"step": 2, "a": 1.0}])
    s.add(p, now=math.nan)
    assert [b.reason for b in p.bad] == [store._too_many_keys("c")] and "'c'" in p.bad[0].reason


def test_doubles_given_as_arrays_are_stored_as_floats_given_one_by_one() -> None:
    """A parsed chunk whose float columns come as ``array('d')`` (and int columns as ``array('q')``: a read split
    across processes, steptable.ingest.splitread) makes the store the same chunk of tuples makes."""
    from array import array

    def chunk(lo: int, kind: type) -> Parsed:
        steps = list(range(lo, lo + 4))
        cols = {"step": steps, "loss": [0.5, -0.0, 1e308, 2.5], "n": [1, 2, 3, 2**60]}
        if lo:
            cols["late"] = [0.1, 0.2, 0.3, 0.4]  # (a key new in this chunk)
        conv = {k: array("q" if k in ("step", "n") else "d", v) if kind is array else tuple(v)
                for k, v in cols.items()}
        return Parsed(steps=conv["step"], cols=conv, int_keys=frozenset({"step", "n"}), step_key="step")

    stores = []
    for kind in (tuple, array):
        st = RunStore("r", "m.jsonl")
        for lo in (0, 4):
            st.add(chunk(lo, kind), math.nan)
        stores.append(st)
    a, b = stores
    assert a.keys == b.keys and list(a.steps) == list(b.steps)
    for k in a.keys:
        assert repr(a.cells(k)) == repr(b.cells(k)) and a.is_integer(k) == b.is_integer(k)
    assert [type(v) for v in b.cells("n")] == [int] * 8 and repr(b.cells("loss")[1]) == "-0.0"
