"""The HF Trainer callback, on a real Trainer: a tiny GPT-2 made from a config (nothing downloaded), on CPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli
from tests.integrations.helpers import close_enough, info_of, rows_of, tiny_grpo_trainer, tiny_trainer

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from steptable.integrations.hf import StepTableCallback  # noqa: E402


def merged_history(log_history: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The trainer's own log history, one dict per step (what one JSONL row should hold)."""
    out: dict[int, dict[str, Any]] = {}
    for entry in log_history:
        step = entry["step"]
        out.setdefault(step, {}).update({k: v for k, v in entry.items() if k != "step"})
    return out


def test_one_row_per_logged_step_with_the_trainers_values(tmp_path: Path) -> None:
    trainer = tiny_trainer(tmp_path / "out", [StepTableCallback()])
    trainer.train()
    rows = rows_of(tmp_path / "out")
    history = merged_history(trainer.state.log_history)
    assert [r["step"] for r in rows] == sorted(history) == [5, 10, 15, 20]
    for row in rows:
        want = history[row["step"]]
        assert set(want) <= set(row), set(want) - set(row)
        for k, v in want.items():
            assert close_enough(row[k], v), (row["step"], k, row[k], v)
    assert "eval_loss" in rows[1] and "eval_loss" in rows[3] and "eval_loss" not in rows[0]
    assert "train_runtime" in rows[-1]  # the end-of-training summary joined the last step's row
    info = info_of(tmp_path / "out")
    assert info["closed"] is not None and "end" not in info and info["rows"] == 4
    keys = [c["key"] for c in info["columns"]]
    assert keys[:2] == ["step", "loss"] and "eval_loss" in keys  # eval's column there from the first row


def test_per_class_scores_from_compute_metrics_are_left_out_once_said(tmp_path: Path,
                                                                        capfd: pytest.CaptureFixture[str]) -> None:
    """A list or array that compute_metrics returns (per-class precision) is no step value; two numbers in a list
    read as a fraction in a row (.1/.9 shown, .111 summarised), so they are left out, said once a key."""
    np = pytest.importorskip("numpy")
    trainer = tiny_trainer(tmp_path / "out", [StepTableCallback()])
    trainer.compute_metrics = lambda pred: {"per_class": [0.1, 0.9], "arr": np.array([1.0, 2.0]), "acc": 0.25,
                                            "acc_np": np.float32(0.5)}
    trainer.train()
    rows = rows_of(tmp_path / "out")
    evals = [r for r in rows if "eval_loss" in r]
    assert len(evals) == 2
    assert all(r["eval_acc"] == 0.25 and r["eval_acc_np"] == 0.5 for r in evals)
    assert not any("eval_per_class" in r or "eval_arr" in r for r in rows)
    err = capfd.readouterr().err
    assert err.count("eval_per_class is not one value (list): not in the rows") == 1
    assert err.count("eval_arr is not one value (ndarray): not in the rows") == 1


def test_run_dir_and_arm(tmp_path: Path) -> None:
    cb = StepTableCallback(run_dir=tmp_path / "logs", arm="sft-a")
    trainer = tiny_trainer(tmp_path / "out", [cb], max_steps=10, eval_steps=0)
    trainer.train()
    rows = rows_of(tmp_path / "logs")
    assert [r["step"] for r in rows] == [5, 10] and {r["arm"] for r in rows} == {"sft-a"}
    assert info_of(tmp_path / "logs", "sft-a")["closed"] is not None
    assert not (tmp_path / "out" / "metrics.jsonl").exists()


def test_a_run_dir_no_file_can_have_leaves_the_training_going(tmp_path: Path, capfd: pytest.CaptureFixture[str]
                                                               ) -> None:
    """A run_dir with a NUL in it (a name built from a config): no file can be made there, which is said, and the
    training goes on with its rows printed. The console's verbose log raised ValueError into train()."""
    cb = StepTableCallback(run_dir=f"{tmp_path}/logs\x00a", console=True)
    trainer = tiny_trainer(tmp_path / "out", [cb], max_steps=10, eval_steps=0)
    trainer.train()
    assert trainer.state.global_step == 10
    out, err = capfd.readouterr()
    assert "cannot open the verbose log" in err
    assert [ln.split()[1] for ln in out.splitlines() if ln.startswith("I ") and ln.split()[1:2] in (["5"], ["10"])
            ] == ["5", "10"]


