"""The step a W&B run's rows are keyed by, from what its ``define_metric`` calls declared. Pure.

``run.define_metric("train/*", step_metric="train/step")`` writes a metric record (``MetricRecord{glob_name,
step_metric, options{step_sync, hidden}, summary}``; a name without ``*`` goes in ``name``; a glob is a prefix and a
``*`` at the end, nowhere else); W&B's charts then plot those keys against the step metric's value, not against
``_step`` (its count of ``log`` calls). ``step_sync`` (on by default where a step metric is given) makes wandb write
the step metric's last value into a history record of those keys that lacks it; ``hidden`` hides a chart and
``summary`` picks the run summary's statistic: neither changes a row. transformers' and Lightning's W&B loggers
declare ``*`` against their global step.

One table has one step column, so a run's rows are keyed by one step metric: the first one its ``define_metric``
calls declared (the training's, in the usual order: ``train/*`` before ``eval/*``), where every metric of the run's
first row is declared against some step metric and the step metric's value there is an integer (a fractional
``epoch`` is no step). A record without it (``eval/*`` logged by ``eval/step`` alone, a key declared with
``step_sync=False``) is in the row of its last value, where step_sync would have put it, as transformers'
evaluation is in its global step's row; the record's own step metric (``eval/step``) is a column of that row.
Keying each record by its own step metric instead would put an evaluation's seventh value beside the seventh
training step, a step it was not measured at, and compare arms on a step that means two things. A run whose first
row holds a metric declared against no step metric stays keyed by ``_step``: its records that lack the step metric
(a loss logged each step beside ``val/*`` by ``epoch``) are steps of their own, which one row per epoch would lose.
Declarations made after the first row leave its key as it is (the step of a file is chosen once). Where the step
metric declared first is not the one logged most often (``eval/*`` declared before ``train/*``), the records of
the other share its rows: the first value of a key in a row is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Axes:
    """The step metrics a run's metric records declared, in their order, and the keys they were declared for."""

    def __init__(self) -> None:
        self._names: set[str] = set()  # keys declared against a step metric
        self._prefixes: list[str] = []  # globs declared against one, without their ``*``
        self.step_metrics: list[str] = []  # in the order declared, each once

    def note(self, name: str, step_metric: str) -> None:
        """A metric record: ``name`` (a key, or a glob ending in ``*``) charted against ``step_metric`` ("" none)."""
        if not name or not step_metric:
            return
        if name.endswith("*"):
            self._prefixes.append(name[:-1])
        else:
            self._names.add(name)
        if step_metric not in self.step_metrics:
            self.step_metrics.append(step_metric)

    def declared(self, key: str) -> bool:
        """Is ``key`` charted against a step metric (by its name or a glob)?"""
        return key in self._names or key.startswith(tuple(self._prefixes))

    def row_step(self, first_row: Mapping[str, Any]) -> str | None:
        """The step metric a run's rows are keyed by, given its first row; None: no step metric was declared, the
        row holds a metric declared against none (W&B's own ``_`` keys and the step metrics themselves are no
        metrics here), or the step metric's value there is no integer (a fractional epoch: steps are integers)."""
        if not self.step_metrics:
            return None
        steps, axis = set(self.step_metrics), self.step_metrics[0]
        if axis in first_row and type(first_row[axis]) is not int:
            return None
        if all(k.startswith("_") or k in steps or self.declared(k) for k in first_row):
            return axis
        return None
