"""A run restarted from a checkpoint, end to end: the alerts of the rows the restart replaced (why it was restarted)
are still said by a reader that meets the file after the restart, bounded, and a clean restart says nothing."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.replaced import read_replaced
from steptable.ingest import Follower
from steptable.ingest.replacedrows import MAX_REPLACED_ALERTS
from tests.alerts.helpers import loss_rows, reward_rows, write_finished_run
from tests.cli.helpers import Live, run_summary
from tests.helpers import grpo_rows, run_cli, write_rows


def test_a_nan_before_a_restart_is_still_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The loss went NaN at step 1090, the run was restarted from its step-1000 checkpoint: summary still says
    why, though the NaN rows were replaced (not "alerts 0")."""
    rng = random.Random(0)
    rows = loss_rows(range(1100), rng, nan_from=1090) + loss_rows(range(1000, 1150), rng)
    write_rows(tmp_path / "r" / "metrics.jsonl", rows)
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0, err
    assert "E step 1090 loss non-finite (NaN) after 1090 finite steps (a row the resume at step 1000 replaced)" in out
    assert "resumed 1000" in out
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)  # exit 1 on it, as before the restart
    assert rc == 1 and "step 1090 loss non-finite (NaN)" in out and "the resume at step 1000 replaced" in out, err


def _attempt(run: Path, steps: range, crash: bool) -> None:
    """One process of a run: StepLogger's rows of ``steps``, its ``with`` block left by a RuntimeError (``crash``)."""
    from steptable import StepLogger

    try:
        with StepLogger(run_dir=run, console=False, alerts=False) as sl:
            for s in steps:
                sl.log({"step": s, "loss": 1.0 / (s + 1)})
            if crash:
                raise RuntimeError("CUDA out of memory")
    except RuntimeError:
        pass


