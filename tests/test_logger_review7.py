"""StepLogger in real loops (seventh review): a preemption handler's close() inside log(), nested metric dicts, a
metric named 'arm', a rank from the environment, big tensors in the dump, steps that are not whole or go back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger


def test_a_relaunch_that_logs_more_metrics_replaces_the_crashed_rows(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The crashed run logged rew, loss, kl (kl diverging from step 100); the relaunch from step 100 logs rew and
    loss with 4 diagnostics more and no kl: 2 of its 6 metrics repeat, 2 of the old row's 3. Taken for a late
    evaluation before (merged: the crashed kl kept beside the relaunch's rows, and an E alert on the healthy run)."""
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
    the train row has too read as a resume of step 5, and steps 6-9 were dropped (tail, summary, table.txt)."""
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
