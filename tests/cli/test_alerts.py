"""Alerts end to end (``tail --alerts-only``, summary's alert block): the exit status, the lines each run's alerts
make (merged non-finite lines, runs that share an arm's name), stalls still going on, and runs that never got a row."""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.engine import AlertEngine
from tests.alerts.helpers import diverged
from tests.helpers import age, run_cli, write, write_rows
from tests.library_logs import write_trainer_state, write_verl_rows


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
        write_verl_rows(path, [(s, {"actor/pg_loss": 0.1 * (s % 3), "timing_s/step": 1300.0 if s % 50 == 0 else 60.0})
                               for s in range(1, 200)])
        age(path, 15 * 60)
        rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
        assert rc == 0 and "stalled" not in out, (out, err)
        return
    elif case == "clockless_no_step_time":
        path = tmp_path / "g" / "metrics.jsonl"
        write_rows(path, [{"step": s, "loss": 0.5} for s in range(100)])
    else:  # written at checkpoints only: its age says nothing of the run's
        path = write_trainer_state(tmp_path / "checkpoint-100" / "trainer_state.json",
                                   [{"step": s, "loss": 0.5, "step_time": 60.0} for s in range(1, 101)], 100)
    age(path, 1200)
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "stalled" not in out, (out, err)


def test_a_tinyzero_entropy_collapse_is_alerted_on_actor_entropy_loss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # TinyZero logs the policy's entropy as actor/entropy_loss (its legend says so); a collapse there went unsaid
    lines = [f"(main_task pid=7) step:{s} - critic/kl:0.001 - actor/entropy_loss:{0.6 if s < 80 else 0.01} - "
             f"critic/score/mean:0.5" for s in range(1, 101)]
    write(tmp_path / "tz" / "train.log", "\n".join(lines) + "\n")
    _, out, _ = run_cli(["tail", str(tmp_path / "tz"), "--alerts-only"], capsys)
    assert "actor/entropy_loss collapse" in out, out
    # a run logging both names is watched on actor/entropy (the later verl name), once
    eng = AlertEngine()
    for s in range(100):
        eng.update(s, {"actor/entropy": 0.6 if s < 80 else 0.01, "actor/entropy_loss": 0.6})
    assert eng._bound["entropy"] == "actor/entropy"


@pytest.mark.parametrize("fmt", ["text", "jsonl", "csv"])
def test_tail_and_summary_read_the_merged_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, diverged())
    rc, out, _ = run_cli(["tail", "--alerts-only", "--format", fmt, str(path)], capsys)
    assert rc == 1 and out.count("non-finite") == 1 and "actor/kl_loss (NaN)" in out
    if fmt == "jsonl":
        rec = json.loads(out.splitlines()[-1])
        assert (rec["step"], rec["level"], rec["column"], rec["kind"]) == (200, "E", "actor/pg_loss", "nonfinite")
    rc, out, _ = run_cli(["summary", str(path)], capsys)
    assert out.count("non-finite") == 1 and "E step 200 actor/pg_loss non-finite (NaN)" in out


def test_tail_and_summary_agree_on_a_tinker_kl_logged_without_its_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # tail fed the layout's rows (the alias filled in as optim/kl_sample_train_v1) to its alerts, summary and the
    # app the stored ones: an E in tail, "alerts 0" in summary
    from tests.helpers import run_cli

    rng = random.Random(3)
    rows = [{"step": s, "progress/done_frac": s / 300, "env/all/reward/total": 0.5 + rng.gauss(0, 0.02),
             "optim/lr": 1e-5, "kl_sample_train_v1": (0.001 if s < 250 else 0.24) * (1 + rng.gauss(0, 0.05))}
            for s in range(300)]
    write_rows(tmp_path / "tinker" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["tail", "--alerts-only", str(tmp_path)], capsys)
    assert rc == 1 and "step 250 kl_sample_train_v1 blow-up" in out, out
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert "E step 250 kl_sample_train_v1 blow-up" in out, out


def test_alerts_only_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows: list[dict[str, object]] = [{"step": i, "loss": 1.0 + 0.01 * (i % 3), "gn": 1.0 + 0.01 * (i % 2)}
                                     for i in range(60)]
    write_rows(tmp_path / "ok" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["tail", "--alerts-only", str(tmp_path / "ok")], capsys)
    assert rc == 0 and out == ""
    rows[40]["loss"] = math.nan
    write_rows(tmp_path / "bad" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["tail", "--alerts-only", str(tmp_path / "bad")], capsys)
    assert rc == 1
    assert out.count("\n") == 1 and out.startswith("E [bad] step 40 loss")


