"""Cursors of several runs, followed poll by poll through `steptable tail --since` and through the MCP tools (the
SDK's client, in process): each run's late evaluations, rows completed after they were served, resumes, runs that
appear, and runs at different steps. The one-run cursor: tests/cli/test_tail_cursor.py."""

from __future__ import annotations

import asyncio
import contextlib
import io
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from steptable.cli.tailcursor import short_key
from tests.helpers import run_cli, write_rows

ARM = "routeA"  # the runs' arm: three seeds of it (the MCP tail tool follows an arm's runs)
Served = list[tuple[str, int, str]]  # (run id, step, the row's line) of each row served


class Reply:
    """One poll's reply: the rows served by run, the alert lines, the notes, the cursor it ended with."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.rows: Served = []
        run = ""
        for line in text.splitlines():
            if line.startswith("── ") and not line.endswith("──"):  # a run's block: "── arm (run id)"
                run = line.rsplit("(", 1)[1].rstrip(")")
            elif line.split() and line.split()[0].isdigit():
                self.rows.append((run, int(line.split()[0]), line))
        self.alerts = [ln for ln in text.splitlines() if ln[:2] in ("E ", "W ")]
        self.cursor = text.rsplit("steptable tail: cursor ", 1)[1].split()[0]

    def steps(self, run: str) -> list[int]:
        return [s for r, s, _ in self.rows if r == run]


Poll = Callable[..., Reply]


def _cli(path: Path, cursor: str, alerts: bool = False) -> Reply:
    from steptable.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["tail", str(path), "--since", cursor, *(["--alerts-only"] if alerts else [])])
    assert rc in (0, 1), err.getvalue()
    return Reply(out.getvalue() + err.getvalue())


def _mcp(path: Path, cursor: str, alerts: bool = False) -> Reply:
    from mcp import Client

    from steptable.agents.server import build
    from steptable.cli.mcpcmd import run_argv

    async def main() -> str:
        async with Client(build(run_argv)) as client:
            args = {"path": str(path), "since_step": cursor}
            got = await client.call_tool("alerts", args) if alerts else await client.call_tool(
                "tail", {**args, "run": ARM})
            assert not got.is_error, got
            return "".join(c.text for c in got.content)

    return Reply(asyncio.run(main()))


@pytest.fixture(params=["cli", "mcp"])
def poll(request: pytest.FixtureRequest) -> Poll:
    """A poll of the runs under a path after a cursor: `steptable tail --since` (all runs), or the MCP tool (tail of
    the arm's runs; alerts of every run)."""
    if request.param == "mcp":
        pytest.importorskip("mcp")
        return _mcp
    return _cli


def _seeds(tmp_path: Path, ends: tuple[int, ...] = (10, 10, 10)) -> Path:
    """Three seeds of one arm, seed k with rows 0..ends[k]-1."""
    for k, end in enumerate(ends):
        _rows(tmp_path / "exp" / f"seed{k}", range(end))
    return tmp_path / "exp"


def _rows(run: Path, steps: range, loss: float = 0.5) -> None:
    write_rows(run / "metrics.jsonl", [{"step": s, "arm": ARM, "loss": loss, "grad_norm": 0.25} for s in steps])


S0, S1, S2, S3 = (f"seed{k}/metrics.jsonl" for k in range(4))


def test_an_evaluation_merged_into_an_older_row_of_one_of_three_runs_comes_next_poll(tmp_path: Path,
                                                                                    poll: Poll) -> None:
    """seed1's evaluation of step 6 landed after step 9 was served: over several runs the cursor was a plain step,
    and the row never came again. Each run's count of earlier changes brings it, once, alone."""
    exp = _seeds(tmp_path)
    first = poll(exp, "-1")
    assert [first.steps(r) for r in (S0, S1, S2)] == [list(range(10))] * 3
    write_rows(exp / "seed1" / "metrics.jsonl", [{"step": 6, "eval/acc": 0.125}])
    got = poll(exp, first.cursor)
    assert [(r, s) for r, s, _ in got.rows] == [(S1, 6)] and ".125" in got.rows[0][2], got.text
    assert poll(exp, got.cursor).rows == []


def test_a_row_completed_after_it_was_served_comes_again_whole(tmp_path: Path, poll: Poll) -> None:
    """seed2's last row gained its validation after it was served (cells merged into the cursor's row): it comes
    again, whole, from seed2 alone."""
    exp = _seeds(tmp_path)
    first = poll(exp, "-1")
    write_rows(exp / "seed2" / "metrics.jsonl", [{"step": 9, "val_loss": 0.375}])
    got = poll(exp, first.cursor)
    assert [(r, s) for r, s, _ in got.rows] == [(S2, 9)] and ".375" in got.rows[0][2], got.text
    assert poll(exp, got.cursor).rows == []


def test_a_resume_past_the_cursor_in_one_run_is_told_with_its_rows(tmp_path: Path, poll: Poll) -> None:
    """seed0 restarted from its step-5 checkpoint and passed the cursor (step 9) before the next poll: its rows
    from 5 came as 10.. only, without a word, and the replaced 5..9 stood. Told now, with its rows from 5."""
    exp = _seeds(tmp_path)
    first = poll(exp, "-1")
    _rows(exp / "seed0", range(5, 15), loss=0.75)
    got = poll(exp, first.cursor)
    assert "resumed at step 5, at or before --since 9" in got.text, got.text
    assert got.steps(S0) == list(range(5, 15)) and all(".75" in line for _, _, line in got.rows)
    assert got.steps(S1) == got.steps(S2) == []
    assert poll(exp, got.cursor).rows == []


def test_a_run_that_appears_between_polls_comes_from_its_start(tmp_path: Path, poll: Poll) -> None:
    """seed3 started after the cursor was taken and is at step 12: it came from step 10, its rows 0..9 never
    served."""
    exp = _seeds(tmp_path)
    first = poll(exp, "-1")
    _rows(exp / "seed3", range(13))
    got = poll(exp, first.cursor)
    assert got.steps(S3) == list(range(13)) and [got.steps(r) for r in (S0, S1, S2)] == [[], [], []], got.text
    assert poll(exp, got.cursor).rows == []


def test_runs_at_different_steps_each_get_their_new_rows_once(tmp_path: Path, poll: Poll) -> None:
    """seed0 at step 29, seed1 at 9, seed2 at 19: the cursor was the lowest step, and every poll served seed0's and
    seed2's rows past 9 again. Each run's own step now: a poll serves each row once."""
    exp = _seeds(tmp_path, (30, 10, 20))
    first = poll(exp, "-1")
    for k, end in enumerate((30, 10, 20)):
        _rows(exp / f"seed{k}", range(end, end + 3))
    got = poll(exp, first.cursor)
    assert [got.steps(r) for r in (S0, S1, S2)] == [[30, 31, 32], [10, 11, 12], [20, 21, 22]], got.text
    assert poll(exp, got.cursor).rows == []


def test_a_run_renamed_comes_from_its_start_and_one_gone_leaves_the_cursor(tmp_path: Path, poll: Poll) -> None:
    """A run whose directory was renamed is another run to the cursor (its rows from the start, not a wrong run's
    place); a run removed is left out of the next cursor; the others go on where they were."""
    exp = _seeds(tmp_path)
    first = poll(exp, "-1")
    shutil.move(exp / "seed1", exp / "seed9")
    shutil.rmtree(exp / "seed2")
    _rows(exp / "seed0", range(10, 12))
    got = poll(exp, first.cursor)
    assert got.steps("seed9/metrics.jsonl") == list(range(10)) and got.steps(S0) == [10, 11], got.text
    assert len(got.rows) == 12 and "of 2 runs" in got.text
    assert poll(exp, got.cursor).rows == []


def test_an_alert_in_an_older_row_of_one_of_three_runs_after_a_late_merge_is_told(tmp_path: Path,
                                                                                 poll: Poll) -> None:
    """A NaN reward merged into seed1's step-6 row after the cursor (step 9) was taken (a reward model's scores
    logged late): the alerts poll read it and dropped it as told before, at or before the cursor. The cursor of
    alerts counts each run's changes too."""
    exp = _seeds(tmp_path)
    first = poll(exp, "-1", alerts=True)
    assert first.alerts == []
    write_rows(exp / "seed1" / "metrics.jsonl", [{"step": 6, "reward": math.nan}])
    got = poll(exp, first.cursor, alerts=True)
    assert len(got.alerts) == 1 and "step 6 reward non-finite" in got.alerts[0], got.text
    assert poll(exp, got.cursor, alerts=True).alerts == []


def test_an_alert_of_a_run_that_appears_before_the_others_step_is_told(tmp_path: Path, poll: Poll) -> None:
    """seed3 appeared after the cursor (step 9) with a NaN loss at step 3: told, its alerts checked from its start
    (the cursor's step held it back)."""
    exp = _seeds(tmp_path)
    first = poll(exp, "-1", alerts=True)
    write_rows(exp / "seed3" / "metrics.jsonl", [{"step": s, "arm": ARM, "loss": math.nan if s == 3 else 0.5}
                                                 for s in range(6)])
    got = poll(exp, first.cursor, alerts=True)
    assert len(got.alerts) == 1 and "step 3 loss non-finite" in got.alerts[0], got.text


def test_an_alert_in_the_cursors_row_of_one_run_completed_later_is_told(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """One run alone: its alerts cursor was the plain step, so a NaN merged into the cursor's row after it was
    checked was never told. It carries the row's cells now (STEP:CELLS@KEY)."""
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, [{"step": s, "grad_norm": 0.25} for s in range(10)])
    rc, _, err = run_cli(["tail", str(tmp_path), "--alerts-only", "--since", "-1"], capsys)
    cursor = err.rsplit("cursor ", 1)[1].split()[0]
    assert rc == 0, err
    write_rows(path, [{"step": 9, "loss": math.nan}])
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only", "--since", cursor], capsys)
    assert rc == 1 and "step 9 loss non-finite" in out, (cursor, out, err)
    assert cursor == f"9:2@{short_key('r/metrics.jsonl')}"
