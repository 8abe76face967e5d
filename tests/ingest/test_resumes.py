"""A training resumed in a new logger directory read as one run (steptable.ingest.resumes), on files Lightning's own
loggers write: a real Trainer fit resumed from its checkpoint, and CSVLogger called as the Trainer calls it."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

from steptable.cli.main import main
from steptable.ingest.files.follow import Follower
from steptable.ingest.resumes import HOLD_S
from tests.helpers import run_cli
from tests.ingest.writers import read_once, run_writer, sine_csv
from tests.library_logs import write_lightning_rows

torch = pytest.importorskip("torch")
L = pytest.importorskip("lightning.pytorch")


class Regress(L.LightningModule):  # type: ignore[misc,name-defined]
    """y = 2x + 1 by one linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)

    def training_step(self, batch: Any, i: int) -> Any:
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.05)


def _loader(seed: int) -> Any:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(512, 1, generator=g)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, 2 * x + 1), batch_size=8)


def _fit(root: Path, arm: str, steps: int, seed: int = 0, ckpt: Path | None = None,
         save_at: int | None = None) -> Path:
    """A Trainer of ``steps`` steps logging to Lightning's CSVLogger and TensorBoardLogger under ``root/csv/arm`` and
    ``root/tb/arm`` (a new ``version_N`` each), resumed from ``ckpt`` when given; with ``save_at``, a checkpoint of
    that step is kept (its path returned)."""
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    torch.manual_seed(seed)
    callbacks = [ModelCheckpoint(dirpath=root / "ckpt" / arm, every_n_train_steps=save_at, save_top_k=-1)] \
        if save_at else []
    trainer = L.Trainer(max_steps=steps, log_every_n_steps=5, logger=[CSVLogger(root / "csv", name=arm),
                        TensorBoardLogger(root / "tb", name=arm)], callbacks=callbacks,
                        enable_checkpointing=bool(save_at), enable_progress_bar=False, enable_model_summary=False,
                        accelerator="cpu", devices=1)
    trainer.fit(Regress(), _loader(seed), ckpt_path=ckpt)
    return root / "ckpt" / arm / f"epoch=0-step={save_at}.ckpt"


@pytest.fixture(scope="module")
def fits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``csv/``, ``tb/``: arm ``resumed`` fit to step 30 keeping its step-20 checkpoint, then resumed from it in a new
    process's logger to step 60 (steps 20-29 logged again); arm ``seeds``: two fresh fits of 40 steps."""
    root = tmp_path_factory.mktemp("fits")
    ckpt = _fit(root, "resumed", 30, save_at=20)
    _fit(root, "resumed", 60, ckpt=ckpt)
    _fit(root, "seeds", 40, seed=1)
    _fit(root, "seeds", 40, seed=2)
    return root


def _steps_rows(store: Any) -> list[dict[str, Any]]:
    return store.rows()  # type: ignore[no-any-return]


def _by_arm(f: Follower) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for st in f.stores.values():
        out.setdefault(st.arm, []).append(st)
    return out


def _rows(*paths: Path) -> list[dict[str, Any]]:
    (st,) = read_once(*paths).stores.values()
    return [r for r in _steps_rows(st) if "train_loss" in r]


@pytest.mark.parametrize("kind", ["csv", "tb"])
def test_a_fit_resumed_from_its_checkpoint_in_a_new_version_is_one_run(fits: Path, kind: str) -> None:
    versions = sorted((fits / kind / "resumed").iterdir())
    assert [v.name for v in versions] == ["version_0", "version_1"]
    first, second = _rows(versions[0]), _rows(versions[1])
    assert first[-1]["step"] == 29 and second[0]["step"] == 24  # (the checkpoint's step 20, then every 5th)

    (run,) = _by_arm(read_once(fits / kind))["resumed"]
    got = [r for r in _steps_rows(run) if "train_loss" in r]
    assert [r["step"] for r in got] == [r["step"] for r in first if r["step"] < 24] + [r["step"] for r in second]
    # the steps logged again are the resumed process's
    assert [r["train_loss"] for r in got if r["step"] >= 24] == [r["train_loss"] for r in second]
    assert got[-1]["step"] == 59 and run.resumes == [24]
    assert run.run.startswith("resumed/version_0")


@pytest.mark.parametrize("kind", ["csv", "tb"])
def test_fresh_fits_in_version_directories_stay_runs_of_their_own(fits: Path, kind: str) -> None:
    seeds = _by_arm(read_once(fits / kind))["seeds"]
    assert len(seeds) == 2 and all(st.step_at(0) == 4 and not st.resumes for st in seeds)


def test_compare_of_arms_resumed_in_new_versions(fits: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["compare", str(fits / "csv"), "--baseline", "seeds"])
    text, err = capsys.readouterr()
    assert status == 0, err
    assert "resumed 1 seed" in text and "seeds 2 seeds" in text


