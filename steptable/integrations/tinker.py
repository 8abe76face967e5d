"""tinker-cookbook: a logger with the methods of its ``ml_log.Logger``, and a swap for its per-metric pretty printer.

    from tinker_cookbook.utils import ml_log
    from steptable.integrations.tinker import use_steptable
    ml_logger = use_steptable(ml_log.setup_logging(log_dir, wandb_project=None, config=cfg))

``use_steptable`` replaces the ``PrettyPrintLogger`` of the cookbook's ``MultiplexLogger`` (one rich table of every
metric a step) by a ``StepTableLogger`` that prints one steptable row a step; the cookbook's ``JsonLogger`` still
writes ``<log_dir>/metrics.jsonl`` (steptable's readers know it), so by default the rows are printed only. Given a
``run_dir``, the StepTableLogger writes its own ``metrics.jsonl`` there too (not the cookbook's log_dir: that file
is the JsonLogger's). ``StepTableLogger(run_dir)`` also works alone, wherever an ``ml_log.Logger`` is taken.
Nothing here imports tinker-cookbook until ``use_steptable`` is called.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from steptable.integrations.rows import RunLog, need, next_step


def _config_dict(config: Any) -> Mapping[str, Any]:
    """A config as a mapping: the cookbook's ``dump_config`` where it is installed, else a dataclass's fields, a
    mapping as it is, or an object's attributes."""
    try:
        from tinker_cookbook.utils.ml_log import dump_config
    except ImportError:
        pass
    else:
        dumped = dump_config(config)
        if isinstance(dumped, Mapping):
            return dumped
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    if isinstance(config, Mapping):
        return config
    return dict(getattr(config, "__dict__", {}) or {"config": config})


class StepTableLogger:
    """tinker-cookbook's ``ml_log.Logger`` methods, writing steptable rows.

    run_dir   where ``metrics.jsonl`` and the run's description go; None: the rows are printed only
    arm       the arm of every row (None: none)
    console   print the rows on stdout (steptable's sink); False writes the JSONL only

    ``log_metrics`` calls of one step (the training metrics and the evaluations at that step) make one row, written
    when a later step is logged or at ``close``, which closes the run. A call without a step is a row of its own at
    the step after the last call's (0 for the first), as the cookbook's JsonLogger writes a line a call.
    """

    def __init__(self, run_dir: str | os.PathLike[str] | None = None, arm: str | None = None,
                 console: bool = True, log_dir: str | os.PathLike[str] | None = None) -> None:
        self.run = RunLog(run_dir, arm, console=console, log_dir=log_dir)
        self._last: Any = None  # the step of the last log_metrics call

    def log_hparams(self, config: Any) -> None:
        self.run.hparams(_config_dict(config))

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        """``metrics`` into the row of ``step``; None: a row of their own, at the step after the last call's."""
        self._last = step = next_step(self._last, step)
        self.run.add(metrics, step)

    def enable_event_steps(self) -> None:
        """Nothing: rows are keyed by their step either way."""

    def log_metrics_event(self, metrics: dict[str, Any], step: int, step_metric: str,
                          metric_axes: dict[str, str] | None = None) -> None:
        self.log_metrics({**metrics, step_metric: step}, step=step)

    def log_summary(self, metrics: dict[str, Any]) -> None:
        """Nothing: running totals between steps are not rows (the JsonLogger keeps them)."""

    def log_long_text(self, key: str, text: str) -> None:
        """Nothing: long text is not a table cell."""

    def sync(self) -> None:
        """Nothing: the open row stays open until its step is over (an evaluation may still join it)."""

    def close(self) -> None:
        self.run.close()

    def get_logger_url(self) -> str | None:
        return None

    @property
    def store(self) -> None:
        return None


def use_steptable(ml_logger: Any, run_dir: str | os.PathLike[str] | None = None, arm: str | None = None) -> Any:
    """``ml_logger`` (the cookbook's ``setup_logging`` result) with its ``PrettyPrintLogger`` replaced by a
    ``StepTableLogger(run_dir, arm)``; the logger itself is returned. A logger that is not a ``MultiplexLogger``
    is returned inside one beside a StepTableLogger. Raises ValueError for a ``run_dir`` that is the cookbook's own
    log directory (its ``metrics.jsonl`` is the JsonLogger's)."""
    ml_log = need("tinker_cookbook.utils.ml_log", "tinker", "steptable.integrations.tinker")
    children = list(ml_logger.loggers) if isinstance(ml_logger, ml_log.MultiplexLogger) else [ml_logger]
    if run_dir is not None:
        ours = Path(run_dir).absolute()
        for c in children:
            if isinstance(c, ml_log.JsonLogger) and Path(c.log_dir).absolute() == ours:
                raise ValueError(f"run_dir {run_dir} is the cookbook's log_dir: its metrics.jsonl is the "
                                 "JsonLogger's; leave run_dir None (rows printed only) or give another directory")
    # steptable's verbose log beside the cookbook's logs.log (it is made if steptable's sinks are not in place)
    log_dir = next((c.log_dir for c in children if isinstance(c, ml_log.JsonLogger) and "://" not in c.log_dir), None)
    swapped = [c for c in children if not isinstance(c, ml_log.PrettyPrintLogger)]
    swapped.append(StepTableLogger(run_dir, arm, log_dir=log_dir))
    if isinstance(ml_logger, ml_log.MultiplexLogger):
        ml_logger.loggers = swapped
        return ml_logger
    return ml_log.MultiplexLogger(swapped)
