"""steptable.schemas.registry: detection among the built-in schemas (each generated fixture, read by the real
ingest, is its own schema and no other), logged schemas' names, the built-ins' columns and side files."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable import Col
from steptable.ingest import RunStore
from steptable.schemafiles.resolve import detect, get_schema
from steptable.schemas import SCHEMAS, side_file
from steptable.table import runinfo
from steptable.table.formatting import display_width
from tests.schemas.helpers import read_one
from tests.trainer_logs import write_all

EXPECTED = {
    "routing": "routing",
    "retrain": "retrain",
    "retrain_emergence": "retrain",
    "verl": "verl",
    "tinyzero": "tinyzero",
    "tinker": "tinker",
    "trl": "trl",
    "maxent": "maxent-grpo",
    "generic": "generic",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunStore]:
    paths = write_all(tmp_path_factory.mktemp("fixtures"))
    assert set(paths) == set(EXPECTED)
    return {name: read_one(p) for name, p in paths.items()}


def test_every_fixture_detected_as_its_schema(runs: dict[str, RunStore]) -> None:
    got = {name: detect(r.path, r.keys).name for name, r in runs.items()}
    assert got == EXPECTED


def test_cross_matrix_no_schema_misfires(runs: dict[str, RunStore]) -> None:
    """Every built-in's score on every fixture: only the expected schema reaches 0.5."""
    bad = []
    for name, r in runs.items():
        for schema in SCHEMAS.values():
            score = schema.match(r.path, r.keys)
            assert 0.0 <= score <= 1.0
            if (score >= 0.5) != (schema.name == EXPECTED[name]) and schema.name != "generic":
                bad.append(f"{schema.name} scores {score:.2f} on the {name} fixture")
    assert not bad, "\n".join(bad)


def test_detection_by_keys_alone_under_another_name(runs: dict[str, RunStore]) -> None:
    """A renamed file (anything.jsonl) is still recognised from its keys, except where the file kind decides."""
    for name, r in runs.items():
        if name in ("retrain_emergence", "tinyzero"):
            continue
        assert detect(Path("elsewhere/anything.jsonl"), r.keys).name == EXPECTED[name], name


def test_logged_schemas_are_never_named_alike() -> None:
    from steptable.schemas.registry import logged_schema

    class Run:
        def __init__(self, cols: list[Col]) -> None:
            self.meta = {"runinfo": runinfo.describe(cols, None, "metrics.jsonl", 0.0, None, 1)}

    schemas = [logged_schema(Run([Col("step", 5, "step", "d"), Col(f"k{i}", 5, f"k{i}")])) for i in range(300)]
    assert len({s.name for s in schemas if s is not None}) == 300


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_builtin_columns_are_described_and_narrow(name: str) -> None:
    schema = get_schema(name)
    for c in schema.cols:
        assert c.desc, c.key
        assert display_width(c.header) <= c.width <= 10, c.key
        assert c.better in (None, "higher", "lower")
    for r in schema.rules:
        assert r.desc, r.pattern


@pytest.mark.parametrize(
    ("path", "schema", "kind", "step"),
    [
        ("logs/train/emergence/generations.jsonl", "retrain", "generations", None),
        ("run/train_iteration_000010_rollout_summaries.jsonl", "tinker", "rollout_summaries", 10),
        ("run/iteration_000012/train_rollout_summaries.jsonl", "tinker", "rollout_summaries", 12),
        ("run/checkpoints.jsonl", "tinker", "checkpoints", None),
        ("run/config.json", "tinker", "config", None),
        ("out/rich_completions/completions_step_000040.json", "maxent-grpo", "generations", 40),
    ],
)
def test_side_files(path: str, schema: str, kind: str, step: int | None) -> None:
    found = side_file(path)
    assert found is not None
    s, sf = found
    assert (s.name, sf.kind, sf.step_of(path)) == (schema, kind, step)
