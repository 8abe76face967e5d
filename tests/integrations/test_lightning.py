"""The Lightning logger, on a real Trainer fitting a small LightningModule on CPU."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.helpers import close_enough, info_of, rows_of

torch = pytest.importorskip("torch")
L = pytest.importorskip("lightning.pytorch")

from lightning.pytorch.utilities.rank_zero import rank_zero_only  # noqa: E402

from steptable.integrations.lightning import StepTableLogger  # noqa: E402


class Regress(L.LightningModule):  # type: ignore[misc,name-defined]
    """y = 2x + 1 by one linear layer; fails at ``break_at`` when set."""

    def __init__(self, lr: float = 0.05, break_at: int | None = None) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(1, 1)
        self.seen: list[tuple[int, float]] = []

    def training_step(self, batch: Any, i: int) -> Any:
        if self.hparams.break_at is not None and self.global_step >= self.hparams.break_at:
            raise ArithmeticError("diverged")
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: Any, i: int) -> None:
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def loader() -> Any:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 1, generator=g)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, 2 * x + 1), batch_size=8)


def fit(logger: Any, model: Any, steps: int = 30) -> Any:
    torch.manual_seed(0)
    trainer = L.Trainer(max_steps=steps, log_every_n_steps=5, val_check_interval=10, limit_val_batches=2,
                        logger=logger, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, accelerator="cpu", devices=1)
    trainer.fit(model, loader(), loader())
    return trainer


class Recorder(L.loggers.Logger):  # type: ignore[misc,name-defined]
    """What Lightning hands a logger, kept (to compare the rows with)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int | None, dict[str, float]]] = []

    name = "rec"
    version = 0

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.calls.append((step, dict(metrics)))

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass


def test_one_row_per_step_with_lightnings_values(tmp_path: Path) -> None:
    rec = Recorder()
    fit([StepTableLogger(tmp_path / "run", arm="a"), rec], Regress())
    rows = rows_of(tmp_path / "run")
    want: dict[int, dict[str, float]] = {}
    for step, metrics in rec.calls:
        assert step is not None
        want.setdefault(step, {}).update(metrics)
    assert [r["step"] for r in rows] == sorted(want)
    assert len(rows) == len({r["step"] for r in rows})  # validation merged into its step's row
    for row in rows:
        for k, v in want[row["step"]].items():
            assert close_enough(row[k], v), (row["step"], k)
    assert sum("val_loss" in r for r in rows) == 3 and all("train_loss" in r for r in rows)
    info = info_of(tmp_path / "run", "a")
    assert info["closed"] is not None and "end" not in info
    hp = json.loads((tmp_path / "run" / "args.json").read_text())
    assert hp == {"lr": 0.05, "break_at": None}


def test_rank_one_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rank_zero_only, "rank", 1)
    logger = StepTableLogger(tmp_path / "run")
    for step in (5, 10):  # as Lightning calls it on that rank (fit itself would need the other ranks)
        logger.log_metrics({"train_loss": 1.0 / step, "epoch": 0}, step)
    logger.log_hyperparams({"lr": 0.1})
    logger.finalize("success")
    assert not (tmp_path / "run").exists()


def test_a_failed_fit_is_marked_ended_with_its_error(tmp_path: Path) -> None:
    with pytest.raises(ArithmeticError):
        fit(StepTableLogger(tmp_path / "run"), Regress(break_at=12))
    rows = rows_of(tmp_path / "run")
    assert [r["step"] for r in rows] == [4, 9]  # (Lightning logs the step before its optimizer step counts)
    assert info_of(tmp_path / "run")["end"] == "ArithmeticError"


def test_a_fit_inside_the_except_of_a_failed_one_is_marked_ended_well(tmp_path: Path) -> None:
    """A retry in the ``except`` of the fit that failed: the retry's run, which ended well, was marked ended with
    the error being handled around it."""
    from steptable.table import runinfo

    logger = StepTableLogger(tmp_path / "run", console=False)
    try:
        fit(logger, Regress(break_at=12))
    except ArithmeticError:
        fit(logger, Regress())
    info = info_of(tmp_path / "run")
    assert info["closed"] is not None and "end" not in info
    assert [end for end, _, _ in runinfo.earlier(info)] == ["ArithmeticError"]


