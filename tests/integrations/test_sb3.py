"""The SB3 output format, under PPO on CartPole (a few hundred timesteps on CPU)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli
from tests.integrations.helpers import close_enough, info_of, rows_of

pytest.importorskip("torch")
sb3 = pytest.importorskip("stable_baselines3")
gym = pytest.importorskip("gymnasium")

from stable_baselines3.common.callbacks import EvalCallback  # noqa: E402
from stable_baselines3.common.logger import KVWriter, Logger  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402

from steptable.integrations.sb3 import StepTableOutputFormat  # noqa: E402


class Recorder(KVWriter):  # type: ignore[misc]
    """What SB3 hands its writers, kept."""

    def __init__(self) -> None:
        self.dumps: list[tuple[int, dict[str, Any]]] = []

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        self.dumps.append((step, dict(key_values)))

    def close(self) -> None:
        pass


def ppo(formats: list[Any], steps: int = 320, eval_freq: int = 128, raise_at: int | None = None,
        verbose: int = 0) -> Any:
    model = sb3.PPO("MlpPolicy", gym.make("CartPole-v1"), n_steps=64, batch_size=32, n_epochs=1, seed=0,
                    verbose=verbose, device="cpu")
    if formats:
        model.set_logger(Logger(None, output_formats=formats))
    callbacks: list[Any] = [EvalCallback(Monitor(gym.make("CartPole-v1")), eval_freq=eval_freq, n_eval_episodes=2,
                                         verbose=0)]
    if raise_at is not None:
        from stable_baselines3.common.callbacks import BaseCallback

        class Breaks(BaseCallback):  # type: ignore[misc]
            def _on_step(self) -> bool:
                if self.num_timesteps >= raise_at:
                    raise MemoryError("replay buffer")
                return True

        callbacks.append(Breaks())
    model.learn(steps, callback=callbacks)
    return model


def test_one_row_per_dump_with_evals_merged(tmp_path: Path) -> None:
    rec = Recorder()
    fmt = StepTableOutputFormat(tmp_path / "ppo", arm="ppo")
    model = ppo([fmt, rec])
    model.logger.close()
    rows = rows_of(tmp_path / "ppo")
    want: dict[int, dict[str, Any]] = {}
    for step, kv in rec.dumps:
        want.setdefault(step, {}).update(kv)
    assert [r["step"] for r in rows] == sorted(want) and len(rows) == 5
    for r in rows:
        for k, v in want[r["step"]].items():
            assert close_enough(r[k], v), (r["step"], k)
    assert [r["step"] for r in rows if "eval/mean_reward" in r] == [128, 256]
    assert all("time/fps" in r for r in rows)  # the eval dump shares its step with the rollout's
    info = info_of(tmp_path / "ppo", "ppo")
    assert info["closed"] is not None and "end" not in info


def test_rows_instead_of_boxes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "sb3-default"))  # SB3's default logger's folder (else in /tmp)
    ppo([], steps=128, verbose=1)
    boxed = capsys.readouterr().out
    assert "| rollout/" in boxed or "| time/" in boxed  # SB3's own tables
    ppo([StepTableOutputFormat(tmp_path / "ppo")], steps=128, verbose=1).logger.close()
    out = capsys.readouterr().out
    assert "| time/" not in out and "-----" not in out
    steps = [ln.split()[1] for ln in out.splitlines() if ln.startswith("I ") and ln.split()[1:2]]
    assert "step" in steps and "64" in steps and "128" in steps


def test_the_losses_from_the_first_update_on_are_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PPO records its train/* metrics from its second dump on (after the first update): the console's columns,
    laid out from the first dump, take them in at the row that brings them."""
    ppo([StepTableOutputFormat(tmp_path / "ppo")], steps=192).logger.close()
    out = capsys.readouterr().out.split("end of run")[0]
    headers = [ln.split()[1:] for ln in out.splitlines() if ln.startswith("I step")]
    assert "loss" not in headers[0] and "loss" in headers[-1]
    assert "train/value_loss" in out and "approximate KL" in out  # (their legend lines)
    rows = [ln.split()[1:] for ln in out.splitlines() if re.match(r"I +\d+ ", ln)]
    assert [r[0] for r in rows] == ["64", "128", "192"] and len(rows[2]) > len(rows[0]) + 5


