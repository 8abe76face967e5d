"""What every adapter shares: no framework imported by steptable itself, a one-line hint without the extra, and the
automatic columns of the first row."""

from __future__ import annotations

import importlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from steptable.logger.autocols import auto_columns
from tests.integrations.helpers import rows_of

ADAPTERS = {
    "hf": "transformers",
    "lightning": "lightning",
    "accelerate": "accelerate",
    "sb3": "stable_baselines3",
}


def test_importing_steptable_imports_no_framework() -> None:
    code = ("import sys, steptable, steptable.integrations.rows, steptable.integrations.tinker\n"
            "from steptable import StepLogger\n"
            f"print(sorted(m for m in {sorted([*ADAPTERS.values(), 'tinker_cookbook'])!r} if m in sys.modules))")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("adapter", "framework"), sorted(ADAPTERS.items()))
def test_without_the_extra_one_line_names_it(adapter: str, framework: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [framework, *(m for m in sys.modules if m.startswith(framework + "."))]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed (submodules a test before loaded too)
    monkeypatch.delitem(sys.modules, f"steptable.integrations.{adapter}", raising=False)
    with pytest.raises(ImportError) as caught:
        importlib.import_module(f"steptable.integrations.{adapter}")
    msg = str(caught.value)
    assert msg == f"steptable.integrations.{adapter} needs {framework}: pip install 'steptable[{adapter}]'"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_use_steptable_without_tinker_cookbook_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from steptable.integrations.tinker import use_steptable

    monkeypatch.setitem(sys.modules, "tinker_cookbook", None)
    monkeypatch.setitem(sys.modules, "tinker_cookbook.utils", None)
    monkeypatch.setitem(sys.modules, "tinker_cookbook.utils.ml_log", None)
    with pytest.raises(ImportError, match=r"pip install 'steptable\[tinker\]'"):
        use_steptable(object())


def test_auto_columns_take_the_trl_schema_for_trl_keys() -> None:
    row = {"step": 1, "loss": 0.1, "reward": 0.5, "reward_std": 0.2, "kl": 0.01, "completions/mean_length": 120.0,
           "grad_norm": 1.2, "learning_rate": 1e-6, "epoch": 0.1, "frac_reward_zero_std": 0.25}
    cols = auto_columns(row, expect=["eval_loss"], max_width=200)
    heads = {c.key: c.header for c in cols}
    assert heads["reward"] == "reward" and heads["frac_reward_zero_std"] == "zero_sd"  # the trl schema's headers
    assert "eval_loss" in heads and cols[0].key == "step"


def test_auto_columns_rank_generic_keys_and_fit_the_width() -> None:
    row = {"step": 0, **{f"metric_{i:02d}": i * 0.37 for i in range(40)}, "note": "x"}
    cols = auto_columns(row, max_width=80)
    assert cols[0].key == "step" and sum(c.width + 1 for c in cols) - 1 <= 80
    assert all(c.desc == "" for c in cols[1:])  # "as logged" says nothing: no legend line paid for it
    assert auto_columns(row, max_width=400)[-1].key == "note"  # text ranks after numbers


def test_a_run_log_with_an_unknown_schema_says_so_and_lays_out_its_rows_as_detected(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from steptable.integrations.rows import RunLog

    run = RunLog(tmp_path / "run", schema="no-such-schema", expect=("eval_loss",), rank=0)
    run.add({"loss": 0.5, "learning_rate": 1e-6}, step=1)
    run.add({"loss": 0.25, "learning_rate": 1e-6}, step=2)
    run.close()
    out = capsys.readouterr()
    assert "schema 'no-such-schema' not used" in out.out + out.err
    # as the generic schema lays them out: the expected evaluation key kept, and leading
    assert run.logger is not None and [c.key for c in run.logger.cols] == ["step", "eval_loss", "loss", "learning_rate"]


def test_runs_going_at_the_same_time_keep_the_first_runs_verbose_log(tmp_path: Path) -> None:
    """Two RunLogs open at once (the sinks are the process's): the second does not take the verbose log over, so
    the first run's later rows never land in the second run's file, read as the second run's; one run after the
    other, each has its own (tests/integrations/test_hf.py)."""
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        from steptable.integrations.rows import RunLog
        root = Path(sys.argv[1])
        a = RunLog(root / "a", "a", console=True, rank=0)
        for s in range(3):
            a.add({"loss_a": 101 + s}, s)
        b = RunLog(root / "b", "b", console=True, rank=0)
        for s in range(3):
            b.add({"loss_b": 201 + s}, s)
        for s in range(3, 6):
            a.add({"loss_a": 101 + s}, s)
        a.close()
        b.close()
        c = RunLog(root / "c", "c", console=True, rank=0)
        c.add({"loss_c": 301}, 0)
        c.close()
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    a_log = "".join(p.read_text() for p in (tmp_path / "a").glob("*.log"))
    b_log = "".join(p.read_text() for p in (tmp_path / "b").glob("*.log"))
    assert sorted(re.findall(r"\b(10\d)\n", a_log)) == [str(101 + s) for s in range(6)], a_log
    assert not re.findall(r"\b(10\d)\n", b_log), b_log
    assert "301" in "".join(p.read_text() for p in (tmp_path / "c").glob("*.log"))  # (both ended: its own again)


def test_a_run_log_of_a_rank_that_writes_nothing_leaves_sigterm_at_its_default(tmp_path: Path) -> None:
    """A RunLog holds its open row for SIGTERM only where it may write it: a rank known to write nothing (given,
    or torchrun's RANK) gets no handler, which would only delay its death in a hung collective (as a StepLogger's)."""
    caught = {}
    for how in ("rank=1", "env", "rank=0"):
        script = textwrap.dedent(f"""
            import os, signal, sys
            if {how!r} == "env":
                os.environ["RANK"] = "1"
            from steptable.integrations.rows import RunLog
            run = RunLog(sys.argv[1], console=False{", rank=" + how[-1] if how != "env" else ""})
            print(signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
        """)
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path / how)], capture_output=True, text=True,
                              timeout=120, cwd=Path(__file__).resolve().parents[2], env=env)
        caught[how] = done.stdout.strip()
    assert caught == {"rank=1": "False", "env": "False", "rank=0": "True"}


