"""The vocabulary of parsed input: the :class:`Parsed` chunk every reader hands a store (its rows as rows or as
columns: :func:`rows_to_cols`, :func:`cols_to_rows`), the cells that are a row's clock (``WALL_KEYS``,
:func:`epoch_seconds`), and the test of which cells are measurements (:func:`measured`, :func:`counter`,
``BOOKKEEPING_KEYS``) that the resume rule of :class:`~steptable.ingest.store.RunStore` and
:mod:`steptable.logger.endofrun` share. Pure; free of the store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from steptable.ingest.cellmarks import measured as measured  # (the resume test's)
from steptable.ingest.parse import MISSING, BadLine
from steptable.table.stepkeys import is_step_key

#: keys a row's clock may be in (unix seconds or milliseconds: :func:`epoch_seconds`)
WALL_KEYS = ("ts", "timestamp", "_timestamp", "time", "wall_time")
#: keys that say nothing about whether two rows are the same measurement (resume vs merge test; endofrun's too)
BOOKKEEPING_KEYS = frozenset(WALL_KEYS) | {"arm", "run", "writer_pid"}
#: counters of the step by other names: SB3's rollouts, episodes and gradient updates so far
_COUNTERS = frozenset({"time/iterations", "time/episodes", "train/n_updates"})


def counter(key: str) -> bool:
    """A counter an evaluation row carries as well as a training row (the epoch, a second step key, HF's
    ``train/epoch`` and ``train/global_step``, SB3's ``time/iterations``): alone it is no sign of a resume (an eval
    of an earlier step logged late with one score and the epoch would read as one, and drop the rows after it)."""
    return is_step_key(key) or key == "epoch" or key.endswith(("/epoch", "/global_step")) or key in _COUNTERS


@dataclass(slots=True)
class Parsed:
    """What a parser hands a store: rows in file order as rows or as columns (MISSING marks an absent cell)."""

    steps: Sequence[int]
    rows: list[dict[str, Any]] | None = None
    cols: dict[str, Sequence[Any]] | None = None
    #: with ``cols``: keys whose values the parser guarantees to be ints (or None / MISSING / non-finite sentinels);
    #: None when the parser guarantees nothing about types (the store then checks)
    int_keys: frozenset[str] | None = None
    bad: list[BadLine] = field(default_factory=list)
    step_key: str | None = None
    #: run-level facts found by the parser (HF's final training summary), merged into ``RunStore.meta``
    meta: dict[str, Any] = field(default_factory=dict)


def stepless(label: str, lineno: int, key: str, got: Any, last: int | None, ordinal: int) -> tuple[int, BadLine, bool]:
    """(step, report, whether to report it once a file only) for a row whose step ``key`` is missing (``got`` is
    MISSING or None) or not an integer. A row without a step is placed after the last step: its cells must not land
    in the previous step's row (the store never overwrites a cell, but they would be read as that step's). A row
    whose step is not an integer (1.5, a huge number) is kept under the last step, filling only what that row lacks,
    and reported every time (a run that logs fractional steps on every row is told a few times and counted)."""
    if got is None or got is MISSING:
        step = ordinal if last is None else last + 1
        where = f"placed after step {last}, as step {step}" if last is not None else f"placed at its position, {step}"
        return step, BadLine(label, lineno, f"step {key!r} missing: row {where} (further rows without a step are "
                                            "placed the same way, not reported again)"), True
    step = ordinal if last is None else last
    return step, BadLine(label, lineno, f"step {key!r} not an integer ({got!r:.40}): row kept under step {step}"), False


def epoch_seconds(v: Any) -> float | None:
    """A unix time in seconds from a cell that looks like one (seconds or milliseconds since 2001..2286), else None."""
    if type(v) is float or type(v) is int:
        if 1e9 <= v < 1e10:
            return float(v)
        if 1e12 <= v < 1e13:
            return v / 1000.0
    return None


def rows_to_cols(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """``rows`` as columns: every key any row holds, in first-seen order, MISSING where a row lacks it."""
    if len(rows) == 1:
        return {k: [v] for k, v in rows[0].items()}
    # cell by cell, not key by row: where rows each name keys of their own (per-sample metrics), key by row would
    # cost keys x rows dictionary look-ups per chunk
    n = len(rows)
    cols: dict[str, list[Any]] = {}
    for i, r in enumerate(rows):
        for k, v in r.items():
            col = cols.get(k)
            if col is None:
                col = cols[k] = [MISSING] * n
            col[i] = v
    return cols


def cols_to_rows(cols: dict[str, Sequence[Any]], n: int) -> list[dict[str, Any]]:
    """``n`` rows from columns of ``n`` cells each, MISSING cells left out."""
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, vals in cols.items():
        for r, v in zip(rows, vals, strict=True):
            if v is not MISSING:
                r[key] = v
    return rows
