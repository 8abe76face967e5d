"""Stalls (AlertEngine.check_stall and the clockless check): a run with no new row for many of its usual
intervals, measured against its own rhythm (pauses it keeps making, restarts), also for runs whose rows carry no
clock."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

from steptable.alerts.engine import AlertConfig, AlertEngine, clockless_gap
from steptable.alerts.history import feed_store, scan
from steptable.alerts.replaced import read_replaced
from steptable.ingest import Follower, RunStore
from tests.alerts.helpers import clocked_rows, kinds
from tests.helpers import grpo_row, store_of, write_rows


def test_stall_fires_once_and_rearms_on_next_row() -> None:
    eng = AlertEngine()
    for i in range(10):
        assert eng.update(i, {"loss": 1.0}, 1000.0 + 2 * i) == []
    last = 1018.0
    assert eng.check_stall(last + 59) == []  # 10 x 2 s is less than the 60 s floor
    got = eng.check_stall(last + 150)
    assert kinds(got) == [("W", 9, "", "stall")]
    assert got[0].line() == "W step 9 stalled: no row for 2.5m (75x median 2s/row)"
    assert eng.check_stall(last + 500) == []
    eng.update(10, {"loss": 1.0}, last + 600)
    assert len(eng.check_stall(last + 800)) == 1


def test_stall_needs_history_and_wall_times() -> None:
    eng = AlertEngine()
    assert eng.check_stall(1e9) == []
    for i in range(3):
        eng.update(i, {}, 100.0 + i)
    assert eng.check_stall(1e9) == []  # only 2 intervals
    eng2 = AlertEngine()
    for i in range(20):
        eng2.update(i, {}, None)
    assert eng2.check_stall(1e9) == []


def test_a_pause_the_run_keeps_making_is_its_rhythm_not_a_stall() -> None:
    """An evaluation of 90 s every 50 steps (rows 5 s apart): said at its first two pauses, not at every one; a
    pause far longer than those still is."""
    eng = AlertEngine()
    t, got = 1000.0, []
    for step in range(400):
        t += 5 + (90 if step and step % 50 == 0 else 0) + (900 if step == 325 else 0)
        got += eng.check_stall(t)
        got += eng.update(step, {"loss": 1.0}, t)
    assert [a.step for a in got if a.kind == "stall"] == [49, 99, 324]


def test_a_stall_far_past_the_median_is_said_in_the_compact_number_format() -> None:
    # a run found again after days: the ratio is not printed whole (95694940x), eight digits nobody reads
    eng = AlertEngine()
    for i in range(30):
        eng.update(i, {"loss": 1.0}, float(i))
    (alert,) = eng.check_stall(29.0 + 95_694_940)
    assert "(9.57e7x median 1s/row)" in alert.line()


def test_a_short_window_does_not_switch_the_stall_test_off() -> None:
    # AlertConfig(window=3) keeps 3 values for the spike tests; the stall test still needs its 5 row intervals
    eng = AlertEngine(AlertConfig(window=3))
    for s in range(10):
        eng.update(s, {"loss": 1.0}, wall_time=1000.0 + 10 * s)
    stalled = [a.line() for a in eng.check_stall(1090.0 + 3600)]
    assert stalled == ["W step 9 stalled: no row for 60m (360x median 10s/row)"]


def _walls(rng: random.Random, n: int, t0: float = 1_700_000_000.0, every: float = 10.0) -> list[float]:
    out = [t0]
    for _ in range(n - 1):
        out.append(out[-1] + every + rng.uniform(-1, 1))
    return out


def test_the_stall_check_starts_at_stall_min_rows_intervals() -> None:
    # five row intervals (stall_min_rows) are enough to know the run's pace: a pause of 10 minutes after them is a
    # stall, and the engine says it can judge stalls itself from then on (a reader then skips the file-age check)
    rng = random.Random(7)
    eng = AlertEngine()
    walls = _walls(rng, 6)
    for i, t in enumerate(walls[:5]):
        eng.update(i, grpo_row(rng, i), t)
    assert not eng.times_rows() and eng.check_stall(walls[4] + 600) == []  # four intervals: too few
    eng.update(5, grpo_row(rng, 5), walls[5])
    assert eng.times_rows()
    (a,) = eng.check_stall(walls[5] + 600)
    assert (a.level, a.step, a.kind) == ("W", 5, "stall") and a.message.startswith("stalled: no row for 10m (")


def test_a_pause_right_after_the_first_intervals_counts_towards_the_runs_rhythm() -> None:
    # an evaluation of 10 minutes at step 6, 30 and 54 of a run of 10 s steps: the first two pauses are said, the
    # third is the run's rhythm (two earlier pauses at least two thirds as long), also when the first one came at
    # the very first row the stall check could judge
    rng = random.Random(8)
    walls, t = [], 1_700_000_000.0
    for i in range(70):
        t += 600.0 if i in (6, 30, 54) else 10.0 + rng.uniform(-1, 1)
        walls.append(t)
    steps = list(range(70))
    rows = [grpo_row(rng, s) for s in steps]
    cols = {k: [r[k] for r in rows] for k in ("loss", "grad_norm", "reward")}
    found = [(a.level, a.step, a.kind) for a in scan(steps, cols, walls)]
    assert found == [("W", 5, "stall"), ("W", 29, "stall")]


def test_a_gap_of_exactly_the_stall_threshold_is_not_yet_a_stall() -> None:
    # the threshold is 10x the median interval (100 s here): past it is a stall, at it not (as the pauses the run
    # came back from are counted: the two tests must agree on one gap)
    eng = AlertEngine()
    for i in range(6):
        eng.update(i, {"loss": 0.5 - 0.01 * i}, 1000.0 + 10.0 * i)
    assert eng.check_stall(1050.0 + 100.0) == []
    assert [a.kind for a in eng.check_stall(1050.0 + 100.5)] == ["stall"]


def test_a_one_row_window_judges_the_pace_by_the_last_interval() -> None:
    # AlertConfig(window=1): the median row interval is the last one alone, not the last two
    eng = AlertEngine(AlertConfig(window=1, stall_min_rows=1, stall_min_s=0.0))
    for i, t in enumerate((0.0, 100.0, 101.0)):  # intervals 100 s then 1 s: the pace is now 1 s a row
        eng.update(i, {"loss": 0.5}, t)
    assert [a.kind for a in eng.check_stall(101.0 + 20.0)] == ["stall"]


def test_restarts_after_crashes_are_not_the_runs_rhythm(tmp_path: Path) -> None:
    # a run restarted twice, each after two hours in the queue: those gaps are restarts, not pauses the run came back
    # from, so an hour without rows afterwards is still a stall
    rng, t0 = random.Random(24), 1_700_000_000.0
    rows = clocked_rows(rng, range(600), t0) + clocked_rows(rng, range(500, 560), t0 + 13_000) \
        + clocked_rows(rng, range(540, 700), t0 + 20_000)
    store = store_of(tmp_path / "r" / "metrics.jsonl", rows)
    assert store.resumes == [500, 540]
    eng = AlertEngine()
    with store.lock:
        assert feed_store(eng, store, 0, len(store), set(store.resumes), stalls=True) == []
        last = store.wall_times_between(len(store) - 1)[0]
    assert [a.kind for a in eng.check_stall(last + 3600)] == ["stall"]


_MTIME = 1_700_000_000  # the file's last write, whole seconds (exact as a float)


def _clockless(path: Path, rows: list[dict[str, Any]]) -> RunStore:
    write_rows(path, rows)
    os.utime(path, (_MTIME, _MTIME))
    f = Follower([path.parent], on_resume=read_replaced)
    f.scan()
    (store,) = f.stores.values()
    assert store.last_update == _MTIME and not store.has_clock
    return store


def _verl(rng: random.Random, step: int, step_s: float | None) -> dict[str, Any]:
    row = {"step": step, "actor/pg_loss": rng.gauss(0, 0.1), "critic/score/mean": 0.5 + rng.gauss(0, 0.05)}
    return row if step_s is None else {**row, "timing_s/step": step_s}


def _gaps(store: RunStore, *seconds: float) -> list[bool]:
    return [clockless_gap(store, _MTIME + s) is not None for s in seconds]


def test_a_short_clockless_run_is_judged_by_all_its_step_times(tmp_path: Path) -> None:
    # 30 steps of ~72 s (fewer than a window): an hour without a write is a stall, 10 minutes is a step under way
    rng = random.Random(31)
    store = _clockless(tmp_path / "v" / "exp.jsonl", [_verl(rng, s, 72 + rng.gauss(0, 2)) for s in range(1, 31)])
    assert _gaps(store, 600, 3600) == [False, True]


def test_rows_without_a_step_time_do_not_blind_the_clockless_check(tmp_path: Path) -> None:
    # eval rows between the train rows carry no step time (the store pads them with NaN): the pace is the train
    # rows' own, and an hour without a write is still a stall
    rng = random.Random(32)
    rows = [_verl(rng, s, 72 + rng.gauss(0, 2) if s % 2 == 0 else None) for s in range(1, 101)]
    store = _clockless(tmp_path / "v" / "exp.jsonl", rows)
    assert _gaps(store, 600, 3600) == [False, True]


def test_a_run_whose_last_progress_says_done_is_not_stalled_behind_an_eval_row(tmp_path: Path) -> None:
    # tinker's supervised loop: progress reaches 1 at step 100, then a final eval row (step 101) holds no progress
    rows: list[dict[str, Any]] = [{"step": s, "train_mean_nll": 1.0 / s, "time/total": 30.0, "progress": s / 100}
                                  for s in range(1, 101)]
    rows.append({"step": 101, "test/nll": 0.5})
    store = _clockless(tmp_path / "sl" / "metrics.jsonl", rows)
    assert _gaps(store, 3 * 3600) == [False]


def test_a_clockless_stall_waits_for_twice_the_longest_recent_step(tmp_path: Path) -> None:
    # 60 s steps with a 1,300 s validation + checkpoint every 50th: 30 minutes into a step may be the next one of
    # those, 50 minutes is past twice the longest
    rows = [_verl(random.Random(s), s, 1300.0 if s % 50 == 0 else 60.0) for s in range(1, 121)]
    store = _clockless(tmp_path / "v" / "exp.jsonl", rows)
    assert _gaps(store, 1800, 3000) == [False, True]


def test_a_clockless_gap_of_exactly_the_threshold_is_not_yet_a_stall(tmp_path: Path) -> None:
    # steps of exactly 72 s: the threshold is 720 s; at it not a stall (as the engine's own check), past it one
    rows = [_verl(random.Random(s), s, 72.0) for s in range(1, 41)]
    store = _clockless(tmp_path / "v" / "exp.jsonl", rows)
    assert _gaps(store, 720, 720.5) == [False, True]
    assert clockless_gap(store, _MTIME + 720.5) == (720.5, 72.0, "timing_s/step", 40)