@pytest.fixture
def cwd_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The working directory is deleted under the job (a scratch directory cleaned up while it runs)."""
    gone = tmp_path / "scratch"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()


def log_three_rows(run: object) -> None:
    """What an adapter does from a framework's hooks: a row a step, flushed where the step ends, then closed."""
    from steptable.integrations.rows import RunLog

    assert isinstance(run, RunLog)
    for step in range(3):
        run.add({"loss": 1 / (step + 1)}, step)
        run.flush()
    run.close()


def test_a_relative_run_dir_in_a_deleted_working_directory_is_said_once_and_training_goes_on(
        cwd_gone: None, capfd: pytest.CaptureFixture[str]) -> None:
    """No file can be made at a relative path once the working directory is gone: the RunLog raised
    FileNotFoundError (making its path absolute) into the framework's hook that made it. Its StepLogger is made
    (the rows print where a console is asked for), and the file that cannot be written is said once."""
    from steptable.integrations.rows import RunLog

    for console in (False, True):
        log_three_rows(RunLog("logs", console=console, rank=0))
        captured = capfd.readouterr()
        said = captured.out + captured.err  # (with a console, the writer's warning is one of its lines)
        assert said.count("cannot write logs/metrics.jsonl") == 1, said
        assert "could not be made" not in captured.err and "Traceback" not in captured.err
        assert (re.search(r"(?m)^I +2 ", captured.out) is not None) == console, captured.out


