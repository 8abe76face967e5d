"""A W&B run's facts from its run and exit records, as the reader hands them on in ``meta``: ``name`` (the display
name, the run's arm), ``project``, ``config`` (W&B's own ``_wandb`` left out) and ``runinfo`` (``closed``: when the
run last logged, ``end``: a non-zero exit code, as a StepLogger's description says a run ended). Pure."""

from __future__ import annotations

import json
from typing import Any

from steptable.ingest.parse import LineError, decode_line


class RunFacts:
    """One run file's facts, record by record (its start is kept for a run that ends before a row has a clock)."""

    def __init__(self) -> None:
        self._start = 0.0
        self._last_time: float | None = None

    def run(self, got: dict[str, Any], meta: dict[str, Any]) -> None:
        """A run record (:func:`~steptable.ingest.readers.wandbwire.wandb_record`'s) into ``meta``."""
        if got["name"]:
            meta["name"] = got["name"]
        meta["project"] = got["project"]  # (even "": a run record was read)
        if got["start"]:
            self._start = got["start"]
        config = {}
        for key, value in got["config"]:
            name = key.decode("utf-8", "replace")
            if name == "_wandb":
                continue
            try:
                config[name] = json.loads(value)
            except ValueError:
                config[name] = value.decode("utf-8", "replace")
        if config:
            meta["config"] = config

    def exit(self, got: tuple[int, int], last_line: bytes, meta: dict[str, Any]) -> None:
        """An exit record (its code and runtime) into ``meta``: closed at ``last_line``'s clock (the last history
        row's), else at the start plus the runtime."""
        code, runtime = got
        self._stamp(last_line)
        closed = self._last_time or (self._start + runtime if self._start else 0.0)
        info: dict[str, Any] = {"closed": closed}
        if code:
            info["end"] = f"exit_code_{code}" if code > 0 else f"exit_code_minus_{-code}"
        meta["runinfo"] = info

    def _stamp(self, line: bytes) -> None:
        """The run's last clock: ``_timestamp`` of its last history row (the row's own, a number; not one a value
        holds, which may come first: the walk in C writes a row's keys in another order than its record's)."""
        try:
            row = decode_line(line)  # (as the JSON reader reads it)
        except LineError:  # (a row it refuses: no clock)
            return
        stamp = row.get("_timestamp") if row is not None else None
        if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
            self._last_time = float(stamp)
