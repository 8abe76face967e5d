"""StepLogger in real loops (seventh review): a preemption handler's close() inside log(), nested metric dicts, a
metric named 'arm', a rank from the environment, big tensors in the dump, steps that are not whole or go back."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from steptable import Col, StepLogger
from steptable.table import runinfo
from tests.logger.helpers import LOSS_COLS


def _closed(run_dir: Path, arm: str | None = None) -> float | None:
    return runinfo.closed_at(json.loads((run_dir / runinfo.file_name(arm)).read_text()))


class _Synced:
    """A 0-d device scalar: ``item()`` is where the loop waits for the GPU, and where a SIGTERM lands."""

    ndim = 0

    def __init__(self, value: float, on_read: Any = None) -> None:
        self.value, self.on_read = value, on_read

    def item(self) -> float:
        if self.on_read is not None:
            self.on_read()
        return self.value


def test_a_handler_that_closes_and_exits_inside_log_still_closes_the_run(tmp_path: Path) -> None:
    """``def on_term(s, f): lg.close(); sys.exit(0)`` running inside log(): the close was deferred to the end of the
    row, and the SystemExit skipped it (no table, the run never read as ended)."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})

    def on_term() -> None:
        sl.close()
        raise SystemExit(0)

    with pytest.raises(SystemExit):
        sl.log({"step": 1, "loss": _Synced(0.25, on_term)})
    assert _closed(tmp_path) is not None
    assert (tmp_path / "table.txt").exists()
    assert sl.log({"step": 2, "loss": 0.1}) is None  # closed: nothing more is written


def test_a_handler_that_closes_then_leaves_with_os_exit_has_marked_the_run_ended(tmp_path: Path) -> None:
    """os._exit() after close() never returns to the row: the run is marked ended by close() itself."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    seen: list[float | None] = []

    def on_term() -> None:
        sl.close()
        seen.append(_closed(tmp_path))  # what a reader sees if the process ended here

    sl.log({"step": 1, "loss": _Synced(0.25, on_term)})
    assert seen and seen[0] is not None
    # the handler returned: the row was finished and the run closed properly after it
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1]
    assert (tmp_path / "table.txt").exists() and _closed(tmp_path) is not None


def test_nested_metric_dicts_show_under_the_keys_readers_give_them(tmp_path: Path, captured: list[str]) -> None:
    """{"train": {"loss": x}} under Col("train/loss"): stdout showed nan (a divergence to the eye) where table.txt
    and tail showed the value; the in-loop alerts did not see it either."""
    cols = [Col("step", 4, "step", "d"), Col("train/loss", 6, "loss"), Col("eval/acc", 5, "acc")]
    sl = StepLogger(cols, run_dir=tmp_path)
    for s in range(3):
        line = sl.log({"step": s, "train": {"loss": 1.0 + s}, "eval": {"acc": {"x": 1}, "n": 2}})
        assert line is not None and line.split()[1] == str(1 + s), line
    sl.log({"step": 3, "train": {"loss": float("nan")}})
    sl.close()
    assert any("train/loss non-finite" in x for x in captured), captured  # the alert engine saw it
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["train"] == {"loss": 1.0}  # the file keeps the row as logged
    table = (tmp_path / "table.txt").read_text().splitlines()
    assert [ln.split()[1] for ln in table[1:4]] == ["1", "2", "3"]


def test_a_metric_named_arm_is_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, arm="bandit1", console=False, alerts=False)
    for s in range(5):
        sl.log({"step": s, "arm": s % 3, "loss": 0.1})
    sl.close()
    err = capsys.readouterr().err
    assert err.count("a row's 'arm'") == 1 and "bandit1" in err and "another name" in err
    quiet = StepLogger(LOSS_COLS, run_dir=tmp_path / "q", arm="A", console=False, alerts=False)
    quiet.log({"step": 0, "arm": "A"})  # the logger's own arm: nothing to say
    quiet.close()
    assert "'arm'" not in capsys.readouterr().err


def test_a_rank_given_as_text_is_a_number(tmp_path: Path) -> None:
    """rank=os.environ.get("RANK") is "0": that logger is the writer (it silently wrote nothing)."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, rank="0", console=False)  # type: ignore[arg-type]
    assert sl.is_writer and sl.log({"step": 0, "loss": 1.0}) is not None
    sl.close()
    assert (tmp_path / "metrics.jsonl").exists()
    assert not StepLogger(LOSS_COLS, rank="1").is_writer  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        StepLogger(LOSS_COLS, rank="main")  # type: ignore[arg-type]


