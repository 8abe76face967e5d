"""Which way is better (steptable.compare.direction): from the schema of the runs shown (here a StepLogger's
column that says ``better="higher"``); None where no schema says, and for runs without a file."""

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
    assert directions(mem, ["reward"]) == {"reward": None}
