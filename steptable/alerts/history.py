"""A stored run's history through an :class:`~steptable.alerts.engine.AlertEngine`: the whole run (:func:`scan`, for
``summary``), a span of a RunStore's rows (:func:`feed_store`, :func:`feed_columns`, for the app's scanner), and the
replay that rebuilds an engine at a resume (:func:`resumed_engine`). Quiet stretches go through
:meth:`AlertEngine.feed_block` in bulk, the rest row by row; either way the alerts are those of streaming the same
rows through :meth:`AlertEngine.update`. Pure, stdlib only."""

from __future__ import annotations

import math
from array import array
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from steptable.alerts import quiet
from steptable.alerts.engine import AlertEngine
from steptable.alerts.rules import Alert, AlertConfig, cell_float
from steptable.alerts.window import Detector


def replay_spans(end: int, config: AlertConfig | None = None) -> list[tuple[int, int]]:
    """The rows (index spans of ``[0, end)``) a live reader replays into a fresh engine when a run resumes before
    row ``end``: the first ones (the entropy's early level) and the last ones every window, run and re-arm count
    looks back over. So the engine reads the rows the store holds now, not the crashed run's replaced ones (against
    the old run's rewards, a restart from step 0 would read as a reward collapse), at a cost that does not grow
    with the run (a replay of every row at each resume would)."""
    cfg = config or AlertConfig()
    head = min(end, cfg.entropy_early)
    start = max(head, end - (max(cfg.window, cfg.flat_rows, cfg.hack_window, cfg.sat_rows) + cfg.rearm
                             + cfg.min_history))
    return [(0, head), (start, end)] if start > head else [(0, end)]


def resumed_engine(store: Any, at: int, config: AlertConfig | None = None,
                   old: AlertEngine | None = None) -> AlertEngine:
    """A fresh engine for a run resumed at step ``at`` that has seen the rows ``store`` (a RunStore, its lock held)
    holds before it, those of :func:`replay_spans`; their alerts dropped (said when those rows came), its clock
    restarted for the resumed rows to come. With ``old``, the engine it replaces (``config`` defaults to its), the
    run-long values old set before ``at`` carry over (:meth:`AlertEngine.carry`)."""
    eng = AlertEngine(config or (old.config if old is not None else None))
    resumes = set(store.resumes)
    for a, b in replay_spans(store.index_of_step(at), eng.config):
        feed_store(eng, store, a, b, resumes)
    if old is not None:
        eng.carry(old, at)
    eng.resumed()
    return eng


def feed_store(eng: AlertEngine, store: Any, a: int, b: int, resumes: Collection[int] = (),
               stalls: bool = False) -> list[Alert]:
    """Rows ``a:b`` of ``store`` (a RunStore, its lock held) through ``eng``, only the columns it watches (whole
    rows of a run with thousands of keys would cost a copy of every cell); a row at one of ``resumes`` restarts its
    clock, as :func:`scan` does. Their alerts (with ``stalls``, the gaps between rows too)."""
    wanted = eng.config.watched()
    cols = [(k, store.column_between(k, a, b)) for k in store.keys if k in wanted]
    return feed_columns(eng, store, cols, store.steps_between(a, b), store.wall_times_between(a, b), a, b, a,
                        resumes, stalls)


def feed_columns(eng: AlertEngine, store: Any, cols: Sequence[tuple[str, Sequence[Any]]], steps: Sequence[int],
                 walls: Sequence[float], start: int, stop: int, base: int, resumes: Collection[int] = (),
                 stalls: bool = False) -> list[Alert]:
    """Feed rows ``[start, stop)`` of ``store``; ``cols`` (key, cells), ``steps`` and ``walls`` hold the rows from
    ``base`` on (copied under the store's lock: the app feeds them outside it)."""
    value = store.value
    out: list[Alert] = []
    for i in _unquiet_rows(eng, cols, steps, walls, start, stop, base, resumes, out):
        j = i - base
        row = {}
        for k, c in cols:
            v = c[j]
            # Numeric columns pad absent cells with NaN; only a NaN cell asks the store whether it is absent
            # (a sparse eval column) or a logged NaN (which the non-finite detector must see).
            if v is None or (v != v and value(i, k) is None):
                continue
            row[k] = v
        _feed_row(eng, int(steps[j]), row, walls[j] if j < len(walls) else None, resumes, stalls, out)
    return out