def test_the_dump_keeps_no_reference_to_big_arrays(tmp_path: Path) -> None:
    """A per-token loss array (or a tensor with its autograd graph) logged each step was kept alive by the last
    dump_rows rows; the dump shows its type and shape instead."""
    cols = [*LOSS_COLS, Col("tok_loss", 16, "tok_loss")]
    sl = StepLogger(cols, run_dir=tmp_path, console=False, alerts=False)
    arr = np.zeros((4, 2048))
    ref = weakref.ref(arr)
    sl.log({"step": 0, "loss": 1.0, "tok_loss": arr})
    del arr
    gc.collect()
    assert ref() is None
    assert "ndarray[4x2048]" in sl.dump()
    small = np.array([3, 8])
    sl.log({"step": 1, "tok_loss": small})  # a small 1-d array is its numbers, as before
    assert "3/8" in sl.dump() or "(3, 8)" in sl.dump() or "3, 8" in sl.dump()
    sl.close()


def test_steps_that_go_back_are_told_in_the_end_note(tmp_path: Path, captured: list[str]) -> None:
    """A per-epoch step counter (0..3 each epoch): every reader takes each epoch as a restart, and table.txt holds
    the last epoch; the end of run said "all rows"."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path)
    for e in range(3):
        for s in range(4):
            sl.log({"step": s, "loss": e + s / 10})
    sl.close()
    end = next(x for x in captured if "every column" in x)
    assert "the 4 steps (12 rows logged: a step went back 2 time(s)" in end and "all rows" not in end
    merged = StepLogger(LOSS_COLS, run_dir=tmp_path / "m")  # a train row and an eval row a step: nothing went back
    for s in range(5):
        merged.log({"step": s, "loss": 0.5})
        merged.log({"step": s, "acc": 0.5})
    merged.close()
    end = [x for x in captured if "every column" in x][-1]
    assert "the 5 steps (10 rows logged: rows of one step merged)" in end, end
    plain = StepLogger(LOSS_COLS, run_dir=tmp_path / "p")
    for s in range(3):
        plain.log({"step": s, "loss": 0.5})
    plain.close()
    assert "all rows, every column" in "".join(captured)


def test_a_step_that_is_not_whole_is_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    for i in range(8):
        sl.log({"step": i / 4, "loss": 0.1})
    sl.log({"step": 3.0, "loss": 0.1})  # a whole float is a step
    sl.close()
    err = capsys.readouterr().err
    assert err.count("not a whole number") == 1 and "0.25" in err


def test_a_nested_key_and_a_flat_one_of_the_same_name_read_as_the_file_does(tmp_path: Path) -> None:
    """The JSONL readers take the later of two keys that spread to one name; the stdout row took the earlier."""
    cols = [Col("step", 4, "step", "d"), Col("train/loss", 6, "loss")]
    sl = StepLogger(cols, run_dir=tmp_path, console=False, alerts=False)
    a = sl.log({"step": 0, "train": {"loss": 2.0}, "train/loss": 1.0})
    b = sl.log({"step": 1, "train/loss": 1.0, "train": {"loss": 2.0}})
    sl.close()
    table = (tmp_path / "table.txt").read_text().splitlines()
    assert [a.split()[1], b.split()[1]] == [ln.split()[1] for ln in table[1:3]] == ["1", "2"]


def test_the_dump_keeps_no_nested_mapping_of_tensors() -> None:
    """{"stats": {"act": big}}: the leaf was shortened but the mapping itself was kept, and the tensor with it."""
    sl = StepLogger([*LOSS_COLS, Col("stats/act", 16, "act")], console=False, alerts=False)
    arr = np.zeros((64, 64))
    ref = weakref.ref(arr)
    sl.log({"step": 0, "loss": 1.0, "stats": {"act": arr}})
    del arr
    gc.collect()
    assert ref() is None and "ndarray[64x64]" in sl.dump()


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


def test_a_big_nested_mapping_does_not_starve_the_declared_columns(captured: list[str]) -> None:
    """A 1500-entry per-task dict logged before {"train": {"loss": x}}: the row's one budget went to the tasks and
    stdout showed nan for train/loss (the file had the value)."""
    cols = [Col("step", 4, "step", "d"), Col("train/loss", 6, "loss"), Col("eval/acc", 5, "acc")]
    sl = StepLogger(cols, alerts=False)
    line = sl.log({"step": 0, "tasks": {str(i): i for i in range(1500)}, "train": {"loss": 0.25},
                   "eval": {"acc": 0.5}})
    assert line is not None and line.split()[1:] == [".25", ".5"], line


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


def test_a_mappings_own_values_come_before_the_mappings_in_it(captured: list[str]) -> None:
    """{"train": {"per_task": {1500 items}, "loss": x}}: the budget went to the tasks and train/loss showed nan."""
    sl = StepLogger([Col("step", 4, "step", "d"), Col("train/loss", 6, "loss")], alerts=False)
    line = sl.log({"step": 0, "train": {"per_task": {str(i): i for i in range(1500)}, "loss": 0.25}})
    assert line is not None and line.split()[1] == ".25", line
