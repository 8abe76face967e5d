"""steptable.app.widgets.moves: a cell's move is worked out once from the rows before it, again once its row
changed; rows without a finite value are left out of the level; the kept cells are bounded."""

from __future__ import annotations

from typing import Any

import steptable.app.widgets.moves as moves_module
from steptable.app.widgets.moves import Moves
from steptable.table.columns import Col

UP = Col("acc", 6, "acc", better="higher")


def test_moves_are_kept_and_worked_out_again_when_their_row_changes(monkeypatch: Any) -> None:
    rows: list[dict[str, Any]] = [{"acc": 0.01 * i} for i in range(80)]
    reads: list[int] = []

    def row(k: int) -> dict[str, Any]:
        got = rows[k]  # (past the last row: IndexError, as a store's)
        reads.append(k)
        return got

    m = Moves()
    assert m.move(UP, 79, row) == 1 and reads
    reads.clear()
    assert m.move(UP, 79, row) == 1 and not reads  # kept: no row read again
    rows[79] = {"acc": 0.0}  # the last row took new keys (a writer merged a line)
    m.forget(79)
    assert m.move(UP, 79, row) == 0 and reads == [79]  # only that row read again: below the level now
    m.forget()
    reads.clear()
    m.move(UP, 79, row)
    assert len(reads) > 50
    monkeypatch.setattr(moves_module, "LIMIT", 10)
    m.move(UP, 78, row)
    assert list(m._moves) == [("acc", 78), ("acc", 79)]  # past the limit, what was kept went (78 on: worked out)


def test_rows_without_a_value_are_left_out() -> None:
    rows: list[dict[str, Any]] = [{"acc": 0.01 * i} if i % 2 else {"acc": float("nan")} for i in range(80)]
    rows[-1] = {"acc": 0.79}
    assert Moves().move(UP, 79, rows.__getitem__) == 1
    sparse: list[dict[str, Any]] = [{"acc": 0.1 * i} if i % 10 == 0 else {} for i in range(80)]
    assert Moves().move(UP, 70, sparse.__getitem__) == 0  # 7 values in the last rows: too few for a level


def test_cells_below_are_worked_out_with_the_first_as_far_as_the_table_goes() -> None:
    rows: list[dict[str, Any]] = [{"acc": 0.01 * i} for i in range(300)]
    m = Moves()
    assert m.move(UP, 100, rows.__getitem__) == 1
    assert {i for _, i in m._moves} == set(range(100, 100 + moves_module.AHEAD))
    m.move(UP, 290, rows.__getitem__)  # near the end: up to the last row, no further
    assert max(i for _, i in m._moves) == 299
