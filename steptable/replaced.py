"""The alerts of the rows a resume replaces: a reader that meets a file after a restart has only these to say why
the run was restarted (a NaN loss, a spike, a hang), as the rows are gone from its store. Stdlib only; the store
(steptable.ingest.store.RunStore) calls :func:`replaced_alerts` at each resume, its lock held."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from steptable.alert_rules import Alert, AlertConfig, cell_float
from steptable.alerts import AlertEngine, _merge_nonfinite, feed_store, replay_spans
from steptable.detectors import _DETECTORS
from steptable.formatting import fmt_auto as _f

#: the newest rows of a segment a resume replaces that are read for their alerts (what went wrong before the crash)
MAX_REPLACED_ROWS = 2000


def replaced_alerts(store: Any, start: int, config: AlertConfig | None = None, budget: int = MAX_REPLACED_ROWS
                    ) -> tuple[list[Alert], int]:
    """The alerts of the rows from index ``start`` on, which a resume at that row is about to replace in ``store``
    (a RunStore, its lock held): the crashed run's last steps, read after a bounded replay of the rows before
    them, each alert saying the resume that replaced it; and the rows this read (replay included): the newest
    :data:`MAX_REPLACED_ROWS` replaced rows, or ``budget`` if fewer (a NaN episode still on where they begin is
    said at the replaced step it began, however far back); with no budget left, only each column's first NaN or
    inf (read once, nothing replayed: 0 rows). A reader that meets the file after the restart has
    only these to say why the run was restarted (a NaN loss, a spike): its rows are gone from the store."""
    eng = AlertEngine(config)
    end = len(store)
    if budget <= 0:
        return _mark(_nonfinite_only(eng, store, start), store.step_at(start)), 0
    first = max(start, end - max(0, min(budget, MAX_REPLACED_ROWS)))
    spans = replay_spans(first, eng.config)
    resumes = set(store.resumes)
    for a, b in spans:
        feed_store(eng, store, a, b, resumes)
    found = _began_unread(eng, store, start, first) + feed_store(eng, store, first, end, resumes, stalls=True)
    return _mark(found, store.step_at(start)), end - first + sum(b - a for a, b in spans)


def _mark(found: list[Alert], at: int) -> list[Alert]:
    return [Alert(x.level, x.step, x.column, x.kind, f"{x.message} (a row the resume at step {at} replaced)")
            for x in found]


def _nonfinite_only(eng: AlertEngine, store: Any, start: int) -> list[Alert]:
    """Past the replay budget (a file restarted hundreds of times): the first NaN or inf of each watched column in
    rows ``start:``, the commonest reason for a restart, at the cost of reading them once (no replay, no other
    detector). One already on in the column's cell before them was said when that cell was read."""
    row = dict.fromkeys(store.keys, 0.0)  # the columns the engine would bind its roles to
    keys = [k for role, classes in _DETECTORS.items() if any(c.nonfinite for c in classes)
            for k in eng._keys(role, row)]
    found = []
    for key in keys:
        seen = False
        for i, x in _present(eng, store, key, start, len(store)):
            if not math.isfinite(x):
                if seen or not _on_before(eng, store, key, start):
                    found.append(Alert("E", store.step_at(i), key, "nonfinite", f"non-finite ({_f(x)})"))
                break
            seen = True
    return _merge_by_step(found)


def _present(eng: AlertEngine, store: Any, key: str, a: int, b: int) -> Iterator[tuple[int, float]]:
    """The cells of ``key`` in rows ``a:b`` that hold a number, as (row, value)."""
    for i, v in enumerate(store.column_between(key, a, b), a):
        # (a NaN in a numeric column is a pad where the row lacks the key, or a NaN the run logged)
        if v is None or (v != v and (eng.config.nan_missing or store.value(i, key) is None)):
            continue
        if (x := cell_float(v)) is not None:
            yield i, x


#: rows looked back over for a column's cell before a replaced segment (a sparse column's previous value)
_LOOK_BACK = 5000


def _on_before(eng: AlertEngine, store: Any, key: str, start: int) -> bool:
    """Whether the column's last cell before row ``start`` (within :data:`_LOOK_BACK` rows) is non-finite."""
    cells = list(_present(eng, store, key, max(0, start - _LOOK_BACK), start))
    return bool(cells) and not math.isfinite(cells[-1][1])


def _merge_by_step(found: list[Alert]) -> list[Alert]:
    """Non-finite alerts in step order, one line per step (:func:`_merge_nonfinite`)."""
    by_step: dict[int, list[Alert]] = {}
    for a in sorted(found, key=lambda a: a.step):
        by_step.setdefault(a.step, []).append(a)
    return [m for group in by_step.values() for m in _merge_nonfinite(group)]


def _began_unread(eng: AlertEngine, store: Any, start: int, first: int) -> list[Alert]:
    """The non-finite episodes still on at row ``first`` that began in replaced rows before it (``start`` on), which
    the read from ``first`` cannot see start: a loss that went NaN 5,000 steps before someone restarted the run is
    the reason for the restart. One backward pass over each such column (its cells only, at one resume)."""
    keys = [k for (role, k), dets in eng._dets.items() if any(d.nonfinite for d in dets)]
    return _merge_by_step([a for k in keys if (a := _nonfinite_start(eng, store, k, start, first)) is not None])


def _nonfinite_start(eng: AlertEngine, store: Any, key: str, start: int, first: int) -> Alert | None:
    x = next((x for _, x in _present(eng, store, key, first, len(store))), None)
    if x is None or math.isfinite(x) or first == 0:
        return None  # finite where the read begins (or nothing): what the read finds, it says itself
    nan_missing = eng.config.nan_missing

    def cell(v: Any) -> float | None:  # a cell as a float, None where the row lacks the key
        if type(v) is float:
            return None if nan_missing and v != v else v
        return None if v is None else cell_float(v)

    before = store.cells(key)[:first]  # (None where absent: no per-row look-up along a long NaN run)
    i, began, bad = first - 1, -1, x
    while i >= 0 and ((c := cell(before[i])) is None or not math.isfinite(c)):
        if c is not None:
            began, bad = i, c
        i -= 1
    if began < start:
        return None  # began where the read does (said there), or in the rows the resume keeps (said live)
    since = i
    while i >= 0 and ((c := cell(before[i])) is None or math.isfinite(c)):
        since, i = (i if c is not None else since), i - 1
    n = store.step_at(began) - store.step_at(since) if since >= 0 else 0
    return Alert("E", store.step_at(began), key, "nonfinite", f"non-finite ({_f(bad)}) after {n} finite steps")
