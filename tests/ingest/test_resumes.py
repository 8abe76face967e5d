"""A training resumed in a new logger directory read as one run (steptable.ingest.resumes), on files Lightning's own
loggers write: a real Trainer fit resumed from its checkpoint, and CSVLogger called as the Trainer calls it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from steptable.cli.main import main
from steptable.ingest.files.follow import Follower
from steptable.ingest.resumes import Joiner
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
    assert sorted(len(st) for st in read_once(tmp_path).stores.values()) == [1, 2, 20]


def _hf(out: Path, steps: int, resume: bool) -> None:
    """A transformers Trainer of ``steps`` steps (a tiny GPT-2 from its config) reporting to TensorBoard under its
    default ``out/runs/<time>_<host>``, a checkpoint every 4 steps; ``resume``: from the step-4 checkpoint."""
    run_writer(f"""
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

        torch.manual_seed(0)
        ids = torch.randint(0, 32, (32, 8))
        data = [{{"input_ids": x, "labels": x}} for x in ids]
        model = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_positions=8, n_embd=8, n_layer=1, n_head=1,
                                           bos_token_id=0, eos_token_id=0))
        args = TrainingArguments(output_dir={str(out)!r}, max_steps={steps}, per_device_train_batch_size=4,
                                 logging_steps=1, save_steps=4, report_to=["tensorboard"], use_cpu=True,
                                 disable_tqdm=True)
        Trainer(model=model, args=args, train_dataset=data).train(
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