def test_a_relative_run_dir_in_a_deleted_working_directory_leaves_the_training_going(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """The working directory deleted under the job (a scratch directory cleaned up), the rows' directory relative
    to it: no file can be made there, which is said once, and the training ends normally. on_train_begin raised
    FileNotFoundError into train() (the run's path made absolute)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.chdir(scratch)
    trainer = tiny_trainer(tmp_path / "out", [StepTableCallback(run_dir="logs")], max_steps=4, logging_steps=1,
                           eval_steps=0)  # (torch's compiler config, imported with it, asks for the directory)
    scratch.rmdir()
    trainer.train()
    assert trainer.state.global_step == 4
    captured = capfd.readouterr()
    said = captured.out + captured.err  # (a console's warnings are among its lines)
    assert said.count("cannot write logs/metrics.jsonl") == 1 and "could not be made" not in said, said


def test_arm_defaults_to_the_run_name(tmp_path: Path) -> None:
    trainer = tiny_trainer(tmp_path / "out", [StepTableCallback()], max_steps=5, eval_steps=0,
                           run_name="grpo-7")
    trainer.train()
    assert {r["arm"] for r in rows_of(tmp_path / "out")} == {"grpo-7"}


def test_a_process_that_is_not_the_worlds_main_writes_nothing(tmp_path: Path) -> None:
    trainer = tiny_trainer(tmp_path / "out", [StepTableCallback(console=True)], max_steps=10)
    trainer.is_world_process_zero = lambda: False  # what rank 1 of a launch answers
    trainer.train()
    assert trainer.state.log_history  # the trainer did log
    out = tmp_path / "out"
    assert not (out / "metrics.jsonl").exists() and not list(out.glob("steptable*.json"))


def test_console_rows_replace_the_dict_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tiny_trainer(tmp_path / "plain", [StepTableCallback()], max_steps=10).train()
    plain = capsys.readouterr()
    assert "{'loss'" in plain.out  # the trainer's own dict prints, console option off
    assert "metrics.jsonl" not in plain.out and (tmp_path / "plain" / "metrics.jsonl").exists()

    tiny_trainer(tmp_path / "rows", [StepTableCallback(console=True)], max_steps=10).train()
    got = capsys.readouterr()
    assert "{'loss'" not in got.out and "{'eval_loss'" not in got.out
    lines = [ln for ln in got.out.splitlines() if ln.startswith("I ")]
    header = next(ln for ln in lines if "loss" in ln and "step" in ln)
    assert header.split()[1:3] == ["step", "loss"]
    stepped = [ln.split()[1] for ln in lines if ln.split()[1:2] and ln.split()[1].isdigit()]
    assert stepped[:2] == ["5", "10"]
    assert "it/s" in got.err  # the progress bar stays


def test_a_trl_grpo_trainer_gets_one_row_a_step_in_the_trl_layout(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("trl")
    trainer = tiny_grpo_trainer(tmp_path / "grpo", [StepTableCallback(console=True)], max_steps=3)
    trainer.train()
    rows = [r for r in rows_of(tmp_path / "grpo") if "step" in r]
    history = merged_history(trainer.state.log_history)
    assert [r["step"] for r in rows] == [1, 2, 3]
    for row in rows:
        logged = history[row["step"]]
        assert {"reward", "reward_std", "frac_reward_zero_std"} <= set(logged)
        assert all(close_enough(row[k], v) for k, v in logged.items())
    out = capsys.readouterr().out
    assert "{'loss'" not in out  # TRL's dict prints gone, the rows in their place
    header = next(ln for ln in out.splitlines() if ln.startswith("I step "))
    legend = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith(" ") and ln.split()}
    names = {w for w in header.split()[1:] if not re.fullmatch(r"e-?\d+", w)}  # (a power of ten: "lr e-6")
    own = {"step", "loss", "epoch"}  # printed under their own keys: what was logged, no legend line for them
    assert names - own <= set(legend) and not own & set(legend)  # every other header explained once, before the rows
    assert any(" reward: " in line for line in legend.values())  # laid out by the trl schema, which knows `reward`
    assert any("frac_reward_zero_std" in line for line in legend.values())


def test_a_console_callback_leaves_another_trainers_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    StepTableCallback(console=True)  # made, never passed to a trainer
    tiny_trainer(tmp_path / "other", [], max_steps=5, eval_steps=0).train()
    assert "{'loss'" in capsys.readouterr().out


@pytest.mark.parametrize("wrapper", ["uncaught", "reported_then_exit_1"])
def test_training_that_raises_is_marked_ended_with_its_error(tmp_path: Path, wrapper: str) -> None:
    """Uncaught, the run ends with the error's name. Caught by a wrapper that prints it and exits 1 (hydra's way),
    no hook sees the error, but the run never reached on_train_end: at exit it is marked interrupted (it read as a
    run that ended well)."""
    script = textwrap.dedent("""
        import sys
        from transformers import GPT2LMHeadModel
        from tests.integrations.helpers import tiny_config, tiny_trainer
        from steptable.integrations.hf import StepTableCallback

        class Breaks(GPT2LMHeadModel):
            calls = 0
            def forward(self, input_ids=None, labels=None, **kwargs):
                Breaks.calls += 1
                if Breaks.calls > 7:
                    raise FloatingPointError("loss went to nan")
                return super().forward(input_ids=input_ids, labels=labels, **kwargs)

        model = Breaks(tiny_config())
        if sys.argv[2] == "uncaught":
            tiny_trainer(sys.argv[1], [StepTableCallback()], eval_steps=0, model=model).train()
        else:
            import traceback
            try:
                tiny_trainer(sys.argv[1], [StepTableCallback()], eval_steps=0, model=model).train()
            except Exception:
                traceback.print_exc()
                sys.exit(1)
    """)
    out = tmp_path / "out"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(Path(__file__).parent)])}
    done = subprocess.run([sys.executable, "-c", script, str(out), wrapper], capture_output=True, text=True,
                          timeout=300, cwd=root, env=env)
    assert done.returncode == 1 and "FloatingPointError" in done.stderr
    assert [r["step"] for r in rows_of(out)] == [5]
    info = info_of(out)
    want = "FloatingPointError" if wrapper == "uncaught" else "interrupted"
    assert info["end"] == want and info["closed"] is not None


class _Boom(transformers.TrainerCallback):  # type: ignore[misc]
    """Raises once, at the end of step 12 (an OOM a retry loop catches)."""

    armed = True

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.armed and state.global_step == 12:
            self.armed = False
            raise RuntimeError("CUDA out of memory (simulated)")


@pytest.mark.parametrize("retry", ["after_the_except", "inside_the_except"])
def test_a_training_caught_then_run_again_keeps_how_the_first_ended(tmp_path: Path, retry: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A retry loop or a notebook: train() raised, was caught, and train() was called again. The second training
    went on in the first one's run, so the failed attempt had no end and tail said nothing. It is closed when the
    next train() begins: with the error still being handled, else interrupted; the next reads as a resume. Inside
    the ``except``, the retry that ended well was marked ended with the error it was handling."""
    from steptable.table import runinfo

    out = tmp_path / "out"
    trainer = tiny_trainer(out, [_Boom(), StepTableCallback()], eval_steps=0)
    try:
        trainer.train()
    except RuntimeError:
        if retry == "inside_the_except":
            trainer.train()
    if retry == "after_the_except":
        trainer.train()
    info = info_of(out)
    want = "RuntimeError" if retry == "inside_the_except" else "interrupted"
    assert [(end, at) for end, at, _ in runinfo.earlier(info)] == [(want, 5)]
    assert info["closed"] is not None and "end" not in info  # (the second attempt ended well)
    assert [r["step"] for r in rows_of(out)] == [5, 10, 5, 10, 15, 20]
    capsys.readouterr()
    rc, said, _ = run_cli(["tail", "--alerts-only", str(out)], capsys)
    assert rc == (1 if want == "RuntimeError" else 0)  # (an error alert: status 1)
    assert "step 5 run " + ("ended with RuntimeError" if want == "RuntimeError" else "interrupted") in said
    assert "resumed at this step" in said