def test_alert_lines_name_the_run_when_arms_share_a_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for exp in ("exp1", "exp2"):
        rows = [{"step": s, "loss": float("nan") if exp == "exp1" and s == 5 else 1.0} for s in range(10)]
        write_rows(tmp_path / exp / "seed0" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 1 and out.startswith("E [exp1/seed0/metrics.jsonl] step 5 loss non-finite"), out


def test_a_stall_still_going_on_is_an_alert_in_one_shot_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.time() - 700  # one row a second, the last ten minutes ago: within the stall window
    write_rows(tmp_path / "a" / "metrics.jsonl",
               [{"step": s, "ts": start + s, "loss": 1.0 + 0.01 * (s % 3)} for s in range(100)])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and out.startswith("W [a] step 99 stalled: no row for 1"), out
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "stalled: no row for 1" in out
    # a gap the run recovered from: one-shot tail says so at the row after it, as summary does
    gap = tmp_path / "gap" / "metrics.jsonl"
    now = time.time()
    write_rows(
        gap, [{"step": s, "ts": now - 5000 + 2 * s + (3600 if s >= 150 else 0), "loss": 1.0} for s in range(200)]
    )
    rc, out, _ = run_cli(["tail", str(gap), "--alerts-only"], capsys)
    assert "step 149 stalled: no row for 60m" in out, out


def test_alerts_only_over_runs_one_of_which_never_got_a_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CI gate over a sweep where one trainer died before its first row says so (not 0 and silence)."""
    (tmp_path / "dead").mkdir()
    (tmp_path / "dead" / "metrics.jsonl").write_bytes(b"")
    write_rows(tmp_path / "ok" / "metrics.jsonl", [{"step": s, "loss": 0.5} for s in range(3)])
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 2 and out == "" and "dead/metrics.jsonl: nothing checked there" in err
    rc, _, err = run_cli(["tail", str(tmp_path / "ok"), "--alerts-only"], capsys)
    assert rc == 0 and err == ""
    rc, _, _ = run_cli(["tail", str(tmp_path)], capsys)  # the table: a run just started is no error
    assert rc == 0


def test_alerts_only_does_not_call_a_resumed_run_stalled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A job that died after step 150 and was relaunched from the step-100 checkpoint 5 minutes later: tail
    --alerts-only, like summary and the app, says no "stalled: no row for 30.5m" at step 99."""
    import time

    t0 = time.time() - (30 * 150 + 300 + 30 * 99) - 5  # the last row 5 s ago: a live run, not a stalled one
    first = [{"step": s, "rew": 0.5 + 0.001 * s, "ts": t0 + 30 * s} for s in range(151)]
    again = [{"step": s, "rew": 0.5 + 0.001 * s, "ts": t0 + 30 * 150 + 300 + 30 * (s - 100)} for s in range(100, 200)]
    write_rows(tmp_path / "run" / "metrics.jsonl", first + again)
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert (rc, out) == (0, "")
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert "resumed 100" in out and "alerts 0" in out


def test_alerts_only_measures_no_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """--alerts-only prints no row, yet it laid the runs out as the table does, formatting sampled values for widths
    and notations never shown (a 300-run sweep: a quarter of its CPU time). The alerts are the same."""
    import steptable.cli.taillayout as taillayout
    import steptable.schemas.arrange as arrange

    for k in range(3):
        write_rows(tmp_path / f"r{k}" / "metrics.jsonl",
                   [{"step": s, "loss": math.nan if s == 20 + k else 0.5 + s / 100, "kl": 0.1} for s in range(40)])
    rc, want, _ = run_cli(["tail", "--alerts-only", str(tmp_path)], capsys)
    assert rc == 1 and want.count("non-finite") == 3

    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError("a column measured for --alerts-only")

    real = arrange.format_value  # (the step column is measured still: its values are whole numbers, the others not)
    monkeypatch.setattr(arrange, "format_value", lambda value, *a, **k: refuse() if isinstance(value, float) and not (
        value.is_integer()) else real(value, *a, **k))
    monkeypatch.setattr(taillayout, "noted", refuse)
    rc, got, _ = run_cli(["tail", "--alerts-only", str(tmp_path)], capsys)
    assert rc == 1 and got == want