def test_the_evaluation_reward_is_printed_from_the_first_evaluation_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """EvalCallback's eval/mean_reward is on two dumps of five here (in a real run, one in hundreds): the console and
    ``tail`` show it, ahead of PPO's constant settings (clip_range, a fixed learning rate)."""
    rec = Recorder()
    ppo([StepTableOutputFormat(tmp_path / "ppo"), rec]).logger.close()
    out = capsys.readouterr().out.split("end of run")[0]
    lines = out.splitlines()
    header = next(ln.split()[0] for ln in lines if ln.split()[1:2] == ["eval/mean_reward:"])  # its legend line
    want = {step: kv["eval/mean_reward"] for step, kv in rec.dumps if "eval/mean_reward" in kv}
    assert sorted(want) == [128, 256]
    for step, value in want.items():
        at = next(i for i, ln in enumerate(lines) if re.match(rf"I +{step} ", ln))
        head = next(ln for ln in reversed(lines[:at]) if ln.startswith("I step"))
        end = re.search(rf" {re.escape(header)}(?= |$)", head)
        assert end is not None, head  # the header the row is printed under has the column
        cell = lines[at][: end.end()].split()[-1]  # right-aligned under its header
        assert float(cell) == pytest.approx(value, rel=5e-3), (step, cell)
    capsys.readouterr()
    rc, table, _ = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0 and "eval_rew" in table.splitlines()[0].split()


@pytest.mark.usefixtures("rank_one")
def test_rank_one_writes_nothing(tmp_path: Path) -> None:
    ppo([StepTableOutputFormat(tmp_path / "ppo")], steps=128).logger.close()
    assert not (tmp_path / "ppo").exists()


def test_learning_that_raises_is_marked_ended_with_its_error(tmp_path: Path) -> None:
    fmt = StepTableOutputFormat(tmp_path / "ppo")
    with pytest.raises(MemoryError) as caught:
        ppo([fmt], raise_at=200)
    sys.excepthook(caught.type, caught.value, caught.tb)  # what the interpreter does with it, uncaught
    assert [r["step"] for r in rows_of(tmp_path / "ppo")] == [64, 128, 192]
    assert info_of(tmp_path / "ppo")["end"] == "MemoryError"


class _Shapeless:
    """A recorded value whose shape cannot be read (its ``ndim`` raises, as a proxy of a freed array's)."""

    @property
    def ndim(self) -> int:
        raise RuntimeError("freed")


