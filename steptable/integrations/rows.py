"""What every adapter does alike: a framework's log calls become one StepLogger row per step.

``RunLog`` keeps the row of the step being logged open, so an evaluation logged at the same step (HF's eval after
the train log, Lightning's validation, tinker's test metrics) joins it: one JSONL row and one printed row a step. The
row goes out when a log of another step arrives, at ``flush()`` (an adapter calls it where the framework's step
ends) and at ``close()``. Columns are chosen at the first row (steptable.logger.autocols: the trl schema for
HF/TRL keys, generic otherwise), with room for the keys an adapter expects later (evaluation metrics), and laid out
again when a row brings keys none before it had.

Only the writing rank does anything: another rank's ``RunLog`` makes no file and prints nothing. A run that training
leaves by an uncaught exception is closed with it (marked ended with the error), and one still open at interpreter
exit or collected open is closed then (steptable.integrations.runends); an adapter's close called while the error
passes (a ``finally``) marks it too. Where the framework closes the run at training's end (HF's on_train_end), one
still open when the framework begins training again is marked interrupted (:func:`open_run`: a caught error, then
``train()`` again). Nothing here raises into training: a row that cannot be logged, or a run whose logger cannot
be made, is said once and training goes on.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from steptable.integrations import runends
from steptable.logger import process
from steptable.logger.autocols import AutoColumns
from steptable.logger.rank import LazyRank
from steptable.logger.setup import installation, setup_logging
from steptable.logger.sinks import report_once
from steptable.logger.steplogger import JSONL_NAME, StepLogger
from steptable.logger.writer import error_text
from steptable.schemafiles.resolve import get_schema
from steptable.table import runinfo

#: hyperparameters beside the run (discovery files ``args.json`` as the run's config side file)
HPARAMS_NAME = "args.json"

_NUMBERS = frozenset({float, int})
#: each RunLog's number, for its report topics (an id() comes back once a RunLog is collected, and a later run's
#: failure would go unsaid)
_RUNS = itertools.count()
_SCALARS = (bool, int, float, str)


def _number(v: Any) -> Any:
    """A framework's scalar as a plain value: a 0-d tensor / numpy number by ``item()``, anything else as it is."""
    try:  # (a tensor of several values has ndim > 0; anything odd, its shape or item() raising, is kept as it is)
        item = getattr(v, "item", None)
        return item() if item is not None and getattr(v, "ndim", 0) == 0 else v
    except Exception:
        return v


