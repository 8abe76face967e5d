"""steptable.app.layouts: the session's first layout is the schema's, and a new key is measured alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steptable.app.layouts import Layouts
from steptable.ingest.files.follow import load
from steptable.schemafiles.resolve import get_schema
from steptable.schemas import layout
from tests.app.helpers import keyed_stores, session_counting_measures, write_rows
from tests.trainer_logs import write_maxent_state


def test_layouts_first_layout_is_schemas_layout(tmp_path: Path) -> None:
    stores = keyed_stores(tmp_path, 3, 12)
    for name in ("generic", "routing", "verl"):
        assert Layouts().layout(stores, get_schema(name)) == layout(stores, get_schema(name))
    # runs that name their steps differently: one step column, neither run's own step key again
    for key, stem in (("global_step", "g"), ("_step", "w")):
        path = tmp_path / "mix" / stem / "metrics.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps({key: s, "loss": 1 / (s + 1)}) + "\n" for s in range(5)))
    mixed = list(load(tmp_path / "mix").values())
    assert [c.key for c in Layouts().layout(mixed, get_schema("generic"))] == ["step", "loss"]


def test_promoted_keys_are_ranked_as_the_schemas_layout_ranks_them(tmp_path: Path) -> None:
    """HF's TrainerState.save_to_json sorts every key: MaxEnt's constant ``eval/loss`` comes before ``eval/reward``
    in the file, and both are promoted; the varying reward goes first in both layouts."""
    stores = list(load(write_maxent_state(tmp_path / "maxent")["state"].parent).values())
    schema = get_schema("maxent-grpo")
    keys = [c.key for c in Layouts().layout(stores, schema)]
    assert keys == [c.key for c in layout(stores, schema)]
    assert keys.index("eval/reward") < keys.index("eval/loss") and stores[0].keys.index("eval/loss") < stores[
        0].keys.index("eval/reward")


def test_a_new_key_measures_only_that_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stores, session, measured = session_counting_measures(tmp_path, monkeypatch)
    write_rows(stores[0].path, [{"step": 40, "g0/m0": 1.0, "eval/new": 0.5}])
    load_more = load(stores[0].path.parent)  # the same file read again, now with the new key
    assert session.update(stores[0].path.parent.name, next(iter(load_more.values())))
    assert "eval/new" in [c.key for c in session.layout]
    assert [k for k in measured if k != "step"] == ["eval/new"]  # not the 30 keys measured before
    assert [c.key for c in session.layout if c.key != "eval/new"] == [c.key for c in layout(stores, session.schema())]