def test_an_evaluate_after_train_joins_the_last_steps_row(tmp_path: Path) -> None:
    """transformers' example scripts call ``trainer.evaluate()`` after ``train()``: its metrics were left out of
    the rows (the run closed at train end). The run is opened again for it and closed when it ends."""
    from steptable.ingest import load

    trainer = tiny_trainer(tmp_path / "out", [StepTableCallback()], eval_steps=0)
    trainer.train()
    final = trainer.evaluate()
    rows = rows_of(tmp_path / "out")
    assert rows[-1]["step"] == 20 and close_enough(rows[-1]["eval_loss"], final["eval_loss"])
    info = info_of(tmp_path / "out")
    assert info["closed"] is not None and "end" not in info
    (run,) = load([str(tmp_path / "out")]).values()
    assert run.steps[-1] == 20 and not run.resumes  # (one row at step 20 as readers read it, train's and eval's)
    assert "train_runtime" in run.keys and "eval_loss" in run.keys


def test_an_evaluate_before_any_training_writes_its_row_when_it_ends(tmp_path: Path) -> None:
    """A baseline ``trainer.evaluate()`` (or a script that only evaluates a checkpoint): its row was held for a
    later log of its step, so nothing was written until the process exited. A training after it goes on in the
    same run."""
    trainer = tiny_trainer(tmp_path / "out", [StepTableCallback()], max_steps=10, eval_steps=0)
    base = trainer.evaluate()
    rows = rows_of(tmp_path / "out")
    assert [r["step"] for r in rows] == [0] and close_enough(rows[0]["eval_loss"], base["eval_loss"])
    trainer.train()
    assert [r["step"] for r in rows_of(tmp_path / "out")] == [0, 5, 10]
    info = info_of(tmp_path / "out")
    assert info["closed"] is not None and "end" not in info