def test_a_crash_before_a_resume_is_still_said_once_the_run_resumed(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The first process died of an error at step 49, the second resumed from step 40 and ended well: its
    description replaced the one that said the crash, and --alerts-only exited 0 (summary: "ended, resumed 40").
    The crash is kept with the resume it led to, told at that step, by tail and summary alike; a second crash
    and resume adds to it; a process that ended well before a resume adds nothing."""
    run = tmp_path / "a"
    _attempt(run, range(0, 50), crash=True)
    _attempt(run, range(40, 60), crash=False)
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 1 and out.splitlines() == ["E [a] step 40 run ended with RuntimeError; resumed at this step"], err
    _attempt(run, range(55, 70), crash=True)
    _attempt(run, range(65, 80), crash=False)
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "E steps 40-65 x2, last run ended with RuntimeError; resumed at this step" in out, out + err
    clean = tmp_path / "b"
    _attempt(clean, range(0, 30), crash=False)
    _attempt(clean, range(20, 40), crash=False)
    rc, out, _ = run_cli(["tail", str(clean), "--alerts-only"], capsys)
    assert rc == 0 and out == "", out


_KILLED = """
import os, signal, sys, time
from steptable import StepLogger
sl = StepLogger(run_dir=sys.argv[1], console=False, alerts=False)
for s in range(50):
    sl.log({"step": s, "loss": 1.0 / (s + 1)})
print("logged", flush=True)
if sys.argv[2] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if sys.argv[2] == "live":
    time.sleep(60)
"""


def _first_process(run: Path, how: str) -> subprocess.Popen[str]:
    """A process that logs steps 0-49 and is then killed by SIGKILL (``kill``: as the OOM killer or a preempting
    scheduler ends it), stays alive holding the arm (``live``) or exits without closing its logger (``exit``),
    once its rows are written."""
    proc = subprocess.Popen([sys.executable, "-c", _KILLED, str(run), how], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "logged\n"
    return proc


def test_a_kill_before_a_resume_is_said_at_the_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The first process was killed (SIGKILL: no close, no exception) after step 49 and the run resumed from step
    40: the resumed process's description said nothing of it. It is kept as a process that stopped without a
    close, a warning at the resume step; a process still alive beside a second writer is no such end, nor one that
    exited without calling close() (a script run again into its directory)."""
    run = tmp_path / "a"
    killed = _first_process(run, "kill")
    assert killed.wait(timeout=60) == -signal.SIGKILL
    _attempt(run, range(40, 60), crash=False)
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and out.splitlines() == ["W [a] step 40 run stopped without a close; resumed at this step"], err
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "W step 40 run stopped without a close; resumed at this step" in out, out + err
    live_run = tmp_path / "b"
    live = _first_process(live_run, "live")
    try:
        _attempt(live_run, range(40, 60), crash=False)
    finally:
        live.kill()
        live.wait()
    rc, out, err = run_cli(["tail", str(live_run), "--alerts-only"], capsys)
    assert rc == 0 and "without a close" not in out, out + err
    exited = tmp_path / "c"
    assert _first_process(exited, "exit").wait(timeout=60) == 0
    _attempt(exited, range(40, 60), crash=False)
    rc, out, err = run_cli(["tail", str(exited), "--alerts-only"], capsys)
    assert rc == 0 and "without a close" not in out, out + err


def test_tail_f_that_saw_the_crash_says_it_once_after_the_resume(tmp_path: Path) -> None:
    """tail -f --alerts-only following the run through its crash and its resume says the crash once, as it
    happened (not again as the end before the resume); one started after the resume says it at the resume."""
    run = tmp_path / "a"
    _attempt(run, range(0, 50), crash=True)
    live = Live(tmp_path, ["--alerts-only"])
    live.step()
    _attempt(run, range(40, 60), crash=False)
    live.step()
    live.step()
    said = [line for line in live.out.getvalue().splitlines() if "RuntimeError" in line]
    assert said == ["E [a] step 49 run ended with RuntimeError"], live.out.getvalue()
    later = Live(tmp_path, ["--alerts-only"])
    later.step()
    assert later.out.getvalue().splitlines() == ["E [a] step 40 run ended with RuntimeError; resumed at this step"]


def test_a_clean_restart_says_nothing_and_replaced_alerts_are_bounded(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(1)
    write_rows(tmp_path / "r" / "metrics.jsonl", loss_rows(range(600), rng) + loss_rows(range(500, 700), rng))
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "alerts 0" in out and "replaced" not in out, out
    # a run restarted again and again after a NaN: the first alerts of the replaced rows are kept, no more
    rows: list[dict[str, Any]] = []
    for _ in range(3 * MAX_REPLACED_ALERTS):
        rows += loss_rows(range(40), rng, nan_from=30)
    write_rows(tmp_path / "many" / "metrics.jsonl", rows)
    f = Follower([tmp_path / "many"], on_resume=read_replaced)
    f.scan()
    (store,) = f.stores.values()
    assert len(store.replaced) == MAX_REPLACED_ALERTS and all(a.step == 30 for a in store.replaced)


def test_a_second_resume_behind_the_first_is_no_stall(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The gap between a crash and its restart is no stall, also where the replaced rows hold an earlier resume
    (no 'stalled: no row for 2.28h ... (a row the resume at step 400 replaced)')."""
    def rows(steps: range, t0: float) -> list[dict[str, Any]]:
        return [{"step": s, "loss": 0.1, "grad_norm": 0.5 + 0.01 * (s % 7), "ts": t0 + 2 * (s - steps[0])}
                for s in steps]

    t = time.time() - 20_000
    write_rows(tmp_path / "r" / "metrics.jsonl",
               rows(range(1000), t) + rows(range(500, 1500), t + 9000) + rows(range(400, 450), t + 19900))
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "stalled" not in out, out


def test_summary_of_empty_files_checks_nothing_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty metrics file is said to be unchecked: a run that was never checked must not pass for a clean one
    ("alerts 0", status 0)."""
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "metrics.jsonl").write_text("")
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 2 and "alerts: none checked (no rows)" in out and "alerts 0" not in out and "no rows yet" in err
    rc, _, err = run_cli(["summary", str(tmp_path), str(tmp_path / "typo")], capsys)  # both said
    assert rc == 2 and "no rows yet" in err and "no such path" in err, err
    write_rows(tmp_path / "ok" / "metrics.jsonl", [{"step": 1, "loss": 0.5}])
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)  # beside a run with rows: said, status 0
    assert rc == 0 and "alerts: none checked (no rows)" in out and "alerts 0" in out, (out, err)


def test_the_latest_of_many_long_crashes_is_still_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Six crashes on a NaN, each restarted 5,000 steps back: all of them are said, under one name, the latest
    (the one that matters most) included (a fixed budget for the whole file would spend itself on the first
    four)."""
    rng = random.Random(5)
    rows: list[dict[str, Any]] = []
    start = 0
    for _ in range(6):
        rows += loss_rows(range(start, start + 6000), rng, nan_from=start + 5997)
        start += 1000
    write_rows(tmp_path / "a" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only", "--format", "jsonl"], capsys)
    got = [json.loads(line) for line in out.splitlines()]
    nans = [g["step"] for g in got if g["kind"] == "nonfinite"]
    assert rc == 1 and nans == [5997, 6997, 7997, 8997, 9997, 10997], nans
    assert len({g["label"] for g in got}) == 1, {g["label"] for g in got}


def test_tail_f_after_a_restart_from_step_0_says_no_collapse(tmp_path: Path) -> None:
    path = write_finished_run(tmp_path)
    live = Live(tmp_path, ["--alerts-only"])
    live.step()
    write_rows(path, reward_rows(range(30), 0.2, 2))  # a new run from scratch in the same directory: rewards start low
    live.step()
    assert "collapse" not in live.out.getvalue(), live.out.getvalue()


def test_a_resume_mid_run_still_sees_a_real_collapse_after_it(tmp_path: Path) -> None:
    # resumed at step 100 (the rows before it kept): a collapse after the resume is still a collapse
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, reward_rows(range(120), 0.8, 3))
    live = Live(tmp_path, ["--alerts-only"])
    live.step()
    write_rows(path, reward_rows(range(100, 130), 0.8, 4) + reward_rows(range(130, 160), 0.05, 5))
    live.step()
    assert "rew collapse" in live.out.getvalue(), live.out.getvalue()


NAN = float("nan")


def test_summary_of_a_restart_over_a_nan_loss_in_a_column_that_once_held_text_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The rows a resume replaced are read again for their alerts: the NaN loss that made someone restart the run
    from step 25 is said, whatever else the loss column held."""
    rows = grpo_rows(range(40))
    rows[10]["loss"] = "skipped"
    rows[30]["loss"] = NAN
    write_rows(tmp_path / "run" / "metrics.jsonl", [*rows, *grpo_rows(range(25, 45), seed=1)])
    out = run_summary(tmp_path, capsys)
    assert "resumed 25" in out and "step 30 loss non-finite (NaN)" in out and "resume at step 25 replaced" in out, out


def test_summary_of_a_run_restarted_over_and_over_lists_the_first_100_restarts_alerts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """120 restarts from step 0, each after a NaN loss at step 5: why the run was restarted is said for the first
    100 (and the live one), a bounded list rather than one line per restart."""
    rows: list[dict[str, Any]] = []
    for k in range(120):
        rows += [{**r, "loss": NAN if r["step"] == 5 else r["loss"]} for r in grpo_rows(range(8), seed=k)]
    write_rows(tmp_path / "run" / "metrics.jsonl", rows)
    out = run_summary(tmp_path, capsys)
    assert "alerts 101 (101E)" in out, out.splitlines()[:6]


@pytest.mark.parametrize(("later", "resumed"), [
    # HF / MaxEnt-GRPO: an eval row carries train/epoch and train/global_step as the train rows do
    ([{"step": 5, "eval/reward": 0.7, "train/epoch": 0.5, "train/global_step": 5}], False),
    # a relaunch that swapped a metric and added diagnostics, the epoch logged as before: a resume at 5
    ([{"step": s, "train/epoch": s / 10, "train/global_step": s, "train/loss": 0.5, "kl": 0.1, "entropy": 1.0,
       "grad_norm": 0.3} for s in range(5, 8)], True),
])
def test_counters_alone_are_no_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      later: list[dict[str, Any]], resumed: bool) -> None:
    from tests.helpers import run_cli, write_rows

    first = [{"step": s, "train/loss": 1 / s, "train/reward": 0.1 * s, "train/epoch": s / 10,
              "train/global_step": s} for s in range(1, 10)]
    write_rows(tmp_path / "run" / "metrics.jsonl", first + later)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and ("resumed 5" in out) == resumed and ("steps 1-9" in out) == (not resumed), out
