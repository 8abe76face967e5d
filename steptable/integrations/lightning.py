"""Lightning: a ``lightning.pytorch.loggers.Logger`` that writes steptable rows.

    from steptable.integrations.lightning import StepTableLogger
    trainer = lightning.Trainer(logger=StepTableLogger("logs/run1"), ...)

``log_metrics`` calls of one step (training, then the validation run at that step) make one row, written when a
later step is logged or at ``finalize``, which closes the run (marked ended with the error Lightning is handling
when it finalizes a failed fit). ``log_hyperparams`` writes ``args.json`` beside the rows. Rank zero only (Lightning's
``rank_zero_only``). A ``trainer.validate()`` / ``test()`` after ``fit`` opens the run again and closes it at its end.
"""

from __future__ import annotations

import os
from argparse import Namespace
from collections.abc import Mapping
from typing import Any

from steptable.integrations.rows import RunLog, need, open_run

need("lightning.pytorch", "lightning", "steptable.integrations.lightning")  # without it: one line naming the extra

from lightning.pytorch.loggers import Logger  # noqa: E402
from lightning.pytorch.utilities.rank_zero import rank_zero_only  # noqa: E402


class StepTableLogger(Logger):  # type: ignore[misc]
    """Lightning's metrics as steptable rows in ``<run_dir>/metrics.jsonl``.

    run_dir   where the rows, the run's description and ``args.json`` go
    arm       the arm of every row (None: none)
    console   print the rows on stdout (steptable's sink); False writes the JSONL only
    """

    def __init__(self, run_dir: str | os.PathLike[str], arm: str | None = None, console: bool = True) -> None:
        super().__init__()
        self.run_dir = os.fspath(run_dir)
        self.arm = arm
        self.console = console
        self.run: RunLog | None = None

    def _run(self) -> RunLog:
        self.run = open_run(self.run, lambda: RunLog(self.run_dir, self.arm, console=self.console,
                                                     rank=int(getattr(rank_zero_only, "rank", 0) or 0)))
        return self.run

    # Lightning puts checkpoints in <save_dir>/<name>/<version>/checkpoints and calls save_dir the trainer's
    # log_dir: the run's directory, with no name or version below it, keeps them with the run (not in one
    # ./steptable/version_0 that every run shares, where ckpt_path="last" resumed another run)
    @property
    def save_dir(self) -> str:
        return self.run_dir

    @property
    def name(self) -> str:
        return ""

    @property
    def version(self) -> str:
        return ""

    @property
    def root_dir(self) -> str:
        return self.run_dir

    @property
    def log_dir(self) -> str:
        return self.run_dir

    @rank_zero_only  # type: ignore[untyped-decorator]
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        self._run().add(metrics, step)

    @rank_zero_only  # type: ignore[untyped-decorator]
    def log_hyperparams(self, params: Mapping[str, Any] | Namespace, *args: Any, **kwargs: Any) -> None:
        self._run().hparams(vars(params) if isinstance(params, Namespace) else dict(params or {}))

    @rank_zero_only  # type: ignore[untyped-decorator]
    def save(self) -> None:
        """Nothing: a row is written when its step is over (a validation at the step may still join it)."""

    @rank_zero_only  # type: ignore[untyped-decorator]
    def finalize(self, status: str) -> None:
        """The run closed; a ``failed`` fit marked ended with the exception Lightning is handling (interrupted
        where that is its SIGTERMException: a preempted job), a ``success`` as ended well (a fit inside the
        ``except`` of a failed one is not marked with that one's error)."""
        if self.run is None:
            return
        self.run.close(failed=status == "failed", ended_well=status == "success")