def test_runs_lists_a_resumed_fit_once_with_its_resume(fits: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", str(fits / "csv" / "resumed")]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert "rows  steps 4-59" in line and "resumed 24  pieces version_0 + version_1" in line

def test_two_trainings_both_resumed_beside_each_other_stay_apart(tmp_path: Path) -> None:
    # which resumed piece goes on which training is not known from the steps
    sine_csv(tmp_path / "arm" / "version_0", range(0, 10))
    sine_csv(tmp_path / "arm" / "version_1", range(0, 10), 2.0)
    sine_csv(tmp_path / "arm" / "version_2", range(10, 20))
    assert sorted(len(st) for st in read_once(tmp_path).stores.values()) == [10, 10, 10]


def test_pieces_join_in_the_order_of_their_directories_numbers(tmp_path: Path) -> None:
    for v, steps in [(0, range(0, 5)), (2, range(5, 10)), (10, range(10, 15))]:
        sine_csv(tmp_path / "arm" / f"version_{v}", steps)
    (run,) = read_once(tmp_path).stores.values()
    assert list(run.steps) == list(range(15)) and run.resumes == [5, 10]


def test_a_checkpoint_evaluated_in_a_process_of_its_own_stays_apart(tmp_path: Path) -> None:
    # (trainer.validate / trainer.test of the step-10 checkpoint: one row of scores at its step)
    sine_csv(tmp_path / "arm" / "version_0", range(0, 20))
    write_lightning_rows(tmp_path / "arm" / "version_1", [(10, {"loss": 0.5})])
    write_lightning_rows(tmp_path / "arm" / "version_2", [(10, {"test_acc": 0.9}), (11, {"test_acc": 0.8})])
    # (a row of scores just written is held back a while, as a resumed process's first row is: never joined)
    runs = read_once(tmp_path).stores.values()
    assert sorted(len(st) for st in runs) == [2, 20] and not any(st.resumes for st in runs)
    old = time.time() - 2 * HOLD_S
    os.utime(tmp_path / "arm" / "version_1" / "metrics.csv", (old, old))
    assert sorted(len(st) for st in read_once(tmp_path).stores.values()) == [1, 2, 20]


def _hf(out: Path, steps: int, resume: bool) -> None:
    """A transformers Trainer of ``steps`` steps (a tiny GPT-2 from its config) reporting to TensorBoard under its
    default ``out/runs/<time>_<host>``, a checkpoint every 4 steps; ``resume``: from the step-4 checkpoint."""
    run_writer(f"""
        from tests.ingest.hftiny import tiny_trainer

        tiny_trainer(output_dir={str(out)!r}, max_steps={steps}, logging_steps=1, save_steps=4,
                     report_to=["tensorboard"]).train(
            resume_from_checkpoint={str(out / "checkpoint-4") if resume else None!r})
    """, {}, timeout=300)


def test_a_transformers_training_resumed_from_a_checkpoint_is_one_run(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("tensorboard")
    out = tmp_path / "out"
    _hf(out, 8, resume=False)
    _hf(out, 12, resume=True)
    assert len(list((out / "runs").iterdir())) == 2  # (a directory of each process's time)
    (run,) = [st for st in read_once(out / "runs").stores.values()]
    logged = [r["step"] for r in run.rows() if "train/loss" in r]
    assert logged == list(range(1, 13)) and run.resumes == [5]


def test_a_batch_size_sweep_logging_per_epoch_is_two_runs(tmp_path: Path) -> None:
    """Two fresh fits (batch 64, then batch 32) logging once an epoch (``self.log(..., on_epoch=True)``): the second's
    first row is at a later step than the first's, so it is taken for its resume and replaces the first's rows, though
    its epoch counts from 0 again (a resumed fit goes on with its checkpoint's epoch)."""
    arm = tmp_path / "sweep"
    write_lightning_rows(arm / "version_0", [(8 * e + 7, {"train_loss_epoch": 2.0 / (e + 1), "epoch": e})
                                             for e in range(4)])
    write_lightning_rows(arm / "version_1", [(16 * e + 15, {"train_loss_epoch": 1.0 / (e + 1), "epoch": e})
                                             for e in range(4)])
    assert sorted(len(st) for st in read_once(tmp_path).stores.values()) == [4, 4]


def test_a_lightning_tensorboard_fit_with_hparams_resumed_is_one_run(tmp_path: Path) -> None:
    """TensorBoardLogger.log_hyperparams (the Trainer calls it for a module that saved its hyper-parameters) logs
    ``hp_metric`` -1 at step 0 in every version: the resumed version's first step is then 0, not the checkpoint's."""
    from lightning.pytorch.loggers import TensorBoardLogger

    for version, steps in (("version_0", range(4, 30, 5)), ("version_1", range(24, 60, 5))):
        lg = TensorBoardLogger(tmp_path / "tb", name="arm", version=version)
        lg.log_hyperparams({"lr": 0.05})
        for s in steps:
            lg.log_metrics({"train_loss": 1 / (s + 1), "epoch": 0}, step=s)
        lg.finalize("success")
    (run,) = read_once(tmp_path / "tb").stores.values()
    assert run.resumes == [24]


def test_transformers_run_dirs_across_a_month_are_joined_in_time_order(tmp_path: Path) -> None:
    """transformers names its TensorBoard directory ``%b%d_%H-%M-%S_<host>``: a training begun on Nov 30 and resumed on
    Dec 1 has ``Dec01_...`` sort before ``Nov30_...`` by name."""
    from torch.utils.tensorboard import SummaryWriter

    runs = tmp_path / "out" / "runs"
    for name, steps in (("Nov30_23-59-50_host", range(1, 9)), ("Dec01_00-00-05_host", range(5, 13))):
        time.sleep(1.05)  # (an event file's name holds the second it was made: the resume is made after)
        w = SummaryWriter(str(runs / name))
        for s in steps:
            w.add_scalar("train/loss", 1 / s, s)
        w.close()
    (run,) = read_once(runs).stores.values()
    assert list(run.steps) == list(range(1, 13)) and run.resumes == [5]


def test_two_experiments_under_torchs_default_summarywriter_dir_stay_apart(tmp_path: Path) -> None:
    """torch's ``SummaryWriter()`` logs each process to ``runs/<Mon><day>_<H-M-S>_<host>``: a project's unrelated
    experiments pile up there as siblings. B logs every 10th step from 10, A every step from 0: B is taken for A's
    resume and A's rows from step 10 on are replaced (A is left with 10 of its 100 rows)."""
    from torch.utils.tensorboard import SummaryWriter

    runs = tmp_path / "runs"
    w = SummaryWriter(str(runs / "Nov30_22-33-17_host"))
    for s in range(100):
        w.add_scalar("loss", 1 / (s + 1), s)
    w.close()
    w = SummaryWriter(str(runs / "Nov30_22-40-02_host"))
    for s in range(10, 200, 10):
        w.add_scalar("loss", 5 + math.sin(s), s)
    w.close()
    assert sorted(len(st) for st in read_once(runs).stores.values()) == [19, 100]


def test_a_resumed_piece_s_own_id_names_its_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # (an agent that polled ``--run arm/version_1/metrics.csv`` before the join keeps the name it knew)
    sine_csv(tmp_path / "arm" / "version_0", range(0, 10))
    sine_csv(tmp_path / "arm" / "version_1", range(8, 14), 3.0)
    rc, out, _ = run_cli(["tail", str(tmp_path), "--run", "arm/version_1/metrics.csv", "-n", "3"], capsys)
    assert rc == 0 and [ln.split()[0] for ln in out.splitlines()[-3:]] == ["11", "12", "13"], out
    rc, out, _ = run_cli(["summary", str(tmp_path), "--run", "arm/version_1/metrics.csv"], capsys)
    assert rc == 0 and "resumed 8" in out, out


def test_a_one_row_piece_long_written_is_a_run_of_its_own(tmp_path: Path) -> None:
    sine_csv(tmp_path / "arm" / "version_0", range(0, 10))
    sine_csv(tmp_path / "arm" / "version_1", range(8, 9), 3.0)
    old = time.time() - 2 * HOLD_S
    os.utime(tmp_path / "arm" / "version_1" / "metrics.csv", (old, old))
    assert sorted(len(st) for st in read_once(tmp_path).stores.values()) == [1, 10]


def test_an_index_asking_again_reuses_the_ends_of_runs_it_read_before(tmp_path: Path) -> None:
    # (a sweep's index asks on each of its changes: only a run read again is put together again)
    from steptable.ingest.files.preview import preview_tail
    from steptable.ingest.files.runindex import head_of
    from steptable.ingest.resumes import index_trainings, newest

    sine_csv(tmp_path / "arm" / "version_0", range(0, 200))
    sine_csv(tmp_path / "arm" / "version_1", range(190, 400), 3.0)

    def tail(v: int) -> Any:
        st = preview_tail(tmp_path / "arm" / f"version_{v}" / "metrics.csv", 2048, "csv")
        st.run, st.arm = f"v{v}", "arm"
        return newest(st)

    tails, kept = {"v0": tail(0), "v1": tail(1)}, {}  # type: ignore[var-annotated]
    heads = {st.run: head_of(st.path, "csv") for st in tails.values()}
    assert index_trainings(tails, lambda t: heads[t.run], kept) == [["v0", "v1"]]
    before = {k: v[2] for k, v in kept.items()}
    assert index_trainings(tails, lambda t: heads[t.run], kept) == [["v0", "v1"]]
    assert all(kept[k][2] is before[k] for k in before)
    tails["v1"] = tail(1)
    assert index_trainings(tails, lambda t: heads[t.run], kept) == [["v0", "v1"]]
    assert kept["v0"][2] is before["v0"] and kept["v1"][2] is not before["v1"]