class RunLog:
    """One run of a framework's logs, written through one StepLogger.

    run_dir   where ``metrics.jsonl`` and the description go; None: the rows are printed only
    arm       the arm written in every row (None: none)
    console   print the rows (through steptable's stdout sink, installed if it is not); False: the JSONL only
    rank      the process's rank as the framework knows it (None: steptable's detection); only rank 0 writes
    expect    keys later rows carry that the first may not (evaluation metrics): given columns from the start
    schema    lay out with this schema instead of the one the first row's keys detect
    log_dir   where steptable's verbose log goes when its sinks are installed here (default: run_dir, else the
              temporary directory)
    framework_ends  the framework closes the run where training ends (HF's on_train_end): one still open when the
              interpreter exits did not get there, and is marked interrupted
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str] | None,
        arm: str | None = None,
        *,
        console: bool = True,
        rank: int | None = None,
        expect: Sequence[str] = (),
        schema: str | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        framework_ends: bool = False,
    ) -> None:
        self.run_dir = None if run_dir is None else _absolute(Path(run_dir))
        self.framework_ends = framework_ends
        self.log_dir = log_dir
        self.arm = arm
        self.console = console
        self.expect = tuple(expect)
        self.schema = schema
        self._rank = LazyRank(rank)
        self._logger: StepLogger | None = None
        self._unmade = False  # the StepLogger could not be made (said once): the rows go nowhere
        self._step: Any = None
        self._pending: dict[str, Any] | None = None
        self._closed = False
        self._lock = threading.RLock()
        self._topic = f"runlog-{next(_RUNS)}"
        runends.track(self)
        if self._rank.unknown or self._rank.value == 0:  # (a rank known to write nothing: no SIGTERM handler)
            process.hold_rows(self)  # (SIGTERM: the open row out before the run is marked interrupted)
        # (a run dropped open, its trainer collected after a caught exception, is closed then: held weakly, it
        # would never be, and read as live for ever)
        self._last: list[StepLogger] = []
        self._collected = weakref.finalize(self, runends.close_collected, self._last, framework_ends)
        self._collected.atexit = False  # (one alive at exit: runends closes it, its open row first)

    def ends_with_training(self) -> None:
        """From now on the framework closes this run where training ends (``framework_ends``): a run an evaluation
        opened before the training began goes on as the training's."""
        if self.framework_ends:
            return
        self.framework_ends = True
        self._collected.detach()
        self._collected = weakref.finalize(self, runends.close_collected, self._last, True)
        self._collected.atexit = False

    @property
    def is_writer(self) -> bool:
        rank = self._rank  # (asked once a row: no call once the rank is known)
        return (rank() if rank.unknown else rank.value) == 0

    @property
    def logger(self) -> StepLogger | None:
        """The StepLogger once the first row went out (None before, and on another rank)."""
        return self._logger

    @property
    def jsonl_path(self) -> Path | None:
        return None if self.run_dir is None else self.run_dir / JSONL_NAME

    def add(self, metrics: Mapping[str, Any], step: Any = None) -> None:
        """Metrics of ``step``: joined to the open row of that step, else the open row goes out and they open the
        next. ``step`` None joins the open row (or opens one at the row's position in the run)."""
        if not self.is_writer or self._closed:
            return
        try:
            with self._lock:
                if step is not None and self._pending is not None and step != self._step:
                    self._flush()
                if self._pending is None:
                    self._pending, self._step = {}, step
                if _NUMBERS.issuperset(map(type, metrics.values())):  # (in C: a log of plain numbers as it is)
                    self._pending.update(metrics)
                else:
                    self._pending.update(self._scalars(metrics))
        except Exception as e:  # (the loop must survive a value we cannot read)
            report_once(f"{self._topic}-add", f"steptable: a row could not be taken ({error_text(e)})")

    def _scalars(self, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """The values of ``metrics`` that are one value (a 0-d tensor or numpy number as its item); a list, an
        array or a dict (per-class scores from ``compute_metrics``) is left out, once said: in a row, two numbers
        in a list read as a fraction (n, d). TensorBoard's callback drops them too."""
        out = {}
        for k, v in metrics.items():
            v = v if type(v) is float or type(v) is int else _number(v)
            if v is None or isinstance(v, _SCALARS):
                out[k] = v
            else:
                report_once(f"{self._topic}-value-{k}", f"steptable: {k} is not one value "
                            f"({type(v).__name__}): not in the rows")
        return out

    def flush(self) -> None:
        """The open row goes out now (the framework's step is over). Raises nothing: a row that cannot be logged is
        said once (the adapter calls this from the framework's own hook)."""
        if not self.is_writer:
            return
        try:
            with self._lock:
                self._flush()
        except Exception as e:
            report_once(f"{self._topic}-flush", f"steptable: a row could not be logged ({error_text(e)}); "
                        "training goes on")

    def at_sigterm(self) -> None:
        """SIGTERM kills the process next (steptable.logger.process): the open row goes out, so that the run is
        marked interrupted with it. Another thread's row in progress is waited for, 1 s at most; raises nothing."""
        if self._closed or self._pending is None or not self.is_writer:
            return
        held = self._lock.acquire(timeout=1.0)
        try:
            if held:
                self._flush()
        except Exception as e:
            report_once(f"{self._topic}-sigterm", f"steptable: the last row was lost ({error_text(e)})")
        finally:
            if held:
                self._lock.release()

    def _flush(self) -> None:
        row, self._pending = self._pending, None
        if not row:
            return
        if self._step is not None:
            row["step"] = self._step  # (the row is this RunLog's own, no longer pending)
        lg = self._logger if self._logger is not None else self._start(row)
        if lg is None:
            return
        if self.console:
            lg.log(row)
        else:  # (no console shows the row: it is not laid out or rendered)
            lg.record(row)

    def _start(self, row: Mapping[str, Any]) -> StepLogger | None:
        """The run's StepLogger, made at its first row; None where it cannot be made (said once, and not tried
        again: its arguments do not change)."""
        if self._unmade:
            return None
        if self.console:  # (loguru's default handler would print every row to stderr, long-form)
            try:
                _own_sinks(self, self.log_dir or self.run_dir or Path(tempfile.gettempdir()) / "steptable")
            except Exception as e:  # (the rows still go to the JSONL, and to the console through loguru)
                report_once(f"{self._topic}-sinks", f"steptable: the console's sinks could not be set up "
                            f"({error_text(e)})")
        try:
            return self._make(row)
        except Exception as e:
            self._unmade = True
            report_once(f"{self._topic}-start", f"steptable: the run's logger could not be made ({error_text(e)}); "
                        "its rows are not logged, training goes on")
            return None

    def _make(self, row: Mapping[str, Any]) -> StepLogger:
        path = self.jsonl_path or JSONL_NAME
        schema = self.schema
        if schema is not None:
            try:  # (the first row and every row with new keys are laid out with it)
                get_schema(schema, Path(path).parent)
            except Exception as e:  # an unknown schema name, a user schema file that cannot be read
                report_once(f"{self._topic}-cols", f"steptable: schema {schema!r} not used ({error_text(e)})")
                schema = None
        cols = AutoColumns(path, expect=self.expect, schema=schema)
        self._logger = StepLogger(cols, self.run_dir, self.arm, rank=0, console=self.console)
        self._last.append(self._logger)
        return self._logger

    def hparams(self, params: Mapping[str, Any]) -> Path | None:
        """Write ``params`` beside the run as ``args.json`` (merged into what an earlier call wrote); values that
        are not JSON are written as their text. None on another rank or when the file cannot be written."""
        if not self.is_writer or self.run_dir is None:
            return None
        path = self.run_dir / HPARAMS_NAME
        try:
            old: dict[str, Any] = {}
            if path.is_file():
                loaded = json.loads(path.read_text(encoding="utf-8"))
                old = loaded if isinstance(loaded, dict) else {}
            merged = {**old, **{str(k): _jsonable(v) for k, v in params.items()}}
            self.run_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(merged, indent=1, ensure_ascii=False, allow_nan=False), encoding="utf-8")
            os.replace(tmp, path)
            return path
        except Exception as e:  # (a full disk, a config nested past the recursion limit)
            report_once(f"{self._topic}-hparams", f"steptable: cannot write {path.name} ({error_text(e)})")
            return None

    def close(self, exc: BaseException | None = None, failed: bool = False, ended_well: bool = False) -> None:
        """The open row out, then the run closed: marked ended, and with ``exc`` when training raised it
        (steptable.table.runinfo.end_of; without ``exc``, the exception being handled where close is called: an
        adapter's close in the user's ``finally``). ``failed``: the trainer says the run failed (or began again
        before it ended: :func:`open_run`), so it is marked interrupted where ``exc`` reads as a normal end
        (Lightning's SIGTERMException is a ``SystemExit()``). ``ended_well``: the trainer says training ended
        normally (HF's on_train_end), so an exception being handled is not the run's: a retry inside the
        ``except`` of the failed attempt. Idempotent."""
        exc = None if ended_well else sys.exc_info()[1] if exc is None else exc
        with self._lock:
            if self._closed:
                return
            self._closed = True
            runends.untrack(self)
            self._collected.detach()
            if not self.is_writer:
                return
            try:
                self._flush()
            except Exception as e:
                report_once(f"{self._topic}-close", f"steptable: the last row was lost ({error_text(e)})")
            lg = self._logger
            if lg is None:
                return
            end = runinfo.end_of(exc)
            lg.close(end or (runinfo.INTERRUPTED if failed else None), ended_well=ended_well)

    @property
    def closed(self) -> bool:
        return self._closed


