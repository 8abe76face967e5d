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
from steptable.ingest.resumes import HOLD_S, Joiner
from tests.helpers import run_cli
from tests.ingest.writers import read_once, run_writer
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


def _csv(dir: Path, steps: range, scale: float = 1.0) -> None:
    write_lightning_rows(dir, [(s, {"loss": scale * (1 + math.sin(s))}) for s in steps])


def test_two_trainings_both_resumed_beside_each_other_stay_apart(tmp_path: Path) -> None:
    # which resumed piece goes on which training is not known from the steps
    _csv(tmp_path / "arm" / "version_0", range(0, 10))
    _csv(tmp_path / "arm" / "version_1", range(0, 10), 2.0)
    _csv(tmp_path / "arm" / "version_2", range(10, 20))
    assert sorted(len(st) for st in read_once(tmp_path).stores.values()) == [10, 10, 10]


def test_pieces_join_in_the_order_of_their_directories_numbers(tmp_path: Path) -> None:
    for v, steps in [(0, range(0, 5)), (2, range(5, 10)), (10, range(10, 15))]:
        _csv(tmp_path / "arm" / f"version_{v}", steps)
    (run,) = read_once(tmp_path).stores.values()
    assert list(run.steps) == list(range(15)) and run.resumes == [5, 10]


def test_a_resume_begun_while_followed_joins_the_run_shown(tmp_path: Path) -> None:
    _csv(tmp_path / "arm" / "version_0", range(0, 10))
    f = Follower([tmp_path])
    f.scan()
    (before,) = f.stores.values()
    shown = (before.generation, before.version)

    _csv(tmp_path / "arm" / "version_1", range(8, 12), 3.0)
    changed = f.scan()
    (run,) = f.stores.values()
    assert changed == {before.run} and run.run == before.run and run is not before
    assert run.last_update == (tmp_path / "arm" / "version_1" / "metrics.csv").stat().st_mtime  # (not version_0's)
    # a reader that knows the run by its id sees a resume at step 8: the rows before it are those it showed
    assert run.generation == shown[0] and run.version > shown[1]
    assert list(run.steps) == list(range(12)) and run.resumes == [8]
    assert run.value(8, "loss") == pytest.approx(3 * (1 + math.sin(8)))

    # the resumed process logs on: rows added to the same run, which only grows
    gen = run.generation
    _csv(tmp_path / "arm" / "version_1", range(8, 15), 3.0)
    assert f.scan() == {before.run}
    (again,) = f.stores.values()
    assert again is run and run.generation == gen and list(run.steps) == list(range(15))
    assert run.value(14, "loss") == pytest.approx(3 * (1 + math.sin(14)))


def test_a_training_no_longer_in_pieces_shows_its_first_piece_as_a_reset(tmp_path: Path) -> None:
    _csv(tmp_path / "arm" / "version_0", range(0, 10))
    _csv(tmp_path / "arm" / "version_1", range(10, 12))
    runs = read_once(tmp_path)._runs
    joiner = Joiner()
    shown, piece_of, changed = joiner.view(runs)
    (first, second) = runs
    assert list(shown) == [first] and piece_of == {first: first, second: first} and changed == {first}
    assert joiner.view(runs) == (shown, piece_of, set())  # (nothing new: the same run, unchanged)

    alone = {first: runs[first]}  # (the resumed piece's file gone)
    gen = runs[first].generation
    assert joiner.view(alone) == (alone, {}, {first})
    assert runs[first].generation > gen and len(runs[first]) == 10


def test_a_checkpoint_evaluated_in_a_process_of_its_own_stays_apart(tmp_path: Path) -> None:
    # (trainer.validate / trainer.test of the step-10 checkpoint: one row of scores at its step)
    _csv(tmp_path / "arm" / "version_0", range(0, 20))
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


