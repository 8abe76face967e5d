"""steptable.schemas.trl: HF Trainer / TRL and MaxEnt-GRPO trainer states (golden), detection without telling
keys, losses without a direction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from steptable.schemafiles.resolve import detect, get_schema
from tests.schemas.helpers import check_layout
from tests.trainer_logs import write_maxent_state, write_trl_state


def test_pg_losses_have_no_direction() -> None:
    for name, key in [("verl", "actor/pg_loss"), ("tinyzero", "actor/pg_loss"), ("trl", "loss"),
                      ("maxent-grpo", "train/loss/policy")]:
        c = get_schema(name).col(key)
        assert c is not None and c.better is None
    for name, key in [("verl", "critic/score/mean"), ("tinker", "env/all/reward/total"), ("trl", "reward")]:
        c = get_schema(name).col(key)
        assert c is not None and c.better == "higher"


def test_trainer_state_without_telling_keys_is_trl_and_empty_is_generic() -> None:
    assert detect(Path("out/checkpoint-5/trainer_state.json"), ["step", "custom_metric"]).name == "trl"
    assert detect(Path("x/metrics.jsonl"), []).name == "generic"
    assert detect(Path("x/metrics.jsonl"), ["step", "loss", "lr"]).name == "generic"


Golden = Callable[[str, str], None]


def test_trl(tmp_path: Path, golden: Golden) -> None:
    text = check_layout(golden, "trl", write_trl_state(tmp_path), "trl", max_width=140)
    assert "train_runtime" not in text.splitlines()[0]


def test_maxent(tmp_path: Path, golden: Golden) -> None:
    check_layout(golden, "maxent", write_maxent_state(tmp_path)["state"], "maxent-grpo")
