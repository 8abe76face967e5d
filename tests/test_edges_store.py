"""RunStore edges, pinned where a user meets them: `steptable summary`, a `tail -f` (its Tail, driven in this
process one poll at a time, as the follow loop drives it), and the Follower's stores the watch app reads. The rows
are a GRPO run's (noisy loss, reward, kl, grad norm) from a seeded random.Random."""

from __future__ import annotations

import io
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.replaced import read_replaced
from steptable.cli.main import _parser
from steptable.cli.tailout import Tail
from steptable.ingest import Follower
from tests.helpers import grpo_rows, run_cli, write_rows

NAN = float("nan")


class Watch:
    """``steptable tail -f -n 0 --format FMT root`` (every row): each ``poll`` reads the files and returns what it
    printed."""

    def __init__(self, root: Path, fmt: str = "jsonl") -> None:
        self.fol = Follower([root], on_resume=read_replaced)
        self.out = io.StringIO()
        args = _parser().parse_args(["tail", "-f", "-n", "0", "--format", fmt, str(root)])
        self.tail = Tail(args, self.out, io.StringIO())
        self.seen = 0

    def poll(self) -> str:
        self.fol.scan()
        self.tail.emit(self.fol)
        text = self.out.getvalue()
        new, self.seen = text[self.seen :], len(text)
        return new

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.poll().splitlines()]


# --- tail -f: rows changed in place are printed again, once ------------------------------------------------------


@pytest.mark.parametrize("step_key", ["step", "_step"])
def test_tail_f_prints_a_late_row_once_and_with_its_step(tmp_path: Path, step_key: str) -> None:
    """Two ranks' rows out of step: a row that lands before rows already printed is printed when it arrives (not a
    read later), not again with the next new rows, and names its step also when the file counts in ``_step``."""
    path = tmp_path / "run" / "metrics.jsonl"
    rows = grpo_rows(range(6), step_key=step_key)
    write_rows(path, [rows[0], rows[2]])
    watch = Watch(tmp_path)
    assert [r["step"] for r in watch.records()] == [0, 2]
    write_rows(path, [rows[1]])
    late = watch.records()
    assert [(r.get("step"), r["loss"]) for r in late] == [(1, pytest.approx(rows[1]["loss"]))]
    write_rows(path, [rows[3]])
    assert [r["step"] for r in watch.records()] == [3]
    # a read with a new row and a late one past what was printed: each printed once, in step order
    write_rows(path, [rows[5], rows[4]])
    assert [r["step"] for r in watch.records()] == [4, 5]


def test_tail_f_prints_the_last_row_again_when_its_eval_line_lands_in_the_next_read(tmp_path: Path) -> None:
    """tinker's eval line for the newest step, written after the read that printed the step's train row: the row
    is printed again with the eval score (an agent watching for a drop in eval accuracy must see it)."""
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, grpo_rows(range(3)))
    watch = Watch(tmp_path)
    assert [r["step"] for r in watch.records()] == [0, 1, 2]
    write_rows(path, [{"step": 2, "eval/acc": 0.41}])
    assert [(r["step"], r.get("eval/acc")) for r in watch.records()] == [(2, 0.41)]


def test_tail_f_prints_every_late_row_when_there_are_more_than_the_edit_log_keeps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More late rows in one read than the store's edit log keeps (4,096; 16 here): the watch prints again every
    row from the first late one on, so none of them is missing from its output."""
    from steptable.ingest import store

    monkeypatch.setattr(store, "MAX_EDITS", 16)
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, [{"step": 2 * i, "loss": 1.0} for i in range(30)])
    watch = Watch(tmp_path)
    assert len(watch.records()) == 30
    write_rows(path, [{"step": 2 * i + 1, "loss": 0.5} for i in range(20)])
    printed = [r["step"] for r in watch.records() if r["loss"] == 0.5]
    assert printed == [2 * i + 1 for i in range(20)]


def test_tail_f_of_a_run_restarted_between_reads_says_resumed_and_keeps_one_row_a_step(tmp_path: Path) -> None:
    """A GRPO run crashes after step 9 and restarts from its step-5 checkpoint, read by a later poll: the watch
    says so, and the run's rows are steps 0-15 once each (not 0-9 followed by 5-15)."""
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, grpo_rows(range(10)))
    watch = Watch(tmp_path, fmt="text")
    watch.poll()
    write_rows(path, grpo_rows(range(5, 16), seed=1))
    assert "resumed at step 5" in watch.poll()
    (store,) = watch.fol.stores.values()
    assert list(store.steps) == list(range(16)) and store.resumes == [5]
    assert store.value(5, "loss") == pytest.approx(grpo_rows(range(5, 16), seed=1)[0]["loss"])


