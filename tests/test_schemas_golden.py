"""Golden files: each schema's table and legend for a fixture in the trainer's real format, read by the real ingest.

A change to a schema (order, header, width, format, description) shows up as a diff of tests/golden/schema_*.txt;
STEPTABLE_UPDATE_GOLDEN=1 rewrites them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from steptable.schemafiles.resolve import detect
from steptable.schemas import ROUTING, layout, legend_for
from steptable.table import render
from steptable.table.columns import streamed
from tests.schemas.helpers import SEED_ORDER, check_layout, read_one, render_runs
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


def test_retrain(tmp_path: Path, golden: Golden) -> None:
    out = write_retrain(tmp_path)
    text = check_layout(golden, "retrain", out["metrics"], "retrain")
    assert "ex_surp" in text.splitlines()[0] and "_entropy_" not in text.splitlines()[0]
    text = check_layout(golden, "retrain_emergence", out["steps"], "retrain")
    assert "corr_n" in text and "/16" in text


def test_verl(tmp_path: Path, golden: Golden) -> None:
    text = check_layout(golden, "verl", write_verl(tmp_path / "proj" / "exp.jsonl"), "verl", max_width=160)
    assert text.splitlines()[0].split()[:4] == ["step", "score", "reward", "pg_loss"]


def test_tinyzero(tmp_path: Path, golden: Golden) -> None:
    text = check_layout(golden, "tinyzero", write_tinyzero_console(tmp_path / "train.log"), "tinyzero")
    assert "val/countdown" in text.splitlines()[0]


def test_tinker(tmp_path: Path, golden: Golden) -> None:
    text = check_layout(golden, "tinker", write_tinker(tmp_path)["metrics"], "tinker", max_width=140)
    assert "test_rew" in text.splitlines()[0]


def test_trl(tmp_path: Path, golden: Golden) -> None:
    text = check_layout(golden, "trl", write_trl_state(tmp_path), "trl", max_width=140)
    assert "train_runtime" not in text.splitlines()[0]


def test_maxent(tmp_path: Path, golden: Golden) -> None:
    check_layout(golden, "maxent", write_maxent_state(tmp_path)["state"], "maxent-grpo")


def test_generic(tmp_path: Path, golden: Golden) -> None:
    path = write_generic(tmp_path / "run.jsonl")
    text = check_layout(golden, "generic", path, "generic")
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
