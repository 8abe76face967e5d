"""`steptable tail --since CURSOR` (rows after a cursor, and the next cursor) and `--run NAME`. Cursors of several
runs: tests/cli/test_tail_cursors.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from steptable import StepLogger
from steptable.cli.tailcursor import parse, short_key
from tests.helpers import run_cli, write_rows

ONE = "metrics.jsonl"  # the id of a run whose directory is the path given
R = "r/metrics.jsonl"  # ... of the run in r/ under it


def _steps(out: str) -> list[int]:
    return [int(ln.split()[0]) for ln in out.splitlines() if ln.split() and ln.split()[0].isdigit()]


def _of(at: str, run: str = ONE) -> str:
    """One run's cursor as tail gives it: ``at`` (STEP:CELLS[:EDITS]) and the run's key."""
    return f"{at}@{short_key(run)}"


def _marks(cursor: str, runs: list[str]) -> dict[str, tuple[int, int | None, int | None] | None]:
    """Each of ``runs``' mark in a cursor of several runs: (step, cells, edits), None where it has none."""
    since = parse(cursor)
    assert since.marks is not None, cursor
    return {r: None if (m := since.mark(r, alone=False)) is None else (m.step, m.cells, m.edits) for r in runs}


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": 1 / (s + 1)} for s in range(50)])
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": s, "loss": 1 / (s + 1)} for s in range(0, 40, 2)])
    return tmp_path


