"""``steptable summary PATH --top K --by METRIC`` (steptable.cli.sweeptop): the ranking printed, its exit status."""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

from steptable.cli.main import main
from tests.app.sweephelpers import write_sweep


def test_summary_top_command(tmp_path: Path) -> None:
    names = write_sweep(tmp_path, runs=10)
    out, err = io.StringIO(), io.StringIO()
    from steptable.cli.summary import run

    args = argparse.Namespace(paths=[str(tmp_path)], top=2, by="reward", stat="last", lower=False, run=None)
    assert run(args, out, err) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == "10 runs: 8 live, 1 ended, 1 crashed; 1 with errors"
    # (a generic run's schema says no direction for reward: ranked highest first, not called better)
    assert lines[1] == "by reward (last value, highest first: which way is better is not known):"
    assert lines[2] == "highest:" and lines[5] == "lowest:"
    assert lines[3].startswith(f"1. {names[-1]} ") and lines[4].startswith(f"2. {names[-2]} ")
    assert lines[6].startswith(f"10. {names[0]} ") and " ended" in lines[6]
    assert lines[7].startswith(f"9. {names[1]} ") and lines[7].endswith("crashed 1E")
    args.by = "nothing"
    out = io.StringIO()
    assert run(args, out, err) == 2 and "no run logs nothing" in out.getvalue()