def test_a_relative_log_dir_in_a_deleted_working_directory_leaves_the_rows_going_to_the_run_dir(
        cwd_gone: None, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """An absolute run_dir with a relative log_dir for the verbose log: the console's sinks raised
    FileNotFoundError from RunLog.flush (setup_logging made the log's path absolute); the verbose log is said to be
    unavailable and the rows go to the JSONL."""
    from steptable.integrations.rows import RunLog

    log_three_rows(RunLog(tmp_path / "run", log_dir="verbose", console=True, rank=0))
    assert [r["step"] for r in rows_of(tmp_path / "run")] == [0, 1, 2]
    assert capfd.readouterr().err.count("cannot open the verbose log") == 1


class _Unprintable:
    """An arm whose text cannot be had (its __str__ raises, as a config node's of a closed store)."""

    def __str__(self) -> str:
        raise RuntimeError("no text")

    __repr__ = __str__


@pytest.mark.parametrize("console", [False, True])
def test_an_arm_whose_text_raises_is_said_once_and_training_goes_on(
        console: bool, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The StepLogger is made at the first row, from the framework's hook: its arm's str() raised out of
    RunLog.flush."""
    from steptable.integrations.rows import RunLog

    log_three_rows(RunLog(tmp_path / "run", _Unprintable(), console=console, rank=0))  # type: ignore[arg-type]
    said = capfd.readouterr().err.splitlines()
    assert len(said) == len(set(said)) and "could not be made (RuntimeError('no text'))" in said[-1], said


def test_a_hyperparameter_whose_text_raises_leaves_the_others_in_args_json(tmp_path: Path) -> None:
    """One value of a config that has no text (its __str__ raises) cost the whole args.json."""
    import json

    from steptable.integrations.rows import RunLog

    run = RunLog(tmp_path / "run", console=False, rank=0)
    assert run.hparams({"lr": 0.1, "node": _Unprintable()}) is not None
    run.close()
    assert json.loads((tmp_path / "run" / "args.json").read_text()) == {"lr": 0.1, "node": "<_Unprintable>"}


class _ItemWithoutShape:
    """A value with ``item()`` whose shape cannot be read (its ``ndim`` raises)."""

    def item(self) -> float:
        return 1.0

    @property
    def ndim(self) -> int:
        raise RuntimeError("freed")


def test_a_value_whose_shape_raises_is_left_out_of_its_row_alone(tmp_path: Path) -> None:
    """Reading the value's shape raised inside RunLog.add, and the whole row was lost with it."""
    from steptable.integrations.rows import RunLog

    run = RunLog(tmp_path / "run", console=False, rank=0)
    run.add({"loss": 0.5, "odd": _ItemWithoutShape()}, 0)
    run.close()
    assert [(r["step"], r["loss"], "odd" in r) for r in rows_of(tmp_path / "run")] == [(0, 0.5, False)]


TORCHRUN_SCRIPT = textwrap.dedent("""
    import os, sys, time
    import torch, torch.distributed as dist
    from steptable.integrations.rows import RunLog

    run_dir, how = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    run = RunLog(run_dir, console=False)  # (the rank from torchrun's RANK: only rank 0 writes)
    for step in range(100_000):
        t = torch.ones(1) * step
        dist.all_reduce(t)
        run.add({"loss": 1.0 / (step + 1), "sum": t.item()}, step)  # (the row stays open for this step's eval)
        if rank == 0 and step == 20:
            with open(run_dir + ".ready", "w") as f:
                f.write(str(step))
            if how == "held":  # (as a device sync on a collective a dead peer never completes)
                torch.futures.Future().wait()
        time.sleep(0.01)
""")


@pytest.mark.parametrize("how", ["looping", "held"])
def test_sigterm_to_torchrun_writes_rank_zeros_open_row_and_the_job_ends_as_it_would(tmp_path: Path,
                                                                                       how: str) -> None:
    """A preempted torchrun job (SIGTERM to the launcher, which sends it on to its workers and SIGKILLs those
    alive 30 s later): rank 0's open row was lost and the run read as killed, as no handler was installed under a
    launcher. Now the row is written and the run marked interrupted, and rank 0 still dies of SIGTERM at once, its
    main thread running Python or held in a C++ wait (no worker is left for the launcher's SIGKILL)."""
    pytest.importorskip("torch.distributed.run")
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "STEPTABLE_SIGTERM")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    launcher = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
                                 "2", "--no-python", sys.executable, "-c", TORCHRUN_SCRIPT,
                                 str(run), how], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    ready = Path(f"{run}.ready")
    try:
        for _ in range(1200):
            if ready.exists() or launcher.poll() is not None:
                break
            time.sleep(0.1)
        assert ready.exists(), launcher.communicate(timeout=60)[0][-3000:]
        if how == "looping":
            time.sleep(0.2)  # (a few more steps: the open row is a later one)
        launcher.send_signal(signal.SIGTERM)
        out = launcher.communicate(timeout=120)[0]
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert "forcefully exiting" not in out and "Sending process" in out, out[-3000:]
    rows = rows_of(run)
    last = rows[-1]["step"]
    assert [r["step"] for r in rows] == list(range(last + 1)) and last >= 20
    if how == "held":
        assert last == 20  # the open row of the step the main thread is held in
    from steptable.table import runinfo

    info = json.loads((run / runinfo.file_name(None)).read_text())
    assert info.get("end") == "interrupted" and info["rows"] == last + 1


def test_each_run_says_its_own_failure_once_though_an_earlier_one_was_collected(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A run's failures were said once per id() of its RunLog: a later RunLog made where a collected one was (CPython
    gives its memory again, and so its id()) had its failure left unsaid."""
    from steptable.integrations.rows import RunLog

    ids: set[int] = set()
    for i in range(200):
        run = RunLog(tmp_path / f"run{i}", _Unprintable(), console=False, rank=0)  # type: ignore[arg-type]
        again = id(run) in ids
        ids.add(id(run))
        capfd.readouterr()
        log_three_rows(run)
        del run
        if again:  # a collected run's id(), given again
            assert "the run's logger could not be made" in capfd.readouterr().err
            return
    pytest.skip("no RunLog was made where a collected one had been")
