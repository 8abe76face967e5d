"""Trainer logs written by the trainers' own libraries, from rows a test gives: Stable-Baselines3's logger,
Lightning's CSVLogger, transformers' ``TrainerState.save_to_json`` and verl's file logger. Each library is imported
when its writer is first called (a test module that writes no such file does not pay for it)::

    from tests.library_logs import write_sb3_rows
    path = write_sb3_rows(tmp_path / "PPO_1", [{"time/total_timesteps": 2048, "rollout/ep_rew_mean": -90.5}])

Tests that need hostile bytes write the real file first, then damage it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "append_verl_row", "verl_package", "verl_tracking", "write_lightning_rows", "write_sb3_rows",
    "write_trainer_state", "write_verl_rows",
]


def verl_package() -> Path:
    """The installed verl package's directory, found without running its ``__init__`` (which imports verl's own
    dependencies: tensordict, ray...; CI installs verl with ``--no-deps``). Skips the test when verl is missing."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("verl is not installed (pip install --no-deps verl)")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def verl_tracking() -> Any:
    """verl's ``verl.utils.tracking`` module (its ``Tracking`` with the ``file`` backend is what the trainer logs
    through), loaded from the installed source alone: it needs only orjson and packaging."""
    src = verl_package() / "utils" / "tracking.py"
    spec = importlib.util.spec_from_file_location("verl_utils_tracking", src)
    assert spec is not None and spec.loader is not None, src
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_verl_rows(path: Path, rows: Iterable[tuple[int, Mapping[str, Any]]]) -> Path:
    """``path`` written by verl's ``Tracking(default_backend=["file"])`` as its trainer calls it,
    ``log(data=metrics, step=step)`` for each ``(step, metrics)`` of ``rows``; the file logger finds its path in
    ``VERL_FILE_LOGGER_PATH`` (set for the call) and prints it (kept out of the test's output)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    before = os.environ.get("VERL_FILE_LOGGER_PATH")
    os.environ["VERL_FILE_LOGGER_PATH"] = str(path)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            tracker = verl_tracking().Tracking(path.parent.name, path.stem, default_backend=["file"])
    finally:
        if before is None:
            del os.environ["VERL_FILE_LOGGER_PATH"]
        else:
            os.environ["VERL_FILE_LOGGER_PATH"] = before
    for step, data in rows:
        tracker.log(data=dict(data), step=step)
    tracker.finish()
    return path


def append_verl_row(path: Path, step: int, data: Mapping[str, Any]) -> None:
    """One more line on ``path`` by verl's ``FileLogger.log``, as a running trainer adds it (the logger's own
    constructor would truncate the file: the method is run on the file opened for appending)."""
    logger = object.__new__(verl_tracking().FileLogger)
    logger.fp = open(path, "ab", buffering=0)
    try:
        logger.log(dict(data), step)
    finally:
        logger.fp.close()


def write_trainer_state(path: Path, log_history: Sequence[Mapping[str, Any]], steps: int, epoch: float = 1.0,
                        eval_steps: int | None = None, logging_steps: int = 1) -> Path:
    """``path`` written by ``transformers.TrainerState.save_to_json`` (HF's own writer: every key sorted, indent=2,
    bare NaN, null for None) for a run of ``steps`` steps that logged ``log_history``."""
    from transformers import TrainerState

    every = {} if eval_steps is None else {"eval_steps": eval_steps}  # (HF leaves its default when none is set)
    state = TrainerState(epoch=epoch, global_step=steps, max_steps=steps, logging_steps=logging_steps, save_steps=steps,
                         train_batch_size=8, num_train_epochs=1, log_history=[dict(e) for e in log_history], **every)
    path.parent.mkdir(parents=True, exist_ok=True)
    state.save_to_json(str(path))
    return path


def write_sb3_rows(dir: Path, rows: Iterable[Mapping[str, Any]], step_key: str = "time/total_timesteps",
                   fmt: str = "csv") -> Path:
    """``dir/progress.<fmt>`` written by Stable-Baselines3's own logger (``logger.configure(dir, [fmt])``, ``csv`` or
    ``json``): each row recorded key by key and dumped at its ``step_key`` value, as an algorithm's ``learn`` does.
    A row bringing keys a CSV lacks makes SB3 rewrite it from the top; it orders the new keys of a dump by a set
    difference, so the column order varies from one Python process to the next."""
    from stable_baselines3.common.logger import configure

    log = configure(str(dir), [fmt])
    for row in rows:
        for key, value in row.items():
            log.record(key, value)
        log.dump(step=int(row.get(step_key, 0)))
    log.close()
    return Path(dir) / f"progress.{fmt}"


def write_lightning_rows(dir: Path, rows: Iterable[tuple[int, Mapping[str, Any]]]) -> Path:
    """``dir/metrics.csv`` written by Lightning's ``CSVLogger`` (its ``log_dir`` is ``dir``), called as the Trainer
    calls it for each ``(step, metrics)`` of ``rows``: ``log_metrics(metrics, step)`` then ``save()``. A row bringing
    a new key makes the logger rewrite the file from the top with the new header (sorted)."""
    from lightning.fabric.loggers import CSVLogger

    dir = Path(dir)
    logger = CSVLogger(root_dir=dir.parent, name=None, version=dir.name)
    for step, metrics in rows:
        logger.log_metrics(dict(metrics), step=step)
        logger.save()
    logger.finalize("success")
    return Path(logger.log_dir) / "metrics.csv"
