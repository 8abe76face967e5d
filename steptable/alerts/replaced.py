"""The alerts of the rows a resume replaces: a reader that meets a file after a restart has only these to say why
the run was restarted (a NaN loss, a spike, a hang), as the rows are gone from its store. Stdlib only; the store
(steptable.ingest.store.RunStore) calls :func:`replaced_alerts` at each resume, its lock held."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from steptable.alerts.detectors import DETECTORS
from steptable.alerts.engine import AlertEngine, merge_nonfinite
from steptable.alerts.history import feed_store, replay_spans
from steptable.alerts.rules import MULTI_ROLES, Alert, AlertConfig, cell_float
from steptable.table.formatting import fmt_auto as _f

#: the newest rows of a segment a resume replaces that are read for their alerts (what went wrong before the crash)
MAX_REPLACED_ROWS = 2000


def replaced_alerts(store: Any, start: int, config: AlertConfig | None = None, budget: int = MAX_REPLACED_ROWS
                    ) -> tuple[list[Alert], int]:
    """The alerts of the rows from index ``start`` on, which a resume at that row is about to replace in ``store``
    (a RunStore, its lock held), each saying the resume that replaced it; and the rows it replayed and read. The
    newest :data:`MAX_REPLACED_ROWS` replaced rows (``budget`` if fewer) go through every detector after a bounded
    replay of the rows before them; the older ones only through the non-finite test, once (NaN and inf episodes
    as the live engine would say them); with no budget left, every replaced row only through that (0 rows read).
    A reader that meets the file after the restart has only these to say why the run was restarted (a NaN loss, a
    spike): its rows are gone from the store."""
    eng = AlertEngine(config)
    end = len(store)
    first = max(start, end - max(0, min(budget, MAX_REPLACED_ROWS))) if budget > 0 else end
    found: list[Alert] = []
    states = []
    binds = _bindings(store, eng.config)
    for role, key in binds:
        eng.bind(role, key)
    for key in [k for role, k in binds if any(c.nonfinite for c in DETECTORS[role])]:
        said, state = _episodes(eng.config, store, key, start, first)
        found += said
        states.append((key, state))
    found = _merge_by_step(found)
    read = 0
    if first < end:
        spans = replay_spans(first, eng.config)
        resumes = set(store.resumes)
        for a, b in spans:
            feed_store(eng, store, a, b, resumes)
        for key, (on, clear, since) in states:  # as the rows before left it, where the replay did not reach them
            whole = True
            if since == -2:  # (looked for only where the rows read hold a non-finite cell to count the steps to)
                lookup = any(not math.isfinite(x) for _, x in _present(eng.config, store, key, first, end))
                since, whole = _stretch_start(eng.config, store, key, first) if lookup else (-1, False)
            eng.set_nonfinite(key, on, clear, store.step_at(since) if since >= 0 else None, whole)
        found += feed_store(eng, store, first, end, resumes, stalls=True)
        read = end - first + sum(b - a for a, b in spans)
    at = store.step_at(start)
    return [Alert(x.level, x.step, x.column, x.kind, f"{x.message} (a row the resume at step {at} replaced)", at)
            for x in found], read


def _bindings(store: Any, config: AlertConfig) -> list[tuple[str, str]]:
    """(role, key) for every column of ``store`` an engine reading its rows in order watches: a single-key role's
    candidate that has a cell in the earliest row (candidate order in that row), every candidate with a cell of a
    multi-key role. (Not the keys alone: a key a resume's dropped rows left has no cell.)"""
    out = []
    roles = config.role_keys()
    for role in DETECTORS:
        firsts = [(r, i, k) for i, k in enumerate(roles.get(role, ()))
                  if k in store and (r := store.first_cell(k)) is not None]
        out += [(role, k) for _, _, k in sorted(firsts)[: None if role in MULTI_ROLES else 1]]
    return out


#: rows looked back over, before the replaced ones, for how long a column had been finite (the alert's "after N
#: finite steps"; past it, "N+")
_SINCE_BACK = 20_000


def _episodes(config: AlertConfig, store: Any, key: str, a: int, b: int) -> tuple[list[Alert], tuple[bool, int, int]]:
    """The non-finite episodes of ``key`` that begin in rows ``[a, b)``, as the live engine says them (an episode
    ends after ``rearm`` finite cells of the column; one on before ``a`` was said when its rows were read), and the
    test's state at ``b`` (:func:`_before`). A pass over the column's cells in those rows; a short look back."""
    rearm, out = config.rearm, []
    on, clear, since = _before(config, store, key, a)  # since: the row a finite stretch began (-1: none yet)
    for i, x in _present(config, store, key, a, b):
        if math.isfinite(x):
            since = i if since == -1 else since
            clear += 1
            on = on and clear < rearm
            continue
        if not on:
            began, whole = _stretch_start(config, store, key, i) if since == -2 else (since, True)
            n = f"{store.step_at(i) - store.step_at(began) if began >= 0 else 0}{'' if whole else '+'}"
            out.append(Alert("E", store.step_at(i), key, "nonfinite", f"non-finite ({_f(x)}) after {n} finite steps"))
        on, clear, since = True, 0, -1
    return out, (on, clear, since)


def _before(config: AlertConfig, store: Any, key: str, a: int) -> tuple[bool, int, int]:
    """The non-finite test's state at row ``a``: an episode on, the finite cells since it, and the row the column's
    current finite stretch began (-1: none; -2: further back than was read). Reads back until ``rearm`` finite
    cells or a non-finite one show it, in doubling chunks: a few rows in a healthy run."""
    finite, began, hi, chunk, bound = 0, -1, a, 64, max(0, a - _SINCE_BACK)
    while hi > bound:
        lo = max(bound, hi - chunk)
        for i, x in reversed(list(_present(config, store, key, lo, hi))):
            if not math.isfinite(x):  # (on with no finite cell since, whatever rearm: a clear cell re-arms)
                return finite < max(1, config.rearm), finite, began
            if finite >= max(1, config.rearm):
                return False, finite, -2
            finite, began = finite + 1, i
        hi, chunk = lo, chunk * 2
    return False, finite, began if hi == 0 or not finite else -2


def _stretch_start(config: AlertConfig, store: Any, key: str, i: int) -> tuple[int, bool]:
    """The row the column's finite stretch before row ``i`` began (-1: none), and whether that is where it began:
    read back :data:`_SINCE_BACK` rows at most (False: it goes back further)."""
    lo = max(0, i - _SINCE_BACK)
    began = -1
    for j, x in reversed(list(_present(config, store, key, lo, i))):
        if not math.isfinite(x):
            return began, True
        began = j
    return (began if began >= 0 or lo == 0 else lo), lo == 0  # (no cell in the rows read: at least since lo)


def _present(config: AlertConfig, store: Any, key: str, a: int, b: int) -> Iterator[tuple[int, float]]:
    """The cells of ``key`` in rows ``[a, b)`` that hold a number, as (row, value)."""
    nan_missing = config.nan_missing
    for i, v in enumerate(store.cells_between(key, a, b), a):
        if type(v) is float:
            if not (nan_missing and v != v):
                yield i, v
        elif v is not None and (x := cell_float(v)) is not None:
            yield i, x


def _merge_by_step(found: list[Alert]) -> list[Alert]:
    """Non-finite alerts in step order, one line per step (:func:`merge_nonfinite`)."""
    by_step: dict[int, list[Alert]] = {}
    for a in sorted(found, key=lambda a: a.step):
        by_step.setdefault(a.step, []).append(a)
    return [m for group in by_step.values() for m in merge_nonfinite(group)]


def read_replaced(store: Any, start: int, budget: int) -> tuple[list[Alert], int]:
    """:func:`replaced_alerts` with the default config, as a RunStore's ``on_resume`` reader (``Follower(...,
    on_resume=read_replaced)``): a store that meets a resume keeps the alerts of the rows it drops."""
    return replaced_alerts(store, start, budget=budget)
