"""transformers.Trainer and every TRL trainer (GRPO, PPO, DPO, SFT...): a ``TrainerCallback``.

    from steptable.integrations.hf import StepTableCallback
    trainer = GRPOTrainer(..., callbacks=[StepTableCallback(console=True)])

Passed with ``callbacks=[...]``: transformers accepts only its own ``report_to`` names. Each ``on_log`` goes into the
row of its step (the evaluation logged at that step and the end-of-training summary join it); the row is written when
the next step begins or training ends, which closes the run. A ``trainer.evaluate()`` after ``train()`` opens the run
again and closes it when the evaluation ends (its row at the last step); one before any ``train()`` writes its row
when it ends, and the training after it goes on in its run. A training that raises is marked ended with
its error, or interrupted where a wrapper caught it (steptable.integrations.rows); caught and followed by another
``train()`` (a retry loop, a notebook), it is closed when that one begins, which goes on as a resume. Rows go to
``<run_dir>/metrics.jsonl`` on the world's main process only; the trl schema lays out TRL's keys, the generic one
anything else.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import Any

from steptable.integrations.rows import RunLog, need, open_run

need("transformers", "hf", "steptable.integrations.hf")  # without it: one line naming the extra

import transformers  # noqa: E402

#: the callbacks whose console option is on; the dict prints of a trainer whose state one of them holds are left out
_CONSOLE: weakref.WeakSet[StepTableCallback] = weakref.WeakSet()
_PRINTERS = ("ProgressCallback", "PrinterCallback")


def _quiet(printing: Callable[..., Any]) -> Callable[..., Any]:
    """``on_log`` of transformers' printing callbacks, silent for a trainer a console StepTableCallback prints for
    (the tqdm bar stays: only the dict print is in on_log)."""

    def on_log(self: Any, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> Any:
        if any(cb._state is state for cb in list(_CONSOLE)):
            return None
        return printing(self, args, state, control, logs=logs, **kwargs)

    on_log.__wrapped__ = printing  # type: ignore[attr-defined]
    on_log._steptable_quiet = True  # type: ignore[attr-defined]
    return on_log


def _silence_printers() -> None:
    """Wrap the printing callbacks' ``on_log`` once a process (a no-op for trainers no console callback is on)."""
    for name in _PRINTERS:
        cls = getattr(transformers, name, None) or getattr(transformers.trainer_callback, name, None)
        if cls is not None and not getattr(cls.on_log, "_steptable_quiet", False):
            cls.on_log = _quiet(cls.on_log)


class StepTableCallback(transformers.TrainerCallback):  # type: ignore[misc]
    """One steptable row per logged step of a Trainer.

    run_dir   where ``metrics.jsonl`` goes (None: the trainer's ``args.output_dir``)
    arm       the arm of every row (None: ``args.run_name`` where it is set and is not the output directory)
    console   print the steptable rows on stdout in place of the trainer's dict prints (its progress bar stays);
              False writes the JSONL only and leaves the console as it is
    """

    def __init__(self, run_dir: str | os.PathLike[str] | None = None, arm: str | None = None,
                 console: bool = False) -> None:
        self.run_dir = run_dir
        self.arm = arm
        self.console = console
        self.run: RunLog | None = None
        self._state: Any = None
        self._after = False  # the run was opened again after training ended
        if console:
            _silence_printers()
            _CONSOLE.add(self)

    def _run(self, args: Any, state: Any, begins: bool = False, after: bool = False) -> RunLog:
        """The run of this training: the open one, else a new one. ``begins``: opened by ``train()`` (its end is
        on_train_end; one an earlier ``train()`` left open raised and was caught, and is closed first as failed:
        rows.open_run); ``after``: opened again for a log after training ended, closed by the next evaluation's
        end."""
        self._state = state
        self._after = after

        def make() -> RunLog:
            run_dir = self.run_dir if self.run_dir is not None else args.output_dir
            arm = self.arm
            if arm is None and args.run_name and args.run_name != args.output_dir:
                arm = str(args.run_name)
            main = bool(state.is_world_process_zero)
            evaluating = str(getattr(args, "eval_strategy", "no")) not in ("no", "IntervalStrategy.NO")
            return RunLog(run_dir or "trainer_output", arm, console=self.console,
                          rank=0 if main else max(int(getattr(args, "process_index", 1)), 1),
                          expect=("eval_loss",) if evaluating else (), framework_ends=begins)

        self.run = open_run(self.run, make, begins=begins)
        return self.run

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._run(args, state, begins=True)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.run is not None:
            self.run.flush()

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if not logs:
            return
        run = self.run
        if run is None or run.closed or state is not self._state:
            # (a closed run: trainer.evaluate() after train(), the example scripts' final evaluation: the run again)
            run = self._run(args, state, after=run is not None and run.closed)
        run.add(logs, state.global_step)

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        run = self.run
        if run is None or run.closed:
            return
        if self._after:
            run.close(ended_well=True)
        elif not run.framework_ends:  # (an evaluation before any training: no step begins to write its row)
            run.flush()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.run is not None:  # (ended well: an error being handled is the caller's, a retry in its except)
            self.run.close(ended_well=True)