# --- summary ------------------------------------------------------------------------------------------------------


def summary(root: Path, capsys: pytest.CaptureFixture[str], *more: str) -> str:
    rc, out, err = run_cli(["summary", str(root), *more], capsys)
    assert rc == 0, err
    return out


def test_summary_does_not_list_the_files_own_step_counter_as_a_metric(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A file counting in ``iteration``: its steps are the header's range, not a metric row of their own."""
    write_rows(tmp_path / "run" / "metrics.jsonl", grpo_rows(range(20), step_key="iteration"))
    out = summary(tmp_path, capsys)
    heads = [line.split()[0] for line in out.splitlines()[2:]]
    assert "steps 0-19" in out and heads[:3] == ["loss", "reward", "kl"] and heads[4] == "alerts", out


def test_summary_reads_a_nan_loss_in_a_column_that_once_held_text(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A trainer that wrote "skipped" for the loss of one step: the column holds text as well, and a NaN loss 20
    steps later is still an error (not "alerts 0"); a text column asked for by name shows its value."""
    rows = grpo_rows(range(40))
    rows[10]["loss"] = "skipped"
    rows[30]["loss"] = NAN
    for r in rows:
        r["phase"] = "rollout"
    write_rows(tmp_path / "run" / "metrics.jsonl", rows)
    out = summary(tmp_path, capsys)
    assert "E step 30 loss non-finite (nan)" in out, out
    out = summary(tmp_path, capsys, "--columns", "reward,phase")
    assert [("rollout" in line) for line in out.splitlines() if line.startswith("phase ")] == [True], out


def test_summary_of_a_restart_over_a_nan_loss_in_a_column_that_once_held_text_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The rows a resume replaced are read again for their alerts: the NaN loss that made someone restart the run
    from step 25 is said, whatever else the loss column held."""
    rows = grpo_rows(range(40))
    rows[10]["loss"] = "skipped"
    rows[30]["loss"] = NAN
    write_rows(tmp_path / "run" / "metrics.jsonl", [*rows, *grpo_rows(range(25, 45), seed=1)])
    out = summary(tmp_path, capsys)
    assert "resumed 25" in out and "step 30 loss non-finite (nan)" in out and "resume at step 25 replaced" in out, out


def test_summary_of_a_run_restarted_over_and_over_lists_the_first_100_restarts_alerts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """120 restarts from step 0, each after a NaN loss at step 5: why the run was restarted is said for the first
    100 (and the live one), a bounded list rather than one line per restart."""
    rows: list[dict[str, Any]] = []
    for k in range(120):
        rows += [{**r, "loss": NAN if r["step"] == 5 else r["loss"]} for r in grpo_rows(range(8), seed=k)]
    write_rows(tmp_path / "run" / "metrics.jsonl", rows)
    out = summary(tmp_path, capsys)
    assert "alerts 101 (101E)" in out, out.splitlines()[:6]


def test_summary_of_a_clockless_run_left_alone_for_hours_says_it_stalled(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """verl's file logger writes no clock: a run whose file was last written 3 hours ago at 72 s a step stalled."""
    path = tmp_path / "verl" / "exp.jsonl"
    rng = random.Random(3)
    write_rows(path, [{"step": s, "data": {"actor/pg_loss": rng.gauss(0.1, 0.02), "timing_s/step": 72.0 + rng.random()}}
                      for s in range(1, 201)])
    t = time.time() - 3 * 3600
    os.utime(path, (t, t))
    out = summary(tmp_path, capsys)
    assert "stalled" in out and "alerts 1 (1W)" in out, out
