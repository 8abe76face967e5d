"""Step keys are matched whatever their spelling (SB3's ``total timesteps``, Ray Tune's ``training_iteration``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steptable.ingest.files.follow import load
from steptable.table.stepkeys import is_step_key, norm_step_key, step_key_among
from tests.library_logs import write_sb3_rows


@pytest.mark.parametrize("key", ["total timesteps", "Total-Timesteps", "total_timesteps", "totalTimesteps",
                                 "training_iteration", "Training Iteration", "Global-Step", "global.step", "STEP"])
def test_spellings_are_step_keys(key: str) -> None:
    assert is_step_key(key)


@pytest.mark.parametrize("key", ["steps_per_second", "_stepx", "loss", "time/fps", "iteration_time"])
def test_other_keys_are_not(key: str) -> None:
    assert not is_step_key(key)


def test_wandb_underscore_step_stays_apart() -> None:
    assert norm_step_key("_step") != norm_step_key("step")
    assert step_key_among(["_step", "Step"]) == "Step"  # priority by the candidate, the name as the row spells it


def test_priority_and_value_check() -> None:
    assert step_key_among(["training_iteration", "iteration"]) == "iteration"
    row = {"step": "n/a", "training_iteration": 4}
    assert step_key_among(row, lambda k: isinstance(row[k], int)) == "training_iteration"


def _steps(path: Path) -> list[int]:
    (store,) = load(path).values()
    return list(store.steps)


def test_sb3_spaced_key_is_the_step(tmp_path: Path) -> None:
    rows = [{"rollout/ep_rew_mean": 0.5 * i, "total timesteps": 2048 * i, "train/loss": 1.0 / i} for i in range(1, 4)]
    assert _steps(write_sb3_rows(tmp_path, rows, step_key="total timesteps")) == [2048, 4096, 6144]


def test_ray_tune_training_iteration_is_the_step(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text("".join(json.dumps({"episode_reward_mean": i / 2, "training_iteration": i, "done": False}) + "\n"
                            for i in range(1, 5)))
    assert _steps(path) == [1, 2, 3, 4]