def test_since_prints_every_row_after_the_cursor_and_the_next_cursor(two_runs: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(["tail", str(two_runs / "a"), "--since", "17"], capsys)
    assert rc == 0 and _steps(out) == list(range(18, 50))  # all of them: -n 20 is not applied after a cursor
    assert err.endswith(f"steptable tail: cursor {_of('49:2')} (--since it prints what follows)\n")  # (its row)
    rc, out, err = run_cli(["tail", str(two_runs / "a"), "--since", "49"], capsys)
    assert rc == 0 and _steps(out) == [] and "cursor 49" in err  # nothing new: the cursor stays
    rc, out, _ = run_cli(["tail", str(two_runs / "a"), "--since", "17", "-n", "3"], capsys)
    assert _steps(out) == [47, 48, 49]
    rc, out, err = run_cli(["tail", str(two_runs / "a"), "--since", "-5"], capsys)  # before the first step: all
    assert _steps(out) == list(range(50)) and "cursor 49" in err


def test_several_runs_the_cursor_gives_each_run_its_own_step(two_runs: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The cursor of several runs was the lowest step of them (b's 38): a's rows 39-49 came again on every poll, for
    as long as b stayed behind. Each run's step, cells and earlier changes now: the next poll repeats none."""
    rc, out, err = run_cli(["tail", str(two_runs), "--since", "30"], capsys)
    assert rc == 0 and _steps(out) == [*range(31, 50), 32, 34, 36, 38]
    cursor = _cursor(err)
    assert _marks(cursor, ["a/metrics.jsonl", "b/metrics.jsonl"]) == {"a/metrics.jsonl": (49, 2, 0),
                                                                      "b/metrics.jsonl": (38, 2, 0)}
    assert err.endswith(f"cursor {cursor} (of 2 runs; --since it prints what follows)\n"), err
    rc, out, err = run_cli(["tail", str(two_runs), "--since", cursor], capsys)
    assert rc == 0 and _steps(out) == [] and _cursor(err) == cursor


def test_run_picks_one_run_by_id_or_arm_and_a_wrong_name_says_the_runs(two_runs: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(["tail", str(two_runs), "--run", "b/metrics.jsonl", "--since", "33"], capsys)
    assert rc == 0 and _steps(out) == [34, 36, 38] and "cursor 38" in err
    rc, out, err = run_cli(["tail", str(two_runs), "--run", "c"], capsys)
    assert rc == 2 and out == ""
    assert "no run 'c' (runs: a/metrics.jsonl, b/metrics.jsonl)" in err and "cursor" not in err
    rc, out, err = run_cli(["summary", str(two_runs), "--run", "a/metrics.jsonl"], capsys)
    assert rc == 0 and out.startswith("a: steps 0-49") and "\nb: " not in out
    rc, out, err = run_cli(["summary", str(two_runs), "--run", "zz"], capsys)
    assert rc == 2 and "no run 'zz'" in err


def test_alerts_since_tells_only_later_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"step": s, "loss": math.nan if s in (10, 30) else 0.5, "grad_norm": 0.4} for s in range(40)]
    write_rows(tmp_path / "metrics.jsonl", rows)
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 1
    all_lines = out.splitlines()
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only", "--since", "20"], capsys)
    later = out.splitlines()
    assert later and set(later) < set(all_lines)  # the history is still read: the same alert lines, fewer
    assert any("step 10 " in ln for ln in all_lines) and not any("step 10 " in ln for ln in later)
    assert rc == 1 and "cursor 39" in err
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only", "--since", "30"], capsys)
    assert rc == 0 and out == ""  # the error alerts were at or before the cursor


def test_a_run_resumed_behind_the_cursor_prints_its_rows_from_the_resume(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The cursor was taken at step 10; the run then restarted from its step-6 checkpoint and is at step 8: its new
    rows 6-8 are printed under a note saying so, and the cursor is its last step (not 10, past which they would wait
    unseen until the run passed step 10 again). A resume the cursor is already past is not told again."""
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": s, "loss": 1.0 - s / 100} for s in range(11)])
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": s, "loss": 2.0 + s / 100} for s in range(6, 9)])
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", "10"], capsys)
    assert rc == 0 and _steps(out) == [6, 7, 8] and "2.08" in out
    assert "r: resumed at step 6, its rows end at 8, before --since 10" in out and _cursor(err) == _of("8:2:1", R)
    for cursor in ("8:2:1", _of("8:2:1", R)):  # (as given before runs were named, and now)
        rc, out, err = run_cli(["tail", str(tmp_path), "--since", cursor], capsys)
        assert rc == 0 and _steps(out) == [] and "resumed" not in out and _cursor(err) == _of("8:2:1", R)
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", "10", "--format", "jsonl"], capsys)
    assert [json.loads(ln)["step"] for ln in out.splitlines()] == [6, 7, 8] and "resumed at step 6" in err
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": s, "loss": 2.0} for s in range(9, 21)])
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", "20"], capsys)
    assert rc == 0 and out == "" and _cursor(err) == _of("20:2:1", R)


def test_a_run_that_ended_holds_the_cursor_back_no_longer(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Arm a crashed at step 5 (its logger closed on the exception); arm b goes on to step 11. Each run keeps its own
    step in the cursor: at a's, every call would print b's rows and alerts past it again, for as long as b runs."""
    runs = ["a/metrics.jsonl", "b/metrics.jsonl"]
    with pytest.raises(RuntimeError), StepLogger(run_dir=tmp_path / "a", console=False, alerts=False) as lg:
        for s in range(6):
            lg.log({"step": s, "loss": 0.5})
        raise RuntimeError("out of memory")
    lg = StepLogger(run_dir=tmp_path / "b", console=False, alerts=False)
    try:
        for s in range(12):
            lg.log({"step": s, "loss": math.nan if s == 9 else 0.5})
        rc, out, err = run_cli(["tail", str(tmp_path), "--since", "5"], capsys)
        assert _steps(out) == [6, 7, 8, 9, 10, 11], (out, err)
        assert [m and m[0] for m in _marks(_cursor(err), runs).values()] == [5, 11]
        rc, out, err = run_cli(["tail", str(tmp_path), "--since", _cursor(err)], capsys)
        assert _steps(out) == []  # (b's rows: told once)
        rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only", "--since", "5"], capsys)
        assert rc == 1 and "step 9 loss non-finite" in out
        rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only", "--since", _cursor(err)], capsys)
        assert "step 9 " not in out and [m and m[0] for m in _marks(_cursor(err), runs).values()] == [5, 11]
    finally:
        lg.close()
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", "11"], capsys)  # both ended: each its own step
    assert _steps(out) == [] and [m and m[0] for m in _marks(_cursor(err), runs).values()] == [11, 11]


def test_page_prints_the_earliest_rows_after_the_cursor_and_where_the_next_page_starts(
        two_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--since 10 --page 5``: 5 rows, each run's share of them the earliest after step 10 (a: 11-13, b: 12-14 by
    twos; it was 5 a run: an arm of 40 seeds paged 4,000 rows), how many are left, and a cursor from which the next
    page misses none of them."""
    rc, out, err = run_cli(["tail", str(two_runs), "--since", "10", "--page", "5"], capsys)
    assert rc == 0 and _steps(out) == [11, 12, 13, 12, 14]
    assert "36 more row(s) of a/metrics.jsonl after step 13" in err
    assert "12 more row(s) of b/metrics.jsonl after step 14" in err
    got = _marks(_cursor(err), ["a/metrics.jsonl", "b/metrics.jsonl"])
    assert [m and m[0] for m in got.values()] == [13, 14]  # (where each run's next page starts)
    rc, out, err = run_cli(["tail", str(two_runs), "--since", "10", "--page", "1"], capsys)
    assert _steps(out) == [11, 12]  # (fewer rows than runs: one each, so that every run moves on)
    seen: list[int] = []
    cursor = "10"
    for _ in range(20):
        rc, out, err = run_cli(["tail", str(two_runs / "a"), "--since", cursor, "--page", "7"], capsys)
        seen += _steps(out)
        cursor = _cursor(err)
        if not _steps(out):
            break
    assert seen == list(range(11, 50))  # page by page: every row once
    for argv in (["--page", "5"], ["--page", "5", "--since", "3", "-f"]):  # (pages are of rows after a cursor)
        rc, out, err = run_cli(["tail", str(two_runs), *argv], capsys)
        assert rc == 2 and out == "" and "--page needs --since" in err


def test_page_of_the_last_rows_prints_their_earliest_and_the_cursor_where_the_rest_start(
        two_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``-n 30 --page 10``: the earliest 10 of the last 30 rows, how many are left and the cursor to page on from
    (--page was refused without --since, so the MCP tool's ``last`` came whole: last=0 of a 100k-step run, 20 MB)."""
    rc, out, err = run_cli(["tail", str(two_runs / "a"), "-n", "30", "--page", "10"], capsys)
    assert rc == 0 and _steps(out) == list(range(20, 30)), err
    assert "20 more row(s) of metrics.jsonl after step 29" in err
    assert err.endswith(f"steptable tail: cursor {_of('29:2')} (--since it prints what follows)\n")
    rc, out, err = run_cli(["tail", str(two_runs / "a"), "--since", _of("29:2"), "--page", "10"], capsys)
    assert _steps(out) == list(range(30, 40))  # the next page: none lost, none twice
    rc, out, err = run_cli(["tail", str(two_runs / "a"), "-n", "0", "--page", "5"], capsys)
    assert _steps(out) == list(range(5)) and "45 more row(s)" in err


def test_a_wrong_run_name_in_a_sweep_names_the_closest_or_the_first_few(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """30 runs: the error named all 30 (200 runs: 7,318 characters to an agent); now the names closest to the one
    given, else the first ten and how many more."""
    for i in range(30):
        write_rows(tmp_path / f"lr1e-5_seed{i}" / "metrics.jsonl", [{"step": s, "loss": 0.5} for s in range(3)])
    for cmd in ("tail", "summary"):
        rc, _, err = run_cli([cmd, str(tmp_path), "--run", "lr1e-5_seed77"], capsys)
        assert rc == 2 and err.startswith(f"steptable {cmd}: no run 'lr1e-5_seed77' (closest: lr1e-5_seed7"), err
        assert err.endswith("; 30 runs (steptable runs lists them))\n") and err.count("seed") == 4, err
        rc, _, err = run_cli([cmd, str(tmp_path), "--run", "zz"], capsys)
        assert rc == 2 and err.count("/metrics.jsonl") == 10 and err.endswith(" and 20 more (steptable runs lists"
                                                                               " them))\n"), err


def test_a_cursor_past_every_runs_last_step_says_so(two_runs: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """An agent polling with a cursor from another run (or a typo) waited for rows that would never come: the line
    says the runs' last step, and whether they have all ended (StepLogger closed them)."""
    rc, out, err = run_cli(["tail", str(two_runs), "--since", "100000"], capsys)
    assert rc == 0 and _steps(out) == []
    assert err.endswith("(of 2 runs; --since it prints what follows; no run has a step past 49)\n"), err
    rc, _, err = run_cli(["tail", str(two_runs), "--since", "49"], capsys)  # at the end, not past it
    assert err.endswith("(of 2 runs; --since it prints what follows)\n"), err
    with StepLogger(run_dir=tmp_path / "done", console=False, alerts=False) as sl:
        for s in range(5):
            sl.log({"step": s, "loss": 1.0})
    rc, _, err = run_cli(["tail", str(tmp_path / "done"), "--since", "9"], capsys)
    assert err.endswith("cursor 9 (--since it prints what follows; no run has a step past 4, and every run has "
                        "ended)\n"), err


def test_alerts_since_with_a_run_not_started_give_the_others_alerts_and_a_cursor(
        two_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run with no row yet (its trainer loading a model) keeps the status 2 of a check of nothing, but the alerts
    of the others and the cursor come all the same (an agent's poll got no cursor); a cursor past a mistyped
    --columns' rows is still not given."""
    write_rows(two_runs / "c" / "metrics.jsonl", [])
    write_rows(two_runs / "d" / "metrics.jsonl", [{"step": s, "loss": math.nan if s == 15 else 0.5} for s in range(30)])
    rc, out, err = run_cli(["tail", str(two_runs), "--alerts-only", "--since", "10"], capsys)
    assert any(ln.startswith("E ") and "step 15 loss" in ln for ln in out.splitlines()), out
    assert rc == 2 and "no rows yet in" in err and "c/metrics.jsonl: nothing checked there" in err
    cursor = _cursor(err)
    assert err.endswith(f"steptable tail: cursor {cursor} (of 4 runs; --since it prints what follows)\n")
    assert _marks(cursor, ["c/metrics.jsonl", "d/metrics.jsonl"]) == {"c/metrics.jsonl": (10, 0, 0),
                                                                      "d/metrics.jsonl": (29, 2, 0)}
    rc, _, err = run_cli(["tail", str(two_runs / "a"), "--since", "10", "--columns", "nosuchkey"], capsys)
    assert rc == 2 and "cursor" not in err


def _cursor(err: str) -> str:
    return err.rsplit("steptable tail: cursor ", 1)[1].split()[0]


def test_cells_merged_into_the_cursors_row_come_with_the_next_poll(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A validation logged after its step's training row (merged into that row) came after the row was served: a
    poll from cursor 9 never returned it. The cursor of a run still going carries the cells its row held
    (``9:2``): the row comes again, whole, once it holds more; then the cursor moves on and the next poll is empty
    (a reader paging until nothing is new stops). A plain step still means every cell at it was seen."""
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1 / (s + 1)} for s in range(10)])
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", "5"], capsys)
    assert rc == 0 and _steps(out) == [6, 7, 8, 9] and _cursor(err) == _of("9:2", R), err
    assert err.endswith(f"cursor {_of('9:2', R)} (--since it prints what follows)\n")
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", _of("9:2", R)], capsys)
    assert _steps(out) == [] and _cursor(err) == _of("9:2", R)
    write_rows(path, [{"step": 9, "val_loss": 0.25}])
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", "9:2"], capsys)  # (as given before runs were named)
    assert rc == 0 and _steps(out) == [9] and "val_loss" in out and ".25" in out and _cursor(err) == _of("9:3", R)
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", _of("9:3", R), "--format", "jsonl"], capsys)
    assert out == "" and _cursor(err) == _of("9:3", R)
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", "9"], capsys)
    assert _steps(out) == [] and _cursor(err) == _of("9:3", R)
    write_rows(path, [{"step": 9, "val_acc": 0.5}, {"step": 10, "loss": 0.1}])
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", _of("9:3", R), "--format", "jsonl"], capsys)
    got = [json.loads(ln) for ln in out.splitlines()]
    assert [r["step"] for r in got] == [9, 10] and got[0]["val_acc"] == 0.5 and _cursor(err) == _of("10:2", R)


def test_a_tensorboard_evaluation_after_its_steps_training_scalars_is_not_lost(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """HF's Trainer writes eval/* to TensorBoard after the train/* scalars of the same step: an agent polling in
    between got the step's training row and, from the next cursor on, never its evaluation. Written with torch's
    SummaryWriter, read as it grows."""
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path / "run"))
    try:
        for s in range(1, 6):
            w.add_scalar("train/loss", 1 / s, s)
            w.add_scalar("train/learning_rate", 1e-5, s)
        w.flush()
        rc, out, err = run_cli(["tail", str(tmp_path), "--since", "0"], capsys)
        assert rc == 0 and _steps(out) == [1, 2, 3, 4, 5], out
        cursor = _cursor(err)
        assert cursor.startswith("5:") and cursor.endswith(f"@{short_key('run')}"), err
        w.add_scalar("eval/loss", 0.75, 5)
        w.flush()
        rc, out, err = run_cli(["tail", str(tmp_path), "--since", cursor, "--format", "jsonl"], capsys)
        got = [json.loads(ln) for ln in out.splitlines()]
        assert [r["step"] for r in got] == [5] and got[0]["eval/loss"] == 0.75, out
        assert _cursor(err) == f"5:{int(cursor[2:].split('@')[0]) + 1}@{short_key('run')}"
    finally:
        w.close()


def test_an_ended_runs_cursor_counts_its_row_too_and_several_runs_each_theirs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that ended alone still gets STEP:CELLS (a training that crashed is resumed by a new process: the resume
    is told from its cursor, test_a_resume_that_passed_the_cursor_is_told_whenever_the_agent_polls); over several
    runs each run's (it was the plain step: one count cannot stand for several rows)."""
    with StepLogger(run_dir=tmp_path / "done", console=False, alerts=False) as sl:
        for s in range(5):
            sl.log({"step": s, "loss": 1.0})
    rc, _, err = run_cli(["tail", str(tmp_path / "done"), "--since", "1"], capsys)
    assert rc == 0 and _cursor(err) == _of("4:3")  # (step, loss and the time StepLogger writes)
    write_rows(tmp_path / "live" / "metrics.jsonl", [{"step": s, "loss": 0.5} for s in range(3)])
    rc, _, err = run_cli(["tail", str(tmp_path), "--since", "1"], capsys)
    assert rc == 0 and _marks(_cursor(err), ["done/metrics.jsonl", "live/metrics.jsonl"]) == {
        "done/metrics.jsonl": (4, 3, 0), "live/metrics.jsonl": (2, 2, 0)}


@pytest.mark.parametrize("bad", ["9:x", "9:-1", "x", "9:", ":2", "9:2:", "9::1", "9:2:-1", "9:2:1:1"])
def test_a_cursor_that_is_not_one_is_a_usage_error(two_runs: Path, capsys: pytest.CaptureFixture[str],
                                                   bad: str) -> None:
    with pytest.raises(SystemExit) as e:
        run_cli(["tail", str(two_runs / "a"), f"--since={bad}"], capsys)
    assert e.value.code == 2 and "not a cursor (STEP, STEP:CELLS or STEP:CELLS:EDITS)" in capsys.readouterr().err


def test_the_cursors_cells_are_counted_whatever_columns_are_asked_for(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """--columns reads only the values of the keys it shows: the cells were counted over those, so a cursor taken
    with other columns (an agent changing them between polls) missed a merged evaluation or repeated a row."""
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 0.5, "grad_norm": 0.25} for s in range(10)])
    _, _, err = run_cli(["tail", str(tmp_path), "--since", "5"], capsys)
    whole = _cursor(err)
    _, _, err = run_cli(["tail", str(tmp_path), "--since", "5", "--columns", "loss"], capsys)
    assert _cursor(err) == whole  # (the same row, the same count)
    _, out, err = run_cli(["tail", str(tmp_path), "--since", whole, "--columns", "loss"], capsys)
    assert _steps(out) == [] and _cursor(err) == whole  # nothing merged: nothing again
    write_rows(path, [{"step": 9, "val_loss": 0.125}])
    _, out, err = run_cli(["tail", str(tmp_path), "--since", whole, "--columns", "loss,val*"], capsys)
    assert _steps(out) == [9] and ".125" in out and _cursor(err) != whole


def test_a_cursors_cells_bring_back_no_row_of_another_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that appeared after a one-run cursor was taken: its row at the cursor's step is not printed for having
    more cells than the cursor's run had (the count is of that run's row alone). The cursor names its run now: the
    new run comes from its start (it came from the cursor's step: its rows before were never served)."""
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": 0.5} for s in range(10)])
    _, _, err = run_cli(["tail", str(tmp_path), "--since", "5"], capsys)
    assert _cursor(err) == _of("9:2", "a/metrics.jsonl")
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": s, "loss": 0.5, "kl": 0.1, "lr": 0.01} for s in range(10)])
    _, out, err = run_cli(["tail", str(tmp_path), "--since", "9:2"], capsys)  # (as given before runs were named)
    assert _steps(out) == [], (out, err)
    _, out, err = run_cli(["tail", str(tmp_path), "--since", _of("9:2", "a/metrics.jsonl")], capsys)
    assert _steps(out) == list(range(10)) and "a/metrics.jsonl" not in out, (out, err)  # (b's rows, all of them)
    assert [m and m[:2] for m in _marks(_cursor(err), ["a/metrics.jsonl", "b/metrics.jsonl"]).values()] == [
        (9, 2), (9, 4)]


def _jsonl(out: str) -> list[dict[str, object]]:
    return [json.loads(ln) for ln in out.splitlines()]


def test_an_evaluation_merged_into_an_older_row_comes_with_the_next_poll(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Each evaluation lands two steps late (tinker's asynchronous evaluation, merged into its own step's row): an
    agent polling after every row got each eval's row before the eval and never again. The cursor counts the run's
    changes to rows before its last: a row changed since comes again, once, in its new form."""
    path = tmp_path / "lag" / "metrics.jsonl"
    cursor, served = "-1", []
    for s in range(12):
        write_rows(path, [{"step": s, "loss": 1 - s / 100}])
        if s >= 2 and s % 3 == 2:
            write_rows(path, [{"step": s - 2, "eval/acc": 500 + s - 2}])
        rc, out, err = run_cli(["tail", str(tmp_path), "--since", cursor, "--format", "jsonl"], capsys)
        assert rc == 0, err
        served += _jsonl(out)
        cursor = _cursor(err)
    assert cursor == _of("11:2:4", "lag/metrics.jsonl")  # (four evaluations merged into rows before the last)
    evals = [(r["step"], r["eval/acc"]) for r in served if "eval/acc" in r]
    assert evals == [(0, 500), (3, 503), (6, 506), (9, 509)]  # each once, as a one-shot tail has them
    assert [r["step"] for r in served if "eval/acc" not in r] == list(range(12))
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", cursor], capsys)
    assert out == "" and _cursor(err) == cursor


def test_a_resume_that_passed_the_cursor_is_told_whenever_the_agent_polls(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """After cursor 20 the run resumed at step 15 and wrote 15..25: polled after it had passed 20, only 21..25 came,
    without a word, and the agent kept the replaced 15..20. From the cursor's count of changes the resume is told and
    its rows come from step 15, page by page, as when the agent polls before the run passes 20."""
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1 + s / 100} for s in range(21)])
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", "-1"], capsys)
    cursor = _cursor(err)
    assert cursor == _of("20:2", R)
    write_rows(path, [{"step": s, "loss": 9 + s / 100} for s in range(15, 26)])
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", cursor], capsys)
    assert rc == 0 and "── r: resumed at step 15, at or before --since 20 ──" in out
    assert _steps(out) == list(range(15, 26)) and "9.15" in out and _cursor(err) == _of("25:2:1", R)
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", cursor, "--format", "jsonl"], capsys)
    assert [r["loss"] for r in _jsonl(out)][:2] == [9.15, 9.16] and "r: resumed at step 15" in err  # (not in-band)
    seen, notes = [], 0
    for _ in range(10):  # a page at a time: the note once, every row once
        rc, out, err = run_cli(["tail", str(tmp_path), "--since", cursor, "--page", "4"], capsys)
        seen += _steps(out)
        notes += out.count("resumed at step 15")
        cursor = _cursor(err)
        if not _steps(out):
            break
    assert seen == list(range(15, 26)) and notes == 1 and cursor == _of("25:2:1", R)


def test_a_crashed_run_resumed_by_a_new_process_is_told_from_its_ended_cursor(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run crashed at step 10 (its logger closed on the exception: ended); a new process resumed it from its
    step-6 checkpoint and passed step 10 before the agent polled again."""
    with pytest.raises(RuntimeError), StepLogger(run_dir=tmp_path / "r", console=False, alerts=False) as lg:
        for s in range(11):
            lg.log({"step": s, "loss": 1.0 + s / 100})
        raise RuntimeError("out of memory")
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", "5"], capsys)
    assert "ended with RuntimeError" in out
    cursor = _cursor(err)
    with StepLogger(run_dir=tmp_path / "r", console=False, alerts=False) as lg:
        for s in range(6, 14):
            lg.log({"step": s, "loss": 2.0 + s / 100})
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", cursor], capsys)
    assert rc == 0 and "resumed at step 6, at or before --since 10" in out and _steps(out) == list(range(6, 14))


def test_more_changed_rows_than_a_page_holds_come_from_the_first_of_them(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Evaluations of six rows before the cursor landed since it was taken: a page of 3 cannot hold them all, so the
    rows come from the first changed one on, a page at a time, each once."""
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 0.5} for s in range(10)])
    _, _, err = run_cli(["tail", str(tmp_path), "--since", "-1"], capsys)
    cursor = _cursor(err)
    write_rows(path, [*({"step": s, "eval/acc": s / 10} for s in range(6)), {"step": 10, "loss": 0.5}])
    rc, out, err = run_cli(["tail", str(tmp_path), "--since", cursor, "--page", "3"], capsys)
    assert rc == 0 and _steps(out) == [0, 1, 2]
    assert "r: rows at or before --since 9 changed since: its rows from step 0" in out
    seen = _steps(out)
    for _ in range(10):
        cursor = _cursor(err)
        _, out, err = run_cli(["tail", str(tmp_path), "--since", cursor, "--page", "3"], capsys)
        if not _steps(out):
            break
        seen += _steps(out)
    assert seen == list(range(11)) and "changed since" not in out
