"""A run whose rows carry no clock (verl's file logger, tinker, a console log) that has not written its file for
many of its own step times is said to have stalled, by summary and by the app opened after the hang."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import age, run_cli, write_rows
from tests.trainer_logs import write_clockless_verl


def test_a_verl_run_left_for_hours_is_stalled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """summary said "upd 3h ago, alerts 0" of a verl run whose steps take 72 s: a run with a row clock of the same
    age read "stalled"."""
    path = write_clockless_verl(tmp_path / "v" / "exp.jsonl")
    age(path, 3 * 3600)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "W step 200 stalled: file untouched for 3h (" in out and "timing_s/step; or it ended)" in out
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and out.count("stalled: file untouched for 3h (") == 1, out
    age(path, 5 * 60)  # four step times: a step under way
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert "stalled" not in out and "alerts 0" in out, out
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and out == "", out


@pytest.mark.parametrize("case", ["done", "supervised_done", "eval_row_last", "clockless_no_step_time",
                                  "trainer_state", "long_steps"])
def test_no_stall_where_the_run_says_it_finished_or_nothing_tells_its_pace(tmp_path: Path, case: str,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rows: list[dict[str, Any]]
    if case == "done":  # tinker's last row says the run is done
        rows = [{"step": s, "env/all/reward/total": 0.5, "time/total": 60.0, "progress/done_frac": s / 100}
                for s in range(1, 101)]
        path = tmp_path / "t" / "metrics.jsonl"
        write_rows(path, rows)
    elif case in ("supervised_done", "eval_row_last"):  # tinker's supervised loop logs "progress"; an eval row last
        rows = [{"step": s, "train_mean_nll": 1.0 / s, "time/total": 30.0, "progress": s / 100} for s in range(1, 101)]
        if case == "eval_row_last":
            rows.append({"step": 100, "test/nll": 0.5})
        path = tmp_path / "sl" / "metrics.jsonl"
        write_rows(path, rows)
    elif case == "long_steps":  # validation and a checkpoint every 50th step: 1,300 s; 15 minutes into one
        path = tmp_path / "v" / "exp.jsonl"
        write_rows(path, [{"step": s, "data": {"actor/pg_loss": 0.1 * (s % 3), "timing_s/step":
                                               1300.0 if s % 50 == 0 else 60.0}} for s in range(1, 200)])
        age(path, 15 * 60)
        rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
        assert rc == 0 and "stalled" not in out, (out, err)
        return
    elif case == "clockless_no_step_time":
        path = tmp_path / "g" / "metrics.jsonl"
        write_rows(path, [{"step": s, "loss": 0.5} for s in range(100)])
    else:  # written at checkpoints only: its age says nothing of the run's
        path = tmp_path / "checkpoint-100" / "trainer_state.json"
        path.parent.mkdir()
        path.write_text('{"global_step": 100, "log_history": ['
                        + ",".join(f'{{"step": {s}, "loss": 0.5, "step_time": 60.0}}' for s in range(1, 101)) + "]}")
    age(path, 3 * 3600)
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "stalled" not in out, (out, err)


def test_tail_f_says_a_hang_once(tmp_path: Path) -> None:
    """tail -f that saw a run's rows arrive checks stalls by their arrival: the file's age said the same hang a
    second time ("no row for 64s" and "file untouched for 64s")."""
    from steptable.alerts.engine import AlertEngine
    from tests.cli.helpers import Live

    path = write_clockless_verl(tmp_path / "v" / "exp.jsonl", step_s=1.0)
    age(path, 120)
    live = Live(tmp_path, ["--alerts-only"])
    live.step()
    (run,) = live.follower.stores
    now = time.time()
    eng = AlertEngine()  # what the live engine looks like after rows arrived a second apart
    for i in range(20):
        eng.update(i, {"loss": 0.1}, now - 120 - 20 + i)
    live.tail.engines[run] = eng
    live.tail.check_stalls(now, list(live.follower.stores.values()))
    assert live.out.getvalue().count("stalled") == 1 and "no row for" in live.out.getvalue()
    live.tail.engines[run] = AlertEngine()  # rows read at once (one-shot): the file's age is all there is
    live.tail.check_stalls(now, list(live.follower.stores.values()))
    assert live.out.getvalue().count("file untouched for") == 1