def open_run(run: RunLog | None, make: Callable[[], RunLog], begins: bool = False) -> RunLog:
    """The run a framework's logs go to: ``run`` while it is open, else a new one from ``make`` (in the same
    directory readers take it for a resume of the last). ``begins``: the framework begins a training (HF's
    ``train()``); a run that an earlier training began and left open never reached its end (it raised and the
    caller caught it: a retry loop, a notebook) and is closed first as failed (:meth:`RunLog.close`), so readers
    tell how that attempt ended before the next one's rows; one opened outside a training (an evaluation before
    it) goes on as the training's (:meth:`RunLog.ends_with_training`)."""
    if run is not None and begins and not run.closed:
        if run.framework_ends:
            run.close(failed=True)
        else:
            run.ends_with_training()
    return run if run is not None and not run.closed else make()


def next_step(last: Any, step: Any) -> Any:
    """The step of a log call: ``step`` where it is given, else the one after ``last`` (the last call's; 0 for the
    first): a log without a step is a row of its own, as the frameworks' own JSON loggers write a line a call. A
    last step that is not an int (a float, a text) is used again: there is no step after it."""
    if step is not None:
        return step
    if last is None:
        return 0
    return last + 1 if isinstance(last, int) else last


def _absolute(path: Path) -> Path:
    """``path`` made absolute (a later os.chdir in the training script must not move the files); as given where the
    working directory is gone (deleted under the job), where nothing relative to it can be written: said at the
    first row."""
    try:
        return path.absolute()
    except OSError:
        return path


def _jsonable(v: Any) -> Any:
    """``v`` as JSON: containers walked, non-finite floats as text, anything else that is not JSON as its text (as
    ``<its type's name>`` where even that raises)."""
    v = _number(v)
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    try:
        return str(v)
    except Exception:  # (its text cannot be had: its type's name, the file's other values kept)
        return f"<{type(v).__name__}>"


def need(module: str, extra: str, adapter: str) -> Any:
    """Import ``module`` for ``adapter``; without it, an ImportError of one line naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{adapter} needs {module.split('.')[0]}: pip install 'steptable[{extra}]'") from None


_ours = 0  # the setup_logging installation a RunLog made last (steptable.logger.setup.installation)
_owner: weakref.ref[RunLog] | None = None  # ... and that RunLog


def _own_sinks(run: RunLog, where: str | os.PathLike[str]) -> None:
    """setup_logging's sinks for ``run``, logging to ``where``: installed when none are, and again for each new run
    while the ones in place are those a RunLog installed whose run has ended (a second trainer in one process, a
    notebook's next training, gets its own verbose log). Sinks the user installed are left alone, and so are those
    of a run still going (runs at the same time share its verbose log: the sinks are the process's)."""
    global _ours, _owner
    now = installation()
    owner = _owner() if _owner is not None else None
    if now and (now != _ours or (owner is not None and owner is not run and not owner.closed)):
        return
    setup_logging(run.arm or Path(where).name or "run", log_dir=where)
    _ours, _owner = installation(), weakref.ref(run)
