"""Golden files: each schema's table and legend for a fixture in the trainer's real format, read by the real ingest.

A change to a schema (order, header, width, format, description) shows up as a diff of tests/golden/schema_*.txt;
STEPTABLE_UPDATE_GOLDEN=1 rewrites them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from steptable.ingest import RunStore, load
from steptable.schemafiles.resolve import detect
from steptable.schemas import ROUTING, Schema, layout, legend_for
from steptable.table import render
from steptable.table.columns import streamed
from steptable.table.formatting import display_width
from tests.trainer_logs import (
    write_generic,
    write_maxent_state,
    write_retrain,
    write_routing,
    write_tinker,
    write_tinyzero_console,
    write_trl_state,
    write_verl,
)

Golden = Callable[[str, str], None]

#: the seed's per-step row, column for column (tests/test_render.py pins the same order)
SEED_ORDER = [
    "step", "ref_eq", "rew", "rew_s", "gt_s", "gt_t", "hack_s", "hack_t", "hack_deployed", "solve_deployed",
    "hk_c", "hk_m", "lp_s", "lp_t", "loss", "gn", "lr", "auroc", "cos", "qmass", "keep", "resid", "rout", "tlo",
    "thi", "stale", "hack_abl", "solve_abl",
]


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def read_one(path: Path) -> RunStore:
    stores = [s for s in load(path).values() if s.path == path]
    assert len(stores) == 1
    return stores[0]


def render_runs(runs: Sequence[RunStore], schema: Schema, max_width: int | None = None) -> str:
    """Tables of all runs under one layout (arms line up), then the legend of that layout."""
    cols = layout(runs, schema, max_width=max_width)
    parts = []
    for r in runs:
        table = render.table(cols, [schema.derive(row) for row in r.rows()])
        if len(runs) > 1:
            parts.append(render.title_line(r.arm or r.run, render.width(cols)))
        parts.append(table)
        widths = {display_width(line) for line in table.splitlines()}
        assert widths == {render.width(cols)}, "every line of a table has the header's width"
    parts.append(legend_for(list(runs), schema))
    return "\n".join(parts) + "\n"


def check(golden: Golden, name: str, path: Path, schema_name: str, max_width: int | None = None) -> str:
    run = read_one(path)
    schema = detect(run.path, run.keys)
    assert schema.name == schema_name
    text = render_runs([run], schema, max_width)
    golden(f"schema_{name}.txt", text)
    return text


def test_retrain(tmp_path: Path, golden: Golden) -> None:
    out = write_retrain(tmp_path)
    text = check(golden, "retrain", out["metrics"], "retrain")
    assert "ex_surp" in text.splitlines()[0] and "_entropy_" not in text.splitlines()[0]
    text = check(golden, "retrain_emergence", out["steps"], "retrain")
    assert "corr_n" in text and "/16" in text


def test_verl(tmp_path: Path, golden: Golden) -> None:
    text = check(golden, "verl", write_verl(tmp_path / "proj" / "exp.jsonl"), "verl", max_width=160)
    assert text.splitlines()[0].split()[:4] == ["step", "score", "reward", "pg_loss"]


def test_tinyzero(tmp_path: Path, golden: Golden) -> None:
    text = check(golden, "tinyzero", write_tinyzero_console(tmp_path / "train.log"), "tinyzero")
    assert "val/countdown" in text.splitlines()[0]


def test_tinker(tmp_path: Path, golden: Golden) -> None:
    text = check(golden, "tinker", write_tinker(tmp_path)["metrics"], "tinker", max_width=140)
    assert "test_rew" in text.splitlines()[0]


def test_trl(tmp_path: Path, golden: Golden) -> None:
    text = check(golden, "trl", write_trl_state(tmp_path), "trl", max_width=140)
    assert "train_runtime" not in text.splitlines()[0]


def test_maxent(tmp_path: Path, golden: Golden) -> None:
    check(golden, "maxent", write_maxent_state(tmp_path)["state"], "maxent-grpo")


def test_generic(tmp_path: Path, golden: Golden) -> None:
    path = write_generic(tmp_path / "run.jsonl")
    text = check(golden, "generic", path, "generic")
    assert text.splitlines()[0].split()[0] == "step"
    narrow = render_runs([read_one(path)], detect(path, read_one(path).keys), max_width=60)
    golden("schema_generic60.txt", narrow)


def test_routing_arms_share_the_seed_layout(tmp_path: Path, golden: Golden) -> None:
    arms = write_routing(tmp_path)
    runs = [read_one(p) for p in arms.values()]
    assert {detect(r.path, r.keys).name for r in runs} == {"routing"}
    cols = layout(runs, ROUTING)
    assert [c.key for c in cols] == SEED_ORDER
    assert render.header(cols) == render.header(streamed(ROUTING.cols))
    golden("schema_routing.txt", render_runs(runs, ROUTING))


def test_builtin_legends(golden: Golden) -> None:
    from steptable.schemas import SCHEMAS

    golden("schema_legends.txt", "\n\n".join(legend_for(s) for s in SCHEMAS.values()) + "\n")