def _same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    def norm(r: dict[str, Any]) -> dict[str, Any]:
        return {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
    return [norm(r) for r in got] == [norm(r) for r in want]


def test_the_joined_run_holds_each_pieces_cells_as_its_own_run_does(tmp_path: Path) -> None:
    # absent cells (a validation every 5th step), a NaN, integer columns: cell for cell, types included
    def rows(steps: range, scale: float) -> list[tuple[int, dict[str, Any]]]:
        return [(s, {"loss": math.nan if s == 7 else scale * s, **({"val_loss": scale} if s % 5 == 0 else {}),
                     "epoch": s // 4}) for s in steps]
    write_lightning_rows(tmp_path / "arm" / "version_0", rows(range(0, 12), 1.0))
    write_lightning_rows(tmp_path / "arm" / "version_1", rows(range(10, 22), 2.0))
    v0, v1 = (read_once(tmp_path / "arm" / f"version_{v}") for v in (0, 1))
    (first,), (second,) = v0.stores.values(), v1.stores.values()
    (run,) = read_once(tmp_path).stores.values()
    want = [r for r in first.rows() if r["step"] < 10] + second.rows()
    assert _same_rows(run.rows(), want)
    assert run.is_integer("epoch") and type(run.rows()[3]["epoch"]) is int and "val_loss" not in run.rows()[1]


def _append(logger: Any, step: int, metrics: dict[str, float]) -> None:
    """One ``log_metrics`` and ``save`` of a Lightning CSVLogger, as the Trainer calls them."""
    logger.log_metrics(metrics, step=step)
    logger.save()


def test_a_validation_row_of_the_resumed_piece_is_not_a_reset_of_the_joined_run(tmp_path: Path) -> None:
    """Lightning writes a validation's metrics on a line of their own at the step of the training row before it.
    While followed, that merges into the resumed piece's last row (an edit): the joined run must not be reset (tail -f
    prints the whole training again from step 0 on every validation)."""
    from lightning.fabric.loggers import CSVLogger

    arm = tmp_path / "arm"
    write_lightning_rows(arm / "version_0", [(s, {"train_loss": 1 / (s + 1)}) for s in range(30)])
    f = Follower([tmp_path])
    f.scan()
    lg = CSVLogger(root_dir=arm, name=None, version="version_1")
    for s in range(20, 25):
        _append(lg, s, {"train_loss": 2 / (s + 1)})
    f.scan()
    (run,) = f.stores.values()
    assert run.resumes == [20]
    gen = run.generation
    _append(lg, 24, {"val_loss": 0.1})  # (a key new to the file: CSVLogger rewrites it whole)
    f.scan()
    _append(lg, 25, {"train_loss": 0.5})
    f.scan()
    _append(lg, 25, {"val_loss": 0.05})  # (no new key: one line appended, merged into step 25's row)
    f.scan()
    (run,) = f.stores.values()
    assert run.value(run.index_of_step(25), "val_loss") == pytest.approx(0.05)
    assert run.generation == gen, "the joined run was reset: readers start it over from its first row"


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


def test_nan_in_rows_a_resumed_piece_replaced_is_still_alerted(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The first process diverged (NaN at step 25) and was resumed from its step-20 checkpoint in version_1: as for a
    resume within one file, the NaN in the rows the resume replaced is still said (it was, before the join)."""
    write_lightning_rows(tmp_path / "arm" / "version_0",
                         [(s, {"loss": math.nan if s >= 25 else 1 / (s + 1)}) for s in range(27)])
    write_lightning_rows(tmp_path / "arm" / "version_1", [(s, {"loss": 1 / (s + 1)}) for s in range(20, 40)])
    rc, out, _ = run_cli(["tail", "--alerts-only", str(tmp_path)], capsys)
    assert rc == 1 and "step 25 loss non-finite" in out, out


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
    _csv(tmp_path / "arm" / "version_0", range(0, 10))
    _csv(tmp_path / "arm" / "version_1", range(8, 14), 3.0)
    rc, out, _ = run_cli(["tail", str(tmp_path), "--run", "arm/version_1/metrics.csv", "-n", "3"], capsys)
    assert rc == 0 and [ln.split()[0] for ln in out.splitlines()[-3:]] == ["11", "12", "13"], out
    rc, out, _ = run_cli(["summary", str(tmp_path), "--run", "arm/version_1/metrics.csv"], capsys)
    assert rc == 0 and "resumed 8" in out, out


def test_a_resumed_pieces_first_row_waits_for_its_second_to_join_it(tmp_path: Path) -> None:
    # (shown at once, it was a run of its own for a logging interval, then taken back: a panel come and gone)
    _csv(tmp_path / "arm" / "version_0", range(0, 10))
    f = Follower([tmp_path])
    f.scan()
    (first,) = f.stores
    _csv(tmp_path / "arm" / "version_1", range(8, 9), 3.0)
    assert f.scan() == set() and list(f.stores) == [first] and len(f.stores[first]) == 10
    _csv(tmp_path / "arm" / "version_1", range(8, 10), 3.0)
    assert f.scan() == {first} and list(f.stores) == [first] and f.stores[first].resumes == [8]


def test_a_one_row_piece_long_written_is_a_run_of_its_own(tmp_path: Path) -> None:
    _csv(tmp_path / "arm" / "version_0", range(0, 10))
    _csv(tmp_path / "arm" / "version_1", range(8, 9), 3.0)
    old = time.time() - 2 * HOLD_S
    os.utime(tmp_path / "arm" / "version_1" / "metrics.csv", (old, old))
    assert sorted(len(st) for st in read_once(tmp_path).stores.values()) == [1, 10]


def test_a_row_logged_before_the_resumed_pieces_first_step_reads_live_as_read_once(tmp_path: Path) -> None:
    from lightning.fabric.loggers import CSVLogger

    arm = tmp_path / "arm"
    write_lightning_rows(arm / "version_0", [(s, {"train_loss": 1 / (s + 1)}) for s in range(30)])
    f = Follower([tmp_path])
    f.scan()
    lg = CSVLogger(root_dir=arm, name=None, version="version_1")
    for s in [*range(20, 25), 19, 25, 26]:  # (a row at step 19 after 24: inserted in its file, before its first)
        _append(lg, s, {"train_loss": 2 / (s + 1)})
        f.scan()
        live = {k: (list(st.steps), list(st.resumes)) for k, st in f.stores.items()}
        once = {k: (list(st.steps), list(st.resumes)) for k, st in read_once(tmp_path).stores.items()}
        assert live == once, s
