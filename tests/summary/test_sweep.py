"""Sweep digests from a run's newest rows: state, the sweep's line, ranking, filters."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from steptable.ingest.files.preview import preview_tail
from steptable.logger.steplogger import StepLogger
from steptable.summary.sweep import RunDigest, config_matches, digest, matches, ranked, run_state, sweep_line
from tests.app.sweephelpers import write_run
from tests.helpers import run_cli


def _digest(run: Path) -> RunDigest:
    path = run / "metrics.jsonl"
    store = preview_tail(path, 1 << 20)
    from steptable.ingest.files.discover import discover
    from steptable.ingest.files.runindex import _load_runinfo

    _load_runinfo(discover([path])[0], store)
    return digest(store, path.stat().st_size)


def test_states(tmp_path: Path) -> None:
    now = time.time()
    ended = _digest(write_run(tmp_path, "a", 1e-5, 20, end="ended"))
    crashed = _digest(write_run(tmp_path, "b", 1e-5, 20, end="crashed"))
    live = _digest(write_run(tmp_path, "c", 1e-5, 20))
    assert (run_state(ended, now), run_state(crashed, now), run_state(live, now)) == ("ended", "crashed", "live")
    assert crashed.errors == 1 and "RuntimeError" in crashed.first_alerts[0]
    assert live.interval is not None and abs(live.interval - 1.0) < 0.01  # rows 1 s apart by their clock
    assert run_state(live, now + 59) == "live"  # at least stall_min_s (60 s)
    assert run_state(live, now + 61) == "stalled"  # quiet past its threshold, not long: it may hang
    assert run_state(live, now + 1801) == "idle"  # past stall_window_s with nothing saying it runs
    assert sweep_line([ended, crashed, live], now) == "3 runs: 1 live, 1 ended, 1 crashed; 1 with errors"


def test_estimated_rows(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(10_000)))
    d = digest(preview_tail(path, 4096), path.stat().st_size)
    assert not d.rows_exact and 9_000 < d.rows < 11_000 and d.last_step == 9999
    whole = digest(preview_tail(path, 1 << 30), path.stat().st_size)
    assert whole.rows_exact and whole.rows == 10_000


def test_ranked_and_filters() -> None:
    ds = [RunDigest(f"r{i}", f"r{i}", "jsonl", 1, 1, True, 0, 0.0, None, None, 1, last={"x": float(i)},
                    mean={"x": float(-i)}, low={"x": float(i)}, high={"x": float(i)}) for i in range(4)]
    ds.append(RunDigest("none", "none", "jsonl", 1, 1, True, 0, 0.0, None, None, 1))
    assert [d.run for d, _ in ranked(ds, "x", "last", True)] == ["r3", "r2", "r1", "r0"]
    assert [d.run for d, _ in ranked(ds, "x", "mean", True)] == ["r0", "r1", "r2", "r3"]
    assert [d.run for d, _ in ranked(ds, "x", "best", False)] == ["r0", "r1", "r2", "r3"]
    assert matches("LR1e-5_seed3", "*seed[34]") and matches("lr1e-5_seed3", "SEED") and not matches("a", "b*")
    assert config_matches({"optim.lr": 1e-05}, "lr", "1e-5") and not config_matches({"lr": 1e-05}, "lr", "2e-5")
    assert config_matches({"model": "qwen-7b"}, "model", "qwen*") and not config_matches({}, "lr", "1")


def _diverging(root: Path, name: str, good: int, steps: int = 30, bad: float = math.nan) -> Path:
    """A run of ``good`` rows of finite loss and reward then ``bad`` losses to ``steps``, an ``eval_acc`` every 10
    rows, and a ``skipped`` key logged as NaN only: written by StepLogger (which writes a NaN as null), or where
    ``bad`` is infinite by Python's json as verl's file logger writes (``Infinity``)."""
    run = root / name
    rows = [{"step": s, "reward": s / steps, "loss": -0.1 if s < good else bad, "skipped": math.nan}
            | ({"eval_acc": 0.5} if s % 10 == 0 else {}) for s in range(steps)]
    if math.isinf(bad):
        run.mkdir()
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return run
    sl = StepLogger(run_dir=run, console=False, alerts=False)
    for r in rows:
        sl.log(r)
    sl.close()
    return run


def test_the_newest_value_of_a_diverged_run_is_its_nan_or_inf(tmp_path: Path) -> None:
    """A loss that went NaN (or inf) is the run's last loss and ranks it nowhere, whatever the statistic; a key
    logged only every tenth row keeps its newest logged value; one logged only as NaN is the run's, as NaN."""
    nan, inf = _digest(_diverging(tmp_path, "nan", 20)), _digest(_diverging(tmp_path, "inf", 20, bad=math.inf))
    fine = _digest(_diverging(tmp_path, "fine", 30))
    assert math.isnan(nan.last["loss"]) and nan.last["eval_acc"] == 0.5 and math.isnan(nan.last["skipped"])
    assert inf.last["loss"] == math.inf
    assert nan.mean["loss"] == -0.1 and "skipped" not in nan.mean  # (the finite rows' mean, for what it shows)
    for stat in ("last", "mean", "best"):
        assert [d.run for d, _ in ranked([nan, inf, fine], "loss", stat, False)] == [fine.run]
    assert [d.run for d, _ in ranked([nan, fine], "reward", "last", True)] == [fine.run, nan.run]


