"""Which way is better (steptable.compare.direction): from the schema of the runs shown (here a StepLogger's
column that says ``better="higher"``); for a reward or loss key no schema declares, the alert role's (also for runs
without a file); None for other keys no schema gives one."""

from __future__ import annotations

from pathlib import Path

from steptable.compare import group_runs, make_arms
from steptable.compare.direction import directions
from steptable.ingest import Follower
from steptable.logger.steplogger import StepLogger
from steptable.table.columns import Col
from tests.compare.helpers import MemRun


def test_directions_from_the_runs_schema(tmp_path: Path) -> None:
    cols = [Col("step", 5, "step", "d", "step"), Col("reward", 7, "reward", ".3f", "reward", better="higher")]
    for arm in ("a", "b"):
        with StepLogger(cols, run_dir=tmp_path / arm, arm=arm, console=False, alerts=False) as sl:
            for s in range(5):
                sl.log({"step": s, "reward": 0.1 * s})
    follower = Follower([str(tmp_path)])
    follower.scan()
    follower.finish()
    arms = make_arms(group_runs([follower.stores[k] for k in sorted(follower.stores)]), "step")
    assert directions(arms, ["reward", "nothing"]) == {"reward": "higher", "nothing": None}
    mem = make_arms(group_runs([MemRun("a", range(3), {"reward": [1.0, 2.0, 3.0]}, run="a_s1")]), "step")
    assert directions(mem, ["reward", "train/loss", "kl"]) == {"reward": "higher", "train/loss": "lower", "kl": None}


def test_compare_and_summary_give_a_plain_runs_reward_and_loss_one_direction(tmp_path: Path) -> None:
    """StepLogger runs of ``reward`` and ``loss`` with no column set: the automatic columns describe neither, so the
    alert roles' directions hold, whatever other keys the runs log; beside TRL's keys (its schema declares a GRPO
    loss with no direction) the loss has none. ``compare`` had none for either where ``summary`` had them."""
    for extra in ({}, {"accuracy": 0.5}, {"kl": 0.1, "entropy": 1.0, "grad_norm": 0.3}):
        root = tmp_path / str(len(extra))
        for arm in ("a", "b"):
            with StepLogger(run_dir=root / arm, arm=arm, console=False, alerts=False) as sl:
                for s in range(5):
                    sl.log({"step": s, "reward": 0.1 * s, "loss": 1.0 - 0.1 * s, **extra})
        follower = Follower([str(root)])
        follower.scan()
        follower.finish()
        arms = make_arms(group_runs([follower.stores[k] for k in sorted(follower.stores)]), "step")
        trl = "kl" in extra
        assert directions(arms, ["reward", "loss"]) == {"reward": "higher", "loss": None if trl else "lower"}, extra
