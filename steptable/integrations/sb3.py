"""Stable-Baselines3: a ``KVWriter`` output format that prints steptable rows in place of SB3's boxed tables.

    from stable_baselines3.common.logger import Logger
    from steptable.integrations.sb3 import StepTableOutputFormat
    model.set_logger(Logger("logs/ppo1", output_formats=[StepTableOutputFormat("logs/ppo1")]))
    model.learn(100_000)
    model.logger.close()                      # the run closed (else at interpreter exit)

Each ``dump`` is the row of its timestep (``step`` = the timesteps so far); dumps of one timestep (an EvalCallback's
at the rollout's last timestep) make one row, written when a later timestep dumps or at ``close``. Keys a record
excluded from ``json`` and values that are not scalars (videos, figures, images, hyperparameters) are left out.
"""

from __future__ import annotations

import os
from typing import Any

from steptable.integrations.rows import RunLog, need

need("stable_baselines3.common.logger", "sb3", "steptable.integrations.sb3")  # without it: one line naming the extra

from stable_baselines3.common.logger import KVWriter  # noqa: E402


def _scalar(v: Any) -> bool:
    if isinstance(v, (bool, int, float, str)):
        return True
    try:
        return getattr(v, "ndim", None) == 0  # a numpy or torch scalar
    except Exception:  # (a value whose shape cannot be read is no scalar: left out, never raised into the dump)
        return False


class StepTableOutputFormat(KVWriter):  # type: ignore[misc]
    """SB3's dumps as steptable rows in ``<run_dir>/metrics.jsonl``.

    run_dir   where the rows go
    arm       the arm of every row (None: none)
    console   print the rows on stdout (steptable's sink); False writes the JSONL only
    """

    def __init__(self, run_dir: str | os.PathLike[str], arm: str | None = None, console: bool = True) -> None:
        self.run = RunLog(run_dir, arm, console=console)

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        row = {k: v for k, v in key_values.items()
               if _scalar(v) and "json" not in (key_excluded.get(k) or ())}
        if row:
            self.run.add(row, step)

    def close(self) -> None:
        self.run.close()
