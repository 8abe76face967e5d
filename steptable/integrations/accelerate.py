"""Accelerate: a ``GeneralTracker`` that writes steptable rows, registered under the name ``"steptable"``.

    import steptable.integrations.accelerate             # registers "steptable" (accelerate >= 1.12)
    accelerator = Accelerator(log_with="steptable", project_dir="logs")
    accelerator.init_trackers("run1", config=vars(args))  # rows in logs/run1/metrics.jsonl, args.json beside
    accelerator.log({"loss": loss, "reward": r}, step=step)
    accelerator.end_training()                            # the run closed

Where the installed accelerate cannot register trackers by name, pass an instance:
``Accelerator(log_with=[StepTableTracker("run1", "logs")])``. ``log`` calls of one step make one row, written when
a later step is logged or at ``finish``; a ``log`` without a step is the step after the last. Main process only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from steptable.integrations.rows import RunLog, need, next_step, open_run

need("accelerate.tracking", "accelerate", "steptable.integrations.accelerate")  # without it: one line naming the extra

from accelerate import tracking  # noqa: E402
from accelerate.tracking import GeneralTracker, on_main_process  # noqa: E402


class StepTableTracker(GeneralTracker):  # type: ignore[misc]
    """Accelerate's logs as steptable rows in ``<logging_dir>/<run_name>/metrics.jsonl``.

    run_name     the run's directory under ``logging_dir`` (``init_trackers``' project name)
    logging_dir  the Accelerator's ``project_dir`` / ``logging_dir`` (None: the current directory)
    arm          the arm of every row (None: none)
    console      print the rows on stdout (steptable's sink); False writes the JSONL only
    """

    name = "steptable"
    requires_logging_directory = True
    main_process_only = True

    def __init__(self, run_name: str, logging_dir: str | os.PathLike[str] | None = None, arm: str | None = None,
                 console: bool = True) -> None:
        super().__init__()
        self.run_name = run_name
        self.run_dir = Path(logging_dir or ".") / str(run_name)
        self.arm = arm
        self.console = console
        self.run: RunLog | None = None
        self._last: Any = None

    @property
    def tracker(self) -> RunLog | None:
        return self.run

    def _run(self) -> RunLog:
        # (only the main process gets here: main_process_only)
        self.run = open_run(self.run, lambda: RunLog(self.run_dir, self.arm, console=self.console, rank=0))
        return self.run

    @on_main_process  # type: ignore[untyped-decorator]
    def start(self) -> None:
        self._run()

    @on_main_process  # type: ignore[untyped-decorator]
    def store_init_configuration(self, values: Mapping[str, Any]) -> None:
        self._run().hparams(values)

    @on_main_process  # type: ignore[untyped-decorator]
    def log(self, values: Mapping[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self._last = step = next_step(self._last, step)  # (one row a call: a step-less log is the step after)
        self._run().add(values, step)

    @on_main_process  # type: ignore[untyped-decorator]
    def finish(self) -> None:
        if self.run is not None:
            self.run.close()


if hasattr(tracking, "register_tracker_class"):
    if tracking.LOGGER_TYPE_TO_CLASS.get(StepTableTracker.name) is not StepTableTracker:
        tracking.register_tracker_class(StepTableTracker)