def test_summary_top_parses(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    write_sweep(tmp_path, runs=3)
    assert main(["summary", str(tmp_path), "--top", "1", "--by", "loss", "--lower"]) == 0
    out = capsys.readouterr().out
    assert "by loss (mean of the newest rows, lower is better):" in out
    assert main(["summary", str(tmp_path / "missing"), "--top", "1"]) == 2


def test_summary_of_a_sweep_gives_its_ranking_unless_every_run_is_asked_for(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """More runs than a summary's rows hold (ARM_ROWS): the ranking (read from each file's end), and how to get each
    run's block; --all, --run and --columns give the blocks; at ARM_ROWS runs or fewer, the blocks."""
    from steptable.summary.report import ARM_ROWS
    from steptable.summary.toplines import MAX_CHARS

    names = write_sweep(tmp_path / "big", runs=ARM_ROWS + 1)
    assert main(["summary", str(tmp_path / "big")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"{ARM_ROWS + 1} runs: ") and lines[1].startswith("by reward")
    assert lines[3].startswith(f"1. {names[-1]} ") and "runs between" in out
    assert lines[-1] == "(each run's block and its alerts: --all; one run's: --run NAME)"
    assert len(out) <= MAX_CHARS + len(lines[-1]) + 1
    assert main(["summary", str(tmp_path / "big"), "--all"]) == 0
    every = capsys.readouterr().out
    assert "alerts" in every and all(n in every for n in names) and "runs between" not in every
    assert main(["summary", str(tmp_path / "big"), "--run", names[3]]) == 0
    one = capsys.readouterr().out
    assert names[3] in one and names[4] not in one and "runs between" not in one
    assert main(["summary", str(tmp_path / "big"), "--columns", "reward"]) == 0
    assert "runs between" not in capsys.readouterr().out
    write_sweep(tmp_path / "small", runs=ARM_ROWS)
    assert main(["summary", str(tmp_path / "small")]) == 0
    assert "runs between" not in capsys.readouterr().out


def test_a_fifo_or_a_device_among_a_sweeps_runs_is_named_and_the_rest_ranked(tmp_path: Path) -> None:
    """A FIFO named metrics.jsonl blocked the sweep's read at its open (summary never returned; the watch app's run
    list stayed at "reading"); a link to /dev/zero was counted as a live run. Each is now named as not a regular
    file, the others are ranked, and the exit status is 2 (a run that could not be read)."""
    import os
    import subprocess
    import sys

    names = write_sweep(tmp_path, runs=16)
    (tmp_path / "zfifo").mkdir()
    os.mkfifo(tmp_path / "zfifo" / "metrics.jsonl")
    (tmp_path / "zdev").mkdir()
    os.symlink("/dev/zero", tmp_path / "zdev" / "metrics.jsonl")
    done = subprocess.run([sys.executable, "-m", "steptable", "summary", str(tmp_path), "--top", "2"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith("16 runs: "), done.stdout
    assert names[-1] in done.stdout and "zdev" not in done.stdout
    for name in ("zfifo", "zdev"):
        assert f"{tmp_path / name / 'metrics.jsonl'}: not a regular file" in done.stderr.splitlines(), done.stderr


def test_a_sweep_ranks_a_fit_resumed_in_a_new_version_once(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """20 arms each resumed from step 20 in ``version_1`` (Lightning's CSVLogger), one seed not resumed: ranked by
    their trainings' newest rows, 21 runs (not 40 pieces and the seed); the resumed pieces' first rows are read
    from their files' starts (steptable.ingest.resumes.continued)."""
    from tests.library_logs import write_lightning_rows

    for a in range(20):
        write_lightning_rows(tmp_path / f"lr{a}" / "version_0", [(s, {"loss": (1 + a) / (s + 1)}) for s in range(30)])
        write_lightning_rows(tmp_path / f"lr{a}" / "version_1",
                             [(s, {"loss": (100 + a) / (s + 1)}) for s in range(20, 60)])
    write_lightning_rows(tmp_path / "lr0" / "version_2", [(s, {"loss": 7.0 / (s + 1)}) for s in range(60)])
    assert main(["summary", str(tmp_path), "--top", "2", "--by", "loss", "--stat", "last"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("21 runs")
    assert lines[3].startswith("1. lr19 ") and "@59" in lines[3]  # (its last piece's 119/60, not its first's 20/30)


def _arms(root: Path, rows: int) -> None:
    """17 Lightning CSV runs of ``rows`` rows, ``a00``..``a16``, none resumed."""
    from tests.library_logs import write_lightning_rows

    for a in range(17):
        write_lightning_rows(root / f"a{a:02d}" / "version_0", [(s, {"loss": 1 + a + 1 / (s + 1)})
                                                                 for s in range(rows)])


def _tb_sweep(root: Path, rows: int) -> None:
    """17 TensorBoard runs and one, ``res``, resumed 10 steps before its end in a new ``runs/<time>_<host>``."""
    from torch.utils.tensorboard import SummaryWriter

    for a in range(17):
        w = SummaryWriter(str(root / f"a{a:02d}" / "runs" / "Nov30_10-00-00_host"))
        for s in range(rows):
            w.add_scalar("loss", 1 + a + 1 / (s + 1), s)
        w.close()
    for i, (name, steps, base) in enumerate((("Nov30_10-00-00_host", range(rows), 100.0),
                                             ("Nov30_11-00-00_host", range(rows - 10, 2 * rows), 0.0))):
        if i:
            time.sleep(1.05)  # (an event file's name holds the second it was made: the resume is made after)
        w = SummaryWriter(str(root / "res" / "runs" / name))
        for s in steps:
            w.add_scalar("loss", base + 0.5 / (s + 1), s)
        w.close()


def test_a_sweep_ranks_a_resumed_tensorboard_training_once(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    _tb_sweep(tmp_path, 100)  # (more rows than the index keeps of a run: its first rows are kept apart)
    assert main(["summary", str(tmp_path), "--lower"]) == 0
    assert capsys.readouterr().out.startswith("18 runs")


def test_a_sweep_ranks_a_resume_from_a_checkpoint_far_before_the_crash_once(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Logged every step, crashed at step 2199, resumed from the step-2000 checkpoint: the 200 steps logged again
    lie past what the index holds of either piece; where both hold steps they agree."""
    from tests.library_logs import write_lightning_rows

    _arms(tmp_path, 50)
    write_lightning_rows(tmp_path / "res" / "version_0", [(s, {"loss": 100 + 1 / (s + 1)}) for s in range(2200)])
    write_lightning_rows(tmp_path / "res" / "version_1", [(s, {"loss": 0.5 / (s + 1)}) for s in range(2000, 2500)])
    assert main(["summary", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("18 runs")


def test_summary_top_takes_a_resumed_trainings_names(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tests.library_logs import write_lightning_rows

    _arms(tmp_path, 40)
    write_lightning_rows(tmp_path / "res" / "version_0", [(s, {"loss": 100 + 1 / (s + 1)}) for s in range(40)])
    write_lightning_rows(tmp_path / "res" / "version_1", [(s, {"loss": 0.5 / (s + 1)}) for s in range(30, 80)])
    for name in ("res/version_0/metrics.csv", "res/version_1/metrics.csv"):  # (its first piece's, as runs says)
        assert main(["summary", str(tmp_path), "--top", "3", "--run", name]) == 0, name
        out = capsys.readouterr().out
        assert out.startswith("1 run") and "1. res " in out and "@79" in out, out