def test_a_run_near_the_largest_float_is_summed_without_overflow(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A run diverged to finite values near the largest float (1.5e308, twice: their sum is past it) among 16: its
    mean is theirs, and ``summary`` ranks the sweep (it exited 70 on fsum's overflow)."""
    for i in range(16):
        _diverging(tmp_path, f"run{i:02d}", 8 if i == 3 else 10, steps=10, bad=1.5e308)
    big = _digest(tmp_path / "run03")
    assert big.last["loss"] == 1.5e308 and big.mean["loss"] == pytest.approx(1.5e308 / 10 * 2, rel=1e-12)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and out.startswith("16 runs: "), out


def test_summary_top_names_the_diverged_runs_and_counts_their_alerts(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A sweep's summary: the runs whose loss ended NaN are named, not ranked among the best by their last finite
    loss, and their non-finite alert counts them among the runs with errors."""
    for i in range(3):
        _diverging(tmp_path, f"bad{i}", 10 + i)
    for i in range(4):
        _diverging(tmp_path, f"good{i}", 30)
    rc, out, _ = run_cli(["summary", "--top", "2", "--by", "loss", "--lower", "--stat", "last", str(tmp_path)], capsys)
    assert rc == 0, out
    lines = out.splitlines()
    assert lines[0] == "7 runs: 7 ended; 3 with errors", out
    assert not any("bad" in line for line in lines[2:-1]), out
    assert lines[-1] == "3 runs with loss NaN or inf at the newest row: bad0, bad1, bad2", out


def _top_line(capsys: pytest.CaptureFixture[str], root: Path) -> str:
    rc, out, _ = run_cli(["summary", "--top", "1", str(root)], capsys)
    assert rc == 0, out
    return next(line for line in out.splitlines() if line.startswith("by "))


def test_an_sb3_sweep_is_ranked_by_its_episode_return(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """stable-baselines3's reward is ``rollout/ep_rew_mean`` (its PPO ``train/loss`` is no objective)."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.logger import configure

    for name, gain in (("ppo_a", 1.0), ("ppo_b", 2.0)):
        log = configure(str(tmp_path / name), ["json"])
        for step in (256, 512, 768):
            log.record("rollout/ep_rew_mean", gain * step / 10)
            log.record("train/loss", 50.0 / gain)
            log.record("time/total_timesteps", step)
            log.dump(step)
        log.close()
    assert _top_line(capsys, tmp_path).startswith("by rollout/ep_rew_mean "), capsys


def test_a_trl_sweep_logged_by_transformers_callbacks_is_ranked_by_its_reward(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """transformers' TensorBoard (W&B, trackio) callbacks log TRL's ``reward`` as ``train/reward``."""
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    for name, gain in (("grpo_a", 1.0), ("grpo_b", 2.0)):
        w = SummaryWriter(str(tmp_path / name / "runs"))
        for step in range(1, 6):
            w.add_scalar("train/loss", 0.1 * gain, step)
            w.add_scalar("train/reward", gain * step, step)
        w.close()
    assert _top_line(capsys, tmp_path).startswith("by train/reward "), capsys


def test_a_sweep_without_a_known_metric_is_not_ranked_by_its_epoch(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Lightning's CSVLogger writes ``epoch`` first: a counter, no metric to rank runs by."""
    pytest.importorskip("lightning")
    from lightning.pytorch.loggers import CSVLogger

    for name, gain in (("lit_a", 1.0), ("lit_b", 2.0)):
        log = CSVLogger(str(tmp_path), name=name)
        for step in range(4):
            log.log_metrics({"epoch": step // 2, "val_acc": gain * step / 10}, step)
        log.save()
    assert _top_line(capsys, tmp_path).startswith("by val_acc "), capsys
