"""Detection: each generated fixture, read by the real ingest, is recognised as its own schema and as no other."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.ingest import RunStore
from steptable.schemafiles.resolve import detect
from steptable.schemas import SCHEMAS, side_file
from tests.schemas.helpers import read_one
from tests.trainer_logs import write_all, write_retrain, write_tinker

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


def test_verl_step_zero_validation_only() -> None:
    keys = ["step", "val-core/openai/gsm8k/reward/mean@1", "val-aux/openai/gsm8k/reward/std@1"]
    assert detect(Path("p/exp.jsonl"), keys).name == "verl"
    assert detect(Path("p/run.log"), ["step", "val/test_score/countdown"]).name == "tinyzero"


def test_verl_console_log_is_verl_not_tinyzero() -> None:
    keys = ["step", "actor/pg_loss", "actor/entropy", "critic/score/mean", "perf/mfu/actor", "timing_s/gen"]
    assert detect(Path("runs/verl.log"), keys).name == "verl"


def test_trainer_state_without_telling_keys_is_trl_and_empty_is_generic() -> None:
    assert detect(Path("out/checkpoint-5/trainer_state.json"), ["step", "custom_metric"]).name == "trl"
    assert detect(Path("x/metrics.jsonl"), []).name == "generic"
    assert detect(Path("x/metrics.jsonl"), ["step", "loss", "lr"]).name == "generic"


def test_generations_are_a_side_file_and_legacy_retrain_detected(tmp_path: Path) -> None:
    out = write_retrain(tmp_path, steps=4, legacy_entropy=True)
    found = side_file(out["generations"])
    assert found is not None and found[0].name == "retrain" and found[1].kind == "generations"
    assert detect(out["metrics"], read_one(out["metrics"]).keys).name == "retrain"


def test_tinker_side_files_each_claimed(tmp_path: Path) -> None:
    out = write_tinker(tmp_path)
    kinds = {name: (side_file(p) or (None, None))[1] for name, p in out.items() if name not in ("log_path", "metrics")}
    assert {n: sf.kind if sf else None for n, sf in kinds.items()} == {
        "config": "config", "checkpoints": "checkpoints", "rollouts": "rollout_summaries", "timing": "timing_spans",
    }
    assert side_file(out["metrics"]) is None