def test_a_recorded_value_whose_shape_raises_is_left_out_and_learning_goes_on(tmp_path: Path) -> None:
    """The output format raised the value's RuntimeError into SB3's dump, ending learn()."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Records(BaseCallback):  # type: ignore[misc]
        def _on_step(self) -> bool:
            self.logger.record("custom/odd", _Shapeless())
            return True

    fmt = StepTableOutputFormat(tmp_path / "ppo", console=False)
    model = sb3.PPO("MlpPolicy", gym.make("CartPole-v1"), n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.set_logger(Logger(None, output_formats=[fmt]))
    model.learn(192, callback=Records())
    fmt.close()
    rows = rows_of(tmp_path / "ppo")
    assert [r["step"] for r in rows] == [64, 128, 192] and not any("custom/odd" in r for r in rows)


def test_learning_stopped_by_sigterm_keeps_the_last_dumps_row(tmp_path: Path) -> None:
    """SIGTERM (a preempted job) between two dumps: the run is marked interrupted with every dump's row, as SB3's
    own CSV has them. The last dump's row, held open for an evaluation of its timestep, died with the process."""
    script = textwrap.dedent("""
        import os, signal, sys
        import gymnasium as gym
        import stable_baselines3 as sb3
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.logger import CSVOutputFormat, Logger
        from steptable.integrations.sb3 import StepTableOutputFormat

        class Preempted(BaseCallback):
            def _on_step(self):
                if self.num_timesteps == 150:
                    os.kill(os.getpid(), signal.SIGTERM)
                return True

        out = sys.argv[1]
        model = sb3.PPO("MlpPolicy", gym.make("CartPole-v1"), n_steps=64, batch_size=32, n_epochs=1, seed=0,
                        device="cpu")
        model.set_logger(Logger(None, output_formats=[StepTableOutputFormat(out, console=False),
                                                      CSVOutputFormat(os.path.join(out, "progress.csv"))]))
        model.learn(320, callback=Preempted())
    """)
    out = tmp_path / "ppo"
    out.mkdir()
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True, timeout=120,
                          cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == -signal.SIGTERM, done.stderr[-2000:]
    csv = (out / "progress.csv").read_text().splitlines()
    dumped = [int(float(v)) for v in (line.split(",")[csv[0].split(",").index("time/total_timesteps")]
                                      for line in csv[1:])]
    assert dumped == [64, 128]
    assert [r["step"] for r in rows_of(out)] == dumped
    info = info_of(out)
    assert info["end"] == "interrupted" and info["rows"] == 2


def test_a_hostile_key_and_arm_reach_the_console_as_inert_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    """Keys recorded through SB3's own Logger and the arm: a newline that would fake a printed row, escape
    sequences (a clipboard write, a screen clear), a bidi override. Every dump's row is printed, nothing of them
    reaches the console raw, and no line is a fake row."""
    key = "custom/completion_length\nI    99 fake row\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e"
    fmt = StepTableOutputFormat(tmp_path / "ppo", arm="ppo\x1b]0;title\x07\u202e")
    logger = Logger(None, output_formats=[fmt])
    for step in (64, 128):
        logger.record("rollout/ep_rew_mean", 20.0 + step)
        logger.record(key, 1451.0)
        logger.dump(step)
    logger.close()
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert [r["step"] for r in rows_of(tmp_path / "ppo")] == [64, 128]
    printed = [ln.split()[1] for ln in captured.out.splitlines() if ln.startswith("I ") and ln.split()[1:2]]
    assert "64" in printed and "128" in printed and "log failed" not in text
    assert "99" not in printed  # (the key's newline made no row of its own)
    assert not any(bad in text for bad in ("\x1b", "\x07", "\u202e"))


def test_tail_shows_the_columns_the_console_printed_without_the_counters(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The console leaves SB3's counters of the step out (time/iterations, time/total_timesteps, train/n_updates);
    ``tail`` and ``legend`` of the run keep them out too (a column filter still shows them)."""
    ppo([StepTableOutputFormat(tmp_path / "ppo")], steps=192).logger.close()
    capsys.readouterr()
    rc, table, _ = run_cli(["tail", "-n", "1", str(tmp_path)], capsys)
    header = table.splitlines()[0].split()
    assert rc == 0 and {"ep_rew", "loss", "kl"} <= set(header)
    assert not {"t/iterations", "t/total_timesteps", "n_updates"} & set(header), header
    rc, legend, _ = run_cli(["legend", str(tmp_path)], capsys)
    kept_out = legend.split("kept out of the table")[1].split("\n\n")[0]
    assert rc == 0 and all(k in kept_out for k in ("time/iterations", "time/total_timesteps", "train/n_updates"))
    rc, filtered, _ = run_cli(["tail", "-n", "1", "--columns", "time/*", str(tmp_path)], capsys)
    assert rc == 0 and "t/iterations" in filtered.splitlines()[0].split()