def test_console_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fit(StepTableLogger(tmp_path / "run"), Regress(), steps=10)
    out = capsys.readouterr().out
    lines = [ln.split() for ln in out.splitlines() if ln.startswith("I ")]
    # train_loss over 4-cell values is abbreviated; the legend names the key
    assert any(ln[1:2] == ["step"] and "tl" in ln for ln in lines)
    assert " tl  train_loss" in out.split("I step")[0]
    assert [ln[1] for ln in lines if ln[1:2] and ln[1].isdigit()][:2] == ["4", "9"]


def test_checkpoints_are_kept_in_the_runs_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lightning's checkpoints (on by default) go where the logger says: each run's own ``checkpoints/``. They went
    to ``./steptable/version_0/checkpoints`` for every run, where a new run's ``ckpt_path="last"`` loaded another's."""
    monkeypatch.chdir(tmp_path)
    seen = []
    for name, lr in (("a", 0.05), ("b", 0.001)):
        torch.manual_seed(0)
        model = Regress(lr=lr)
        trainer = L.Trainer(max_steps=12, logger=StepTableLogger(tmp_path / "runs" / name, console=False),
                            callbacks=[L.callbacks.ModelCheckpoint(save_last=True)], enable_progress_bar=False,
                            enable_model_summary=False, accelerator="cpu", devices=1, limit_val_batches=1)
        trainer.fit(model, loader(), loader(), ckpt_path="last")  # (a requeued job's call: no checkpoint yet)
        seen.append(trainer.log_dir)
        ckpts = sorted(p.name for p in (tmp_path / "runs" / name / "checkpoints").iterdir())
        assert "last.ckpt" in ckpts
        saved = torch.load(tmp_path / "runs" / name / "checkpoints" / "last.ckpt", weights_only=False)
        assert saved["hyper_parameters"]["lr"] == lr
    assert seen == [str(tmp_path / "runs" / "a"), str(tmp_path / "runs" / "b")]
    assert not (tmp_path / "steptable").exists()


def test_a_fit_stopped_by_sigterm_is_marked_interrupted(tmp_path: Path) -> None:
    """SIGTERM (a preempted or cancelled job): Lightning stops the fit with its SIGTERMException, a ``SystemExit()``
    without a code, and finalizes its loggers as failed; the run was marked as a normal end."""
    import os
    import signal

    class Preempted(Regress):
        def training_step(self, batch: Any, i: int) -> Any:
            if self.global_step == 5:
                os.kill(os.getpid(), signal.SIGTERM)
            return super().training_step(batch, i)

    with pytest.raises(SystemExit):
        fit(StepTableLogger(tmp_path / "run", console=False), Preempted())
    assert info_of(tmp_path / "run")["end"] == "interrupted"
    assert [r["step"] for r in rows_of(tmp_path / "run")] == [4]


def test_a_test_after_fit_keeps_the_fits_columns_in_the_table_file(tmp_path: Path) -> None:
    """``trainer.test()`` after ``fit`` opens the run again and closes it last: its table.txt and description had
    the test's columns only (``step test_loss``) over every row."""

    class Tested(Regress):
        def test_step(self, batch: Any, i: int) -> None:
            x, y = batch
            self.log("test_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    model = Tested()
    trainer = fit(StepTableLogger(tmp_path / "run", console=False), model, steps=20)
    trainer.test(model, loader(), verbose=False)
    head = (tmp_path / "run" / "table.txt").read_text().splitlines()[0].split()
    assert {"train_loss", "val_loss", "test_loss"} <= set(head)
    keys = {c["key"] for c in info_of(tmp_path / "run")["columns"]}
    assert {"train_loss", "val_loss", "test_loss"} <= keys
    assert rows_of(tmp_path / "run")[-1]["test_loss"] > 0