def test_a_training_after_an_evaluate_caught_then_run_again_keeps_how_the_first_ended(tmp_path: Path) -> None:
    """evaluate() first opened the run as one no training began, so a train() that raised, was caught and was
    run again went on in it with no end said for the failed attempt (as train() alone once did)."""
    from steptable.table import runinfo

    out = tmp_path / "out"
    trainer = tiny_trainer(out, [_Boom(), StepTableCallback()], eval_steps=0)
    trainer.evaluate()
    try:
        trainer.train()
    except RuntimeError:
        pass
    trainer.train()
    info = info_of(out)
    assert [(end, at) for end, at, _ in runinfo.earlier(info)] == [("interrupted", 5)]  # (where the next resumed)
    assert info["closed"] is not None and "end" not in info
    assert [r["step"] for r in rows_of(out)] == [0, 5, 10, 5, 10, 15, 20]


def test_a_notebook_cell_whose_training_raised_marks_the_run_ended_with_its_error(tmp_path: Path) -> None:
    """In IPython (Jupyter) a cell's exception never reaches sys.excepthook: the run stayed open (read as live),
    a rerun in the next cell was told another logger was writing, and at exit the run read 'interrupted'."""
    script = textwrap.dedent("""
        import sys
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_cell('''
        import sys
        from transformers import TrainerCallback
        from tests.integrations.helpers import tiny_trainer
        from steptable.integrations.hf import StepTableCallback
        class Boom(TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                if state.global_step == 7:
                    raise ValueError("bad batch")
        tiny_trainer(sys.argv[1], [Boom(), StepTableCallback()], eval_steps=0).train()
        ''')
        import json
        print("AFTER", json.loads(open(sys.argv[1] + "/steptable.json").read()).get("end"))
        shell.run_cell("tiny_trainer(sys.argv[1], [StepTableCallback()], eval_steps=0).train()")
    """)
    pytest.importorskip("IPython")
    out = tmp_path / "out"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(Path(__file__).parent)])}
    done = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True, timeout=300,
                          cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    assert "AFTER ValueError" in done.stdout
    assert "another StepLogger" not in done.stderr
    info = info_of(out)
    assert info["closed"] is not None and "end" not in info  # the rerun, ended well
    from steptable.table import runinfo

    assert [end for end, _, _ in runinfo.earlier(info)] == ["ValueError"]  # (kept by the rerun: told by tail)


def test_two_trainers_in_one_process_each_keep_their_own_verbose_log(tmp_path: Path) -> None:
    """A notebook trains one model, then another (new output_dir): the second run's verbose log went on into the
    first run's file, since the console sinks a callback installed were taken for the user's own. Each run's
    directory now holds its own log; sinks the user installed are still left alone."""
    script = textwrap.dedent("""
        import sys
        from tests.integrations.helpers import tiny_trainer
        from steptable.integrations.hf import StepTableCallback
        tiny_trainer(sys.argv[1] + "/first", [StepTableCallback(console=True)], max_steps=10, eval_steps=0).train()
        tiny_trainer(sys.argv[1] + "/second", [StepTableCallback(console=True)], max_steps=15, eval_steps=0).train()
        from steptable import setup_logging
        setup_logging("mine", log_dir=sys.argv[1] + "/own")
        tiny_trainer(sys.argv[1] + "/third", [StepTableCallback(console=True)], max_steps=5, eval_steps=0).train()
    """)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(Path(__file__).parent)])}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=300,
                          cwd=root, env=env)
    assert done.returncode == 0, done.stderr

    def rows_in(directory: Path) -> list[int]:
        logs = list(directory.glob("*.log"))
        assert len(logs) == 1, logs
        text = logs[0].read_text()
        return [int(m) for m in re.findall(r"\| INFO +\| [^|]+\| +(\d+) ", text)]

    assert rows_in(tmp_path / "first") == [5, 10]
    assert rows_in(tmp_path / "second") == [5, 10, 15]
    assert rows_in(tmp_path / "own") == [5]  # the user's own sinks: the third run's rows go there
    assert not list((tmp_path / "third").glob("*.log"))
