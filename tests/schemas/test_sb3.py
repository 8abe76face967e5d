"""steptable.schemas.sb3: runs written by Stable-Baselines3 itself (PPO, DQN and SAC on CPU, a few hundred timesteps)
in each of its logger's formats, read and laid out as SB3 runs; summary and compare of two PPO arms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from steptable.compare import group_runs, make_arms, pick_metrics
from steptable.compare.direction import directions, schema_order
from steptable.ingest import load
from steptable.schemafiles.resolve import run_schema
from steptable.schemas import layout, sb3
from tests.helpers import run_cli

pytest.importorskip("torch")
sb3lib = pytest.importorskip("stable_baselines3")
gym = pytest.importorskip("gymnasium")
pytest.importorskip("tensorboard")

from stable_baselines3.common.logger import configure  # noqa: E402


def learn(folder: Path, algo: str, env: str, steps: int, **kw: Any) -> None:
    model = getattr(sb3lib, algo)("MlpPolicy", gym.make(env), seed=0, device="cpu", verbose=0, **kw)
    model.set_logger(configure(str(folder), ["csv", "json", "tensorboard"]))
    model.learn(steps, log_interval=1)
    model.logger.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PPO at two learning rates, DQN and SAC, each written as progress.csv, progress.json and TensorBoard events."""
    d = tmp_path_factory.mktemp("sb3")
    for arm, lr in (("ppo_fast", 3e-3), ("ppo_slow", 1e-5)):
        learn(d / arm, "PPO", "CartPole-v1", 1536, n_steps=64, batch_size=32, n_epochs=2, learning_rate=lr)
    learn(d / "dqn", "DQN", "CartPole-v1", 300, learning_starts=50)
    learn(d / "sac", "SAC", "Pendulum-v1", 420, learning_starts=100)
    return d


def one(path: Path) -> Any:
    (store,) = load(path).values()
    return store


def test_every_format_of_every_algorithm_is_read_as_sb3(runs: Path) -> None:
    keys: dict[str, set[str]] = {}
    for run in ("ppo_fast", "ppo_slow", "dqn", "sac"):
        files = [runs / run / "progress.csv", runs / run / "progress.json", *(runs / run).glob("events.out.tfevents.*")]
        assert len(files) == 3
        for f in files:
            store = one(f)
            assert run_schema(store).name == "sb3", (f, store.keys)
            keys.setdefault(run, set(store.keys))
    assert {"train/actor_loss", "train/critic_loss", "train/ent_coef", "time/episodes"} <= keys["sac"]
    assert {"rollout/exploration_rate", "time/episodes"} <= keys["dqn"]
    assert {"train/approx_kl", "train/clip_fraction", "time/iterations"} <= keys["ppo_fast"]


@pytest.mark.parametrize("name", ["progress.csv", "progress.json"])
def test_a_run_is_laid_out_with_its_return_first_and_its_counters_hidden(runs: Path, name: str) -> None:
    store = one(runs / "sac" / name)
    keys = [c.key for c in layout([store], run_schema(store))]
    assert keys[1] == "rollout/ep_rew_mean"  # after the step (its own key: time/total_timesteps)
    assert {"train/actor_loss", "train/critic_loss", "train/ent_coef"} <= set(keys)
    assert not {"time/episodes", "train/n_updates"} & set(keys[1:])


def test_keys_others_share_with_sb3_do_not_make_a_run_sb3() -> None:
    """HF's W&B and trackio rows (train/loss, train/learning_rate, train/global_step, train/epoch, eval/loss) and
    tinker's time/ keys score nothing; two SB3 keys alone are not enough."""
    hf = ["train/loss", "train/learning_rate", "train/grad_norm", "train/global_step", "train/epoch", "eval/loss"]
    tinker = ["time/total", "time/train_step", "progress/batch", "optim/lr"]
    assert sb3.match(Path("run.jsonl"), hf) == 0 and sb3.match(Path("metrics.jsonl"), tinker) == 0
    assert sb3.match(Path("log.jsonl"), ["train/value_loss", "train/entropy_loss", "loss"]) < 0.5


def test_summary_of_ppo_arms_leads_with_the_return(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(["summary", str(runs / "ppo_fast"), str(runs / "ppo_slow")], capsys)
    assert rc == 0, err
    lines = out.splitlines()
    first = lines.index(next(line for line in lines if line.startswith("col ")))
    assert lines[first + 1].startswith("ep_rew ")
    assert not any(line.startswith(("t/iterations", "n_updates")) for line in lines)


def test_compare_of_ppo_arms_knows_which_way_the_return_is_better(runs: Path) -> None:
    stores = [one(runs / arm / "progress.csv") for arm in ("ppo_fast", "ppo_slow")]
    arms = make_arms(group_runs(stores), "step")
    metrics = pick_metrics(arms)
    assert "rollout/ep_rew_mean" in metrics
    assert not {"time/iterations", "train/n_updates", "time/total_timesteps"} & set(metrics)
    better = directions(arms, metrics)
    assert better["rollout/ep_rew_mean"] == "higher" and better["train/explained_variance"] == "higher"
    assert better["train/loss"] is None


def test_compare_lists_the_return_first_as_the_schema_lays_it_out(runs: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """SB3 logs time/fps and the rollout's keys in an order of its own; compare lists the metrics as the sb3 schema
    lays its columns out (the returns first), and the keys asked for by --metrics in the order they were logged."""
    stores = [one(runs / arm / "progress.csv") for arm in ("ppo_fast", "ppo_slow")]
    arms = make_arms(group_runs(stores), "step")
    metrics = pick_metrics(arms)
    ordered = schema_order(arms, metrics)
    assert sorted(ordered) == sorted(metrics) and ordered[:2] == ["rollout/ep_rew_mean", "rollout/ep_len_mean"]
    # whatever order SB3 wrote them in (its CSV header adds new keys in a set's order: it differs between processes)
    assert schema_order(arms, metrics[::-1])[:2] == ordered[:2]
    code, out, _ = run_cli(["compare", str(runs / "ppo_fast"), str(runs / "ppo_slow"), "--format", "jsonl"], capsys)
    listed = list(dict.fromkeys(json.loads(line)["metric"] for line in out.splitlines()))
    assert code == 0 and listed == ordered
