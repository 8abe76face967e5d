"""steptable.table.rowvalues: what StepLogger keeps of a logged row (nested mappings spread once)."""

from __future__ import annotations

from typing import Any


def test_a_config_dict_that_holds_itself_is_spread_once() -> None:
    """{"x": d, "y": d, "z": d} with d that dict is spread once: spreading it 16 levels deep would be 3**16 paths
    (log() would hang)."""
    from steptable.table.rowvalues import MAX_LEAVES, flat

    d: dict[str, Any] = {"lr": 0.1}
    d["x"] = d
    d["y"] = d
    d["z"] = d
    assert flat({"step": 0, "cfg": d}) == {"step": 0, "cfg/lr": 0.1}
    shared: dict[str, Any] = {}  # no cycle, but one mapping down 2**40 paths
    for _ in range(40):
        shared = {"a": shared, "b": shared, "v": 1}
    assert len(flat({"deep": shared})) <= MAX_LEAVES
    big = {"counts": {str(i): i for i in range(20_000)}}  # a token histogram logged each step
    view = flat({"step": 1, **big})
    assert len(view) == 1 + MAX_LEAVES and view["counts/0"] == 0


def test_keys_that_are_not_text_are_named_as_the_jsonl_names_them() -> None:
    """A row's int or None key reads as its text, as the JSONL line writes it; one whose text another key has is
    kept under ``~2``, as the writer keeps it."""
    import json

    from steptable.logger.rowjson import json_line
    from steptable.table.rowvalues import flat

    row = {"step": 3, 0: 0.7, None: 1, "0": 0.1, "acc": {1: 0.5}}
    assert flat(row) == {"step": 3, "0": 0.7, "None": 1, "0~2": 0.1, "acc/1": 0.5}
    assert set(json.loads(json_line(row))) == {"step", "0", "None", "0~2", "acc"}