def _unquiet_rows(eng: AlertEngine, cols: Sequence[tuple[str, Sequence[Any]]], steps: Sequence[Any],
                  walls: Sequence[Any] | None, start: int, stop: int, base: int, resumes: Collection[int],
                  out: list[Alert]) -> Iterator[int]:
    """The rows of ``[start, stop)`` to feed one by one, in order; the quiet blocks between them go through
    :func:`_block` as they are reached, their alerts added to ``out``. ``cols``, ``steps`` and ``walls`` hold the
    rows from ``base`` on."""
    for a, b, xs in quiet.blocks(start, stop, cols, base):
        got = _block(eng, cols, xs, steps, walls, a - base, b - base, resumes) if b - a >= quiet.MIN_ROWS else None
        if got is None:
            yield from range(a, b)
        else:
            out += got


def _feed_row(eng: AlertEngine, step: Any, row: dict[str, Any], wall: float | None, resumes: Collection[int],
              stalls: bool, out: list[Alert]) -> None:
    """One row through ``eng``, its alerts added to ``out``: a row at a resume restarts the clock, else (with
    ``stalls``) the gap since the last row is checked first."""
    if step in resumes:
        eng.resumed()
    elif stalls and wall is not None and math.isfinite(wall):
        out.extend(eng.check_stall(wall))
    out.extend(eng.update(step, row, wall))


def _block(eng: AlertEngine, cols: Sequence[tuple[str, Sequence[Any]]], xs: list[list[float]] | None,
           steps: Sequence[Any], walls: Sequence[Any] | None, a: int, b: int,
           resumes: Collection[int]) -> list[Alert] | None:
    """Rows ``[a, b)`` of ``cols`` (``xs``: their cells as floats, None where not read yet) through
    :meth:`AlertEngine.feed_block` (None: not fed), unless one is at a resume."""
    span = steps[a:b]
    at = span.tolist() if isinstance(span, array) and span.typecode in "bBhHiIlLqQ" else [int(s) for s in span]
    if resumes and any(s in resumes for s in at):
        return None
    if xs is None:
        xs = [v for _, c in cols if (v := quiet.floats(c[a:b])) is not None and len(v) == b - a]
        if len(xs) != len(cols):
            return None
    clock = None if walls is None else walls[a:b]
    if clock is not None and len(clock) < b - a:  # (a clock shorter than the rows: none for the rest)
        clock = [*clock, *[None] * (b - a - len(clock))]
    return eng.feed_block(at, [(k, v) for (k, _), v in zip(cols, xs, strict=True)], clock)


def scan(
    steps: Sequence[int],
    columns: Mapping[str, Sequence[Any]],
    wall_times: Sequence[float] | None = None,
    config: AlertConfig | None = None,
    now: float | None = None,
    resumes: Collection[int] = (),
    merge: bool = True,
    only: Collection[type[Detector]] | None = None,
) -> list[Alert]:
    """Replay a stored run: the alerts that streaming :meth:`AlertEngine.update` gives for the same rows.

    With ``wall_times`` each row is preceded by ``check_stall(wall_times[i])``, so stalls the run recovered from
    show up at the row after the gap; with ``now`` too, a stall still going on shows up after the last row. The
    gap to a row at one of the ``resumes`` steps (the store's resume points) is not a stall. None cells are absent
    (and float NaN too with ``config.nan_missing``). Without ``merge``, a row's non-finite alerts are not made one
    line (a scan of some of a run's columns: steptable.alerts.parts); with ``only``, only those detectors read them.
    """
    eng = AlertEngine(config, merge, only)
    wanted = eng.config.watched()
    cols = [(k, col) for k, col in columns.items() if k in wanted]
    out: list[Alert] = []
    for i in _unquiet_rows(eng, cols, steps, wall_times, 0, len(steps), 0, resumes, out):
        row = {k: col[i] for k, col in cols if i < len(col) and col[i] is not None}
        wt = cell_float(wall_times[i]) if wall_times is not None and i < len(wall_times) else None
        _feed_row(eng, steps[i], row, wt, resumes, True, out)
    if now is not None:
        out.extend(eng.check_stall(now))
    return out
