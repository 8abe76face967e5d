"""Runs written by a StepLogger read back end to end: its description (steptable.json) gives the columns it printed,
how the run ended (a crash, an interruption, a normal end) and its arms; tail, summary and legend use it."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger
from steptable.ingest.files.follow import load
from steptable.schemas import routing_columns
from steptable.table import render, runinfo
from tests.helpers import run_cli
from tests.logger.helpers import (
    ARRAY_MAKERS,
    CUSTOM_COLS,
    LOSS_COLS,
    RUN_COLS,
    description,
    jsonl_rows,
    log_rows,
    logged_run,
    raising,
)


def test_tail_shows_a_run_with_the_columns_its_logger_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows: list[dict[str, object]] = [
        {"step": s, "reward/mean": 0.5 + s / 100, "kl": 0.00123 * s, "secs": 30.5} for s in range(5)
    ]
    printed = log_rows(tmp_path / "run", CUSTOM_COLS, rows)
    info = json.loads((tmp_path / "run" / "steptable.json").read_text())
    assert info["closed"] is not None and info["rows"] == 5 and [c["key"] for c in info["columns"]][:2] == [
        "step", "reward/mean"]
    rc, out, _ = run_cli(["tail", str(tmp_path / "run"), "--width", "0"], capsys)
    lines = out.splitlines()
    assert rc == 0 and lines[0] == render.header([c for c in CUSTOM_COLS if c.stream])
    # the same cells as its stdout printed them (stdout fits each column to its values: steptable.logger.consolecols)
    assert [line.split() for line in lines[1:]] == [line.split() for line in printed]
    rc, out, _ = run_cli(["legend", str(tmp_path / "run")], capsys)
    assert "mean reward of the batch; higher is better" in out and "seconds per step" in out


def test_a_routing_run_is_read_as_routing_whatever_keys_it_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cols = routing_columns(modes=["code", "math"], mode_code={"code": "c", "math": "m"}, show_ablate=True)
    row: dict[str, object] = {"step": 0, "rew": 0.78, "gt_s": (3, 8), "loss": 0.0185, "gn": 1.03, "lr": 1e-5}
    log_rows(tmp_path / "routeA", cols, [row], arm="routeA")
    assert (tmp_path / "routeA" / "steptable.routeA.json").exists()
    rc, out, _ = run_cli(["legend", str(tmp_path / "routeA")], capsys)
    assert rc == 0 and out.startswith("routing columns:")  # five keys only: it read as a generic run
    rc, out, _ = run_cli(["tail", str(tmp_path / "routeA")], capsys)
    assert "+0.78" in out and "3/8" in out


def test_a_closed_run_has_ended_and_does_not_stall(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start = time.time() - 7200  # one row a second, two hours ago
    rows: list[dict[str, object]] = [{"step": s, "ts": start + s, "reward/mean": 0.5, "kl": 0.01} for s in range(60)]
    log_rows(tmp_path / "done", CUSTOM_COLS, rows)
    log_rows(tmp_path / "died", CUSTOM_COLS, rows, close=False)  # a crash: no close()
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and "[died] step 59 stalled" in out and "[done]" not in out
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert out.count("stalled") == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"columns": [{"key": "step", "width": 10**9, "header": "step"}]},
        {"columns": [{"key": 5, "width": 5, "header": "step"}]},
        {"columns": [{"key": "step", "width": 5, "header": "\x1b[2Jstep-and-more"}]},
        {"columns": [{"key": "step", "width": 5, "header": "step", "evil": 1}]},
        {"columns": []},
        {"jsonl": "other.jsonl"},
        {"steptable": 99},
    ],
)
def test_a_description_that_does_not_validate_is_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: dict[str, object]
) -> None:
    log_rows(tmp_path / "r", CUSTOM_COLS, [{"step": 0, "reward/mean": 0.5}])
    path = tmp_path / "r" / "steptable.json"
    info = {**json.loads(path.read_text()), **bad}
    path.write_text(json.dumps(info))
    assert runinfo.parse(path.read_bytes(), tmp_path / "r" / "metrics.jsonl") is None
    rc, out, err = run_cli(["tail", str(tmp_path / "r")], capsys)
    assert rc == 0 and "\x1b" not in out and "Traceback" not in err and out.startswith("step reward")  # generic


def test_a_description_that_is_a_fifo_is_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_rows(tmp_path / "r", CUSTOM_COLS, [{"step": 0, "reward/mean": 0.5}])
    (tmp_path / "r" / "steptable.json").unlink()
    os.mkfifo(tmp_path / "r" / "steptable.json")
    rc, out, _ = run_cli(["tail", str(tmp_path / "r")], capsys)
    assert rc == 0 and out.startswith("step reward")


def test_an_arm_other_than_its_directory_finds_its_description(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows: list[dict[str, object]] = [{"step": s, "reward/mean": 0.5, "kl": 0.01, "secs": 3.0} for s in range(5)]
    log_rows(tmp_path / "exp1" / "seed0", CUSTOM_COLS, rows, arm="routeA")  # steptable.routeA.json in .../seed0
    rc, out, _ = run_cli(["legend", str(tmp_path)], capsys)
    # (the name is numbered per column set within a process: other tests' runs may have come first)
    assert rc == 0 and re.match(r"steplogger(-\d+)? columns:", out) and "mean reward of the batch" in out


def test_a_run_shows_the_columns_its_logger_printed_even_those_it_never_filled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vanilla arm logs its diagnostics as None (not measured): they are not in its file, but its stdout had
    those columns, and so do tail, legend and the app's layout, alone or beside an arm that filled them."""
    cols = routing_columns(modes=["code", "math"], mode_code={"code": "c", "math": "m"}, show_ablate=True)
    printed = {}
    for arm in ("vanilla", "routeA"):
        diag = {"auroc": 0.7, "stale": 1} if arm == "routeA" else {"auroc": None, "stale": None}
        printed[arm] = log_rows(tmp_path / arm, cols, [{"step": s, "rew": 0.5, "loss": 0.01, **diag} for s in range(3)],
                                arm=arm)
    streamed = [c for c in cols if c.stream]
    for path in (tmp_path / "vanilla", tmp_path):
        rc, out, _ = run_cli(["tail", str(path), "--width", "0", "-n", "1"], capsys)
        header = next(line for line in out.splitlines() if line.lstrip().startswith("step"))
        assert rc == 0 and header == render.header(streamed)
        # (arms in name order) the cells its stdout printed, each column there as wide as its values
        assert out.splitlines()[-1].split() == printed["vanilla"][-1].split()
    rc, out, _ = run_cli(["legend", str(tmp_path / "vanilla")], capsys)
    assert "auroc" in out and "stale" in out


