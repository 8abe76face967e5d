"""Where a store places rows (steptable.ingest.placement), its resume rule first: rows that log a step again from
a checkpoint replace the rows from there on (with fewer or more metrics, from step 0 after a counter restart),
while a late row, a null or a NaN read alone is merged, not a resume."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from steptable.ingest import Follower, RunStore
from steptable.ingest.parsed import Parsed
from tests.helpers import grpo_rows, write_rows
from tests.ingest.helpers import add_rows, add_untimed, followed
from tests.trainer_logs import tinker_iteration_row

NAN = float("nan")


def test_a_relaunch_logging_half_the_metrics_is_a_resume(tmp_path: Path) -> None:
    """The crashed run logged 8 metrics; the relaunch from the step-5 checkpoint logs 4 of them (diagnostics
    off): it measures again all its own, so it is a resume, and the crashed run's rows 6-7 go."""
    path = tmp_path / "run" / "metrics.jsonl"
    rng = random.Random(5)
    extra = ("entropy", "clip_frac", "response_len", "lr")
    write_rows(path, [{**r, **{k: rng.random() for k in extra}} for r in grpo_rows(range(8))])
    write_rows(path, grpo_rows(range(5, 6), seed=9))
    _, store = followed(tmp_path)
    assert store.resumes == [5] and list(store.steps) == list(range(6))


def test_a_relaunch_with_diagnostics_added_is_a_resume(tmp_path: Path) -> None:
    """The crashed run logged loss, reward, kl; the relaunch from step 5 logs loss, reward and 5 new diagnostics:
    it measures again 2 of the 3 the old row held (more than half), so it is a resume, not an eval to merge."""
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, [{k: r[k] for k in ("step", "loss", "reward", "kl")} for r in grpo_rows(range(8))])
    rng = random.Random(6)
    write_rows(path, [{"step": 5, "loss": 0.7, "reward": 0.3, **{f"diag/{k}": rng.random() for k in "abcde"}}])
    _, store = followed(tmp_path)
    assert store.resumes == [5] and list(store.steps) == list(range(6)) and store.value(5, "loss") == 0.7


def test_a_late_nan_row_read_alone_is_no_resume(tmp_path: Path) -> None:
    """A bare NaN reaches the store as its quoted sentinel when a chunk's keys are all known: a late
    {"step": 6, "loss": NaN} read live is no resume, and steps 7-9 stay, as a fresh read keeps them."""
    from steptable.ingest import load

    f = tmp_path / "run" / "metrics.jsonl"
    f.parent.mkdir()
    f.write_text("".join(json.dumps({"step": s, "loss": 1 / (s + 1), "reward": 0.1 * s}) + "\n" for s in range(10)))
    follower = Follower([tmp_path / "run"])
    follower.scan()
    with open(f, "a") as fh:
        fh.write(json.dumps({"step": 6, "loss": NAN}) + "\n")
    follower.scan()
    live = next(iter(follower.stores.values()))
    fresh = next(iter(load(tmp_path / "run").values()))
    assert list(live.steps) == list(fresh.steps) == list(range(10)) and live.resumes == fresh.resumes == []


def test_a_resume_still_replaces_the_rows_it_logs_again() -> None:
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    add_untimed(s, [tinker_iteration_row(t) for t in range(8)])
    add_untimed(s, [{**tinker_iteration_row(t), "time/total": 50.0 + t} for t in range(4, 6)])
    assert list(s.steps) == list(range(6)) and s.resumes == [4]
    assert s.value(4, "time/total") == 54.0 and s.value(5, "time/total") == 55.0 and s.value(3, "time/total") == 33.0


def test_resume_replaces_rows_from_the_resume_step() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": i, "loss": float(i), "rew": 1.0} for i in range(10)])
    add_rows(s, [{"step": i, "loss": 100.0 + i, "rew": 2.0} for i in range(6, 12)])
    assert list(s.steps) == list(range(12)) and s.resumes == [6]
    assert s.value(5, "loss") == 5.0 and s.value(6, "loss") == 106.0 and s.value(9, "rew") == 2.0


def test_counter_restart_is_a_resume_at_zero() -> None:
    s = RunStore("r", "r")
    add_rows(s, [{"step": i, "loss": 1.0} for i in range(5)])
    add_rows(s, [{"step": i, "loss": 2.0} for i in range(3)])
    assert list(s.steps) == [0, 1, 2] and s.resumes == [0] and s.column("loss").tolist() == [2.0] * 3


def test_a_late_value_for_a_key_logged_as_null_is_merged_not_a_resume() -> None:
    """StepLogger writes NaN as null ("not measured this step"); an eval thread's late value for that step is
    merged, not a resume that would drop every row after it."""
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    rows = [{"step": t, "loss": 1 / (t + 1), "val": None} for t in range(100)]
    s.add(Parsed(steps=list(range(100)), rows=rows, step_key="step"), now=math.nan)
    s.add(Parsed(steps=[50], rows=[{"step": 50, "val": 0.7}], step_key="step"), now=math.nan)
    assert len(s) == 100 and s.resumes == [] and s.value(50, "val") == 0.7
    s.add(Parsed(steps=[60], rows=[{"step": 60, "loss": 0.5, "val": 0.1}], step_key="step"), now=math.nan)  # resume
    assert len(s) == 61 and s.resumes == [60]


def test_a_resume_of_rows_that_are_mostly_null_is_still_a_resume() -> None:
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    row = {"a": 1.0, "b": 2.0, "c": 3.0, "w": None, "x": None, "y": None, "z": None}
    s.add(Parsed(steps=list(range(6)), rows=[{"step": t, **row} for t in range(6)], step_key="step"), now=math.nan)
    s.add(Parsed(steps=[3, 4], rows=[{"step": t, **row} for t in (3, 4)], step_key="step"), now=math.nan)
    assert list(s.steps) == [0, 1, 2, 3, 4] and s.resumes == [3]
