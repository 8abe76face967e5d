"""steptable.ingest.readers.arms: one JSONL written by the StepLoggers of several arms is split into a run
per arm (a row whose arm is not a name stays with the file's own run)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger
from steptable.ingest import Follower
from steptable.ingest.files.follow import load
from tests.helpers import write_rows
from tests.logger.helpers import CUSTOM_COLS

COLS = [Col("step", 5, "step", "d"), Col("rew", 6, "rew")]


@pytest.mark.parametrize("odd", [["a", "b"], {"name": "b"}, 3, 1.5, True, None, math.nan])
def test_an_arm_that_is_not_a_string_keeps_its_row_in_the_files_own_run(tmp_path: Path, odd: Any) -> None:
    """Two StepLoggers' arms share a file (split by their descriptions); a row naming no arm by a string stays with
    the file's first arm, whatever its ``arm`` holds, and the other arm's rows still go to it."""
    for arm in ("A", "B"):
        with StepLogger(COLS, run_dir=tmp_path / "r", arm=arm, console=False, alerts=False) as sl:
            sl.log({"step": 0, "rew": 0.1})
    rows = [{"step": 1, "rew": 0.2, "arm": odd}, {"step": 1, "rew": 0.3, "arm": "B"}]
    write_rows(tmp_path / "r" / "metrics.jsonl", rows)
    f = Follower([tmp_path])
    f.scan()
    assert not f.errors
    steps = {run: list(s.steps) for run, s in f.stores.items()}
    assert steps == {"r/metrics.jsonl": [0, 1], "r/metrics.jsonl#B": [0, 1]}
    assert f.stores["r/metrics.jsonl#B"].value(1, "rew") == 0.3


def test_arms_sharing_a_file_keep_their_rows_after_a_restart(tmp_path: Path) -> None:
    """The shared file is replaced by a new run in which the other arm logs first: each arm's rows stay in its
    own run (the follower takes the arm stores made anew, though empty stores are falsy)."""
    from steptable.ingest.files.follow import Follower

    def session(order: list[str]) -> None:
        loggers = {arm: StepLogger(CUSTOM_COLS, run_dir=tmp_path / "exp", arm=arm, console=False, alerts=False)
                   for arm in order}
        for s in range(3):
            for arm in order:
                loggers[arm].log({"step": s, "reward/mean": 0.1 if arm == "A" else 0.9})
        for lg in loggers.values():
            lg.close()

    session(["A", "B"])
    follower = Follower([tmp_path])
    follower.scan()
    os.rename(tmp_path / "exp" / "metrics.jsonl", tmp_path / "exp" / "metrics.jsonl.1")
    session(["B", "A"])
    follower.scan()
    got = {st.arm: set(st.column("reward/mean")) for st in follower.stores.values()}
    assert got == {"A": {0.1}, "B": {0.9}} and all(len(st) == 3 for st in follower.stores.values())


def test_every_arm_of_a_crowded_shared_file_is_a_run(tmp_path: Path) -> None:

    loggers = [StepLogger(CUSTOM_COLS, run_dir=tmp_path / "exp", arm=f"arm{i:02d}", console=False, alerts=False)
               for i in range(70)]
    for s in range(2):
        for i, lg in enumerate(loggers):
            lg.log({"step": s, "reward/mean": i})
    for lg in loggers:
        lg.close()
    stores = load(tmp_path)
    assert len(stores) == 70 and all(set(st.column("reward/mean")) == {int(st.arm[3:])} for st in stores.values())