def test_arms_sharing_one_file_are_runs_of_their_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two StepLoggers of different arms given one run_dir write one metrics.jsonl: every reader shows each arm's
    rows as its own run (not merged by step, one arm's numbers under the other's name). A file whose rows merely
    carry an "arm" field, with no StepLogger description for it, stays one run."""
    from tests.helpers import write_rows

    van = StepLogger(CUSTOM_COLS, run_dir=tmp_path / "exp", arm="vanilla", console=False, alerts=False)
    rta = StepLogger(CUSTOM_COLS, run_dir=tmp_path / "exp", arm="routeA", console=False, alerts=False)
    for s in range(5):
        van.log({"step": s, "reward/mean": 0.1})
        rta.log({"step": s, "reward/mean": 0.9, "kl": 0.5})
    van.close()
    rta.close()
    stores = load(tmp_path)
    got = {st.arm: (list(st.steps), set(st.column("reward/mean"))) for st in stores.values()}
    assert got == {"vanilla": (list(range(5)), {0.1}), "routeA": (list(range(5)), {0.9})}
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "1"], capsys)
    assert rc == 0 and sorted((r["arm"], r["reward/mean"]) for r in map(json.loads, out.splitlines())) == [
        ("routeA", 0.9), ("vanilla", 0.1)]
    write_rows(tmp_path / "bandit" / "metrics.jsonl", [{"step": s, "arm": "lr" if s % 2 else "rl", "r": 1}
                                                        for s in range(6)])
    assert [len(st) for st in load(tmp_path / "bandit").values()] == [6]


def test_a_filter_shows_dump_only_columns_as_the_logger_declared_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows: list[dict[str, object]] = [{"step": s, "reward/mean": 0.5, "kl": 0.01, "secs": 30.25 + s} for s in range(3)]
    log_rows(tmp_path / "run", CUSTOM_COLS, rows)
    rc, out, _ = run_cli(["tail", str(tmp_path / "run"), "--columns", "secs", "-n", "1"], capsys)
    table = (tmp_path / "run" / "table.txt").read_text().splitlines()
    assert rc == 0 and out.splitlines()[-1].split() == ["2", "32.2"] and table[-1].split()[-1] == "32.2"
    assert out.splitlines()[0] == render.header([CUSTOM_COLS[0], CUSTOM_COLS[3]])  # declared widths, not measured ones


def test_a_crash_inside_the_with_block_is_recorded_and_alerted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(RuntimeError):
        logged_run(tmp_path / "crash", raising(RuntimeError("CUDA out of memory")), rows=121)
    info = description(tmp_path / "crash")
    assert info["end"] == "RuntimeError" and info["closed"] is not None and info["rows"] == 121
    rc, out, _ = run_cli(["summary", str(tmp_path / "crash")], capsys)
    lines = out.splitlines()
    assert rc == 0 and lines[0].endswith(", ended with RuntimeError")
    assert lines[-2:] == ["alerts 1 (1E):", "E step 120 run ended with RuntimeError"]
    rc, out, _ = run_cli(["tail", str(tmp_path / "crash"), "--alerts-only"], capsys)
    assert rc == 1 and out.splitlines() == ["E [crash] step 120 run ended with RuntimeError"]
    rc, out, _ = run_cli(["tail", str(tmp_path / "crash"), "--alerts-only", "--format", "jsonl"], capsys)
    rec = json.loads(out)
    assert rc == 1 and (rec["level"], rec["kind"], rec["step"]) == ("E", "ended", 120)
    rc, out, _ = run_cli(["tail", str(tmp_path / "crash"), "-n", "2"], capsys)
    assert rc == 0 and out.splitlines()[-1] == "── crash: ended with RuntimeError ──"  # named as its alerts name it


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), SystemExit(1), SystemExit("preempted")])
def test_ctrl_c_or_a_non_zero_exit_is_an_interruption_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stop: BaseException
) -> None:
    """Someone (or a scheduler's SIGTERM) stopped the run: not a failure of it, so W, and tail --alerts-only exits 0;
    but it did not finish, which the summary and the alerts say."""
    with pytest.raises(type(stop)):
        logged_run(tmp_path / "r", raising(stop), arm="A")
    assert description(tmp_path / "r", "A")["end"] == "interrupted"
    rc, out, _ = run_cli(["summary", str(tmp_path / "r")], capsys)
    assert rc == 0 and out.splitlines()[0].endswith(", interrupted")
    assert out.splitlines()[-2:] == ["alerts 1 (1W):", "W step 4 run interrupted"]
    rc, out, _ = run_cli(["tail", str(tmp_path / "r"), "--alerts-only"], capsys)
    assert rc == 0 and out == "W [A] step 4 run interrupted\n"


def _normal_description(tmp_path: Path) -> dict[str, Any]:
    sl = StepLogger(RUN_COLS, run_dir=tmp_path / "plain", console=False, alerts=False)
    for s in range(5):
        sl.log({"step": s, "loss": 1 / (s + 1)})
    sl.close()
    return description(tmp_path / "plain")


@pytest.mark.parametrize("stop", [None, SystemExit(0), SystemExit(None), SystemExit(False)])
def test_a_normal_end_or_exit_0_reads_as_a_normal_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stop: BaseException | None
) -> None:
    if stop is None:
        logged_run(tmp_path / "r", None)
    else:
        with pytest.raises(SystemExit):
            logged_run(tmp_path / "r", raising(stop))
    info = description(tmp_path / "r")
    assert "end" not in info and set(info) == set(_normal_description(tmp_path))  # a file without the field
    rc, out, _ = run_cli(["summary", str(tmp_path / "r")], capsys)
    assert rc == 0 and out.splitlines()[0].endswith(", ended") and out.splitlines()[-1] == "alerts 0"
    rc, out, _ = run_cli(["tail", str(tmp_path / "r"), "--alerts-only"], capsys)
    assert (rc, out) == (0, "")
    rc, out, _ = run_cli(["tail", str(tmp_path / "r")], capsys)
    assert rc == 0 and "──" not in out


def test_a_description_without_the_end_field_reads_as_a_normal_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file an older logger wrote (no ``end``) is a normal end; a newer file is valid version 1 for an older
    reader (the version is unchanged, and parse() accepts it whole); an ``end`` that is not a type name is ignored,
    never the file."""
    with pytest.raises(RuntimeError):
        logged_run(tmp_path / "r", raising(RuntimeError()))
    path = tmp_path / "r" / "steptable.json"
    new = description(tmp_path / "r")
    assert new["end"] == "RuntimeError"
    parsed = runinfo.parse(path.read_bytes(), tmp_path / "r" / "metrics.jsonl")
    assert parsed is not None and parsed["steptable"] == 1 and runinfo.columns(parsed) is not None
    for end in (None, 5, "", "a b\x1b[31m", "x" * 65, ["RuntimeError"]):
        old = {k: v for k, v in new.items() if k != "end"} if end is None else {**new, "end": end}
        path.write_text(json.dumps(old))
        rc, out, _ = run_cli(["summary", str(tmp_path / "r")], capsys)
        assert rc == 0 and out.splitlines()[0].endswith(", ended") and out.splitlines()[-1] == "alerts 0"
        rc, out, _ = run_cli(["tail", str(tmp_path / "r"), "--alerts-only"], capsys)
        assert (rc, out) == (0, "")
        assert runinfo.parse(path.read_bytes(), tmp_path / "r" / "metrics.jsonl") is not None
        rc, out, _ = run_cli(["legend", str(tmp_path / "r")], capsys)
        assert rc == 0 and out.startswith("steplogger")  # the logger's own columns: the file was read


COLS = [Col("step", 5, "step", "d"), Col("rew", 6, "rew")]


def test_a_list_under_arm_is_a_cell_not_the_end_of_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A row whose ``arm`` is a list is a cell, not a TypeError (unhashable) on every read of the file: summary,
    tail -f and watch show the run's rows."""
    run = tmp_path / "b3" / "routeA"
    with StepLogger(COLS, run_dir=run, arm="routeA", console=False, alerts=False) as sl:
        for step in range(100):
            row: dict[str, Any] = {"step": step, "rew": 0.5}
            if step == 60:
                row["arm"] = ["left", "right"]
            sl.log(row)
    rc, out, err = run_cli(["summary", str(tmp_path / "b3")], capsys)
    assert rc == 0 and "steps 0-99" in out and "internal error" not in err


def test_a_relaunch_that_logs_more_metrics_replaces_the_crashed_rows(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The crashed run logged rew, loss, kl (kl diverging from step 100); the relaunch from step 100 logs rew and
    loss with 4 diagnostics more and no kl: 2 of its 6 metrics repeat, 2 of the old row's 3. It is a resume, not
    a late evaluation (merged, it would keep the crashed kl beside the relaunch's rows, with an E alert on the
    healthy run)."""
    from tests.helpers import run_cli

    cols = [Col("step", 5, "step", "d"), Col("rew", 6, "rew"), Col("loss", 6, "loss"), Col("kl", 6, "kl")]
    crashed = StepLogger(cols, run_dir=tmp_path, arm="main", console=False, alerts=False)
    for s in range(151):
        crashed.log({"step": s, "rew": 0.5, "loss": 1.0, "kl": 9.99 if s >= 100 else 0.01})
    crashed._closed = True  # (killed: no close, no table)
    extra = [Col(k, 6, k) for k in ("auroc", "cos", "qmass", "keep")]
    again = StepLogger([*cols[:3], *extra], run_dir=tmp_path, arm="main", console=False, alerts=False)
    for s in range(100, 200):
        again.log({"step": s, "rew": 0.6, "loss": 0.9, "auroc": 0.7, "cos": 0.1, "qmass": 0.2, "keep": 0.5})
    again.close()
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "resumed 100" in out, out
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv", "-n", "0"], capsys)
    rows = out.splitlines()
    kl = rows[0].split(",").index("kl")
    assert [r.split(",")[kl] for r in rows[101:]] == [""] * 100  # no crashed kl beside the relaunch's rows
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    # the crashed run's kl is said as what it was (why the run was relaunched), not as the relaunch's
    kl_lines = [ln for ln in out.splitlines() if " kl " in ln]
    assert kl_lines and all("(a row the resume at step 100 replaced)" in ln for ln in kl_lines), out
    table = [ln for ln in (tmp_path / "table.txt").read_text().splitlines() if not ln.lstrip().startswith("step")]
    assert len(table) == 200 and table[-1].split()[0] == "199"


def test_a_late_evaluation_carrying_the_epoch_joins_its_step(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """An async evaluator logs {"step": 5, "eval/acc": .41, "epoch": 1.25} after step 9: one score and the epoch
    the train row has too is no resume of step 5: steps 6-9 stay (tail, summary, table.txt)."""
    from tests.helpers import run_cli

    cols = [Col("step", 4, "step", "d"), Col("loss", 6, "loss"), Col("eval/acc", 5, "acc")]
    sl = StepLogger(cols, run_dir=tmp_path, console=False, alerts=False)
    for s in range(1, 13):
        sl.log({"step": s, "loss": 1 / s, "reward": 0.1 * s, "lr": 1e-5, "epoch": s / 4})
        if s == 9:
            sl.log({"step": 5, "eval/acc": 0.41, "epoch": 1.25})
    sl.log({"step": 12, "epoch": 3.0})  # a counter-only row, then a late eval of its step
    sl.log({"step": 12, "eval/acc": 0.5, "eval/loss": 0.7, "epoch": 3.0})
    sl.close()
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "resumed" not in out and "steps 1-12" in out, out
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv", "-n", "0"], capsys)
    lines = out.splitlines()
    at = lines[0].split(",").index("step")
    assert [line.split(",")[at] for line in lines[1:]] == [str(s) for s in range(1, 13)]
    table = [ln.split() for ln in (tmp_path / "table.txt").read_text().splitlines()[1:]]
    assert [r[0] for r in table] == [str(s) for s in range(1, 13)] and table[4][2] == ".41"


@pytest.mark.parametrize("make", ARRAY_MAKERS)
def test_a_nan_in_a_one_element_loss_raises_the_alert_in_the_loop_and_in_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], captured: list[str],
    make: Callable[[float, tuple[int, ...]], Any],
) -> None:
    """A NaN loss logged as a one-element array ([nan]) is a NaN to the alerts and in the file (not text, not a
    list): it raises the alert in the loop and in ``tail``."""
    with StepLogger(LOSS_COLS, run_dir=tmp_path, console=True) as sl:
        for step in range(12):
            sl.log({"step": step, "loss": make(float("nan") if step == 10 else 1.0 / (step + 1), (1,))})
    assert any(line.startswith("E ") and "loss non-finite (NaN)" in line for line in captured)
    assert jsonl_rows(tmp_path)[10]["loss"] is None
    _, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert "step 10 loss non-finite (NaN)" in out


def test_a_run_whose_logger_was_closed_reads_ended(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A finished run and a hung one read the same to an agent (`upd 2h ago`) unless the header says which."""
    from steptable import Col, StepLogger
    from tests.helpers import run_cli

    cols = [Col("step", 5, "step", "d"), Col("loss", 6, "loss")]
    loggers = {arm: StepLogger(cols, run_dir=tmp_path / arm, arm=arm, console=False, alerts=False)
               for arm in ("done", "live")}
    for sl in loggers.values():
        for s in range(5):
            sl.log({"step": s, "loss": 1 / (s + 1)})
    loggers["done"].close()
    loggers["live"]._final_flush()  # (its rows on disk, the run going on)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    loggers["live"].close()
    heads = {line.split(":")[1].strip(): line for line in out.splitlines()[:2]}
    assert rc == 0 and heads["done"].endswith(", ended") and "ended" not in heads["live"], out
