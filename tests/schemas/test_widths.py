"""steptable.schemas.widths: a live column grows when its values drift out of the width it was measured at."""

from __future__ import annotations

from steptable.table.columns import Col


def test_a_column_grows_when_its_values_drift_out_of_its_measure() -> None:
    """A loss measured at .5 and drifting to .0125 kept 4 cells in a live watch (.013) while tail, measuring the
    whole run, gave 5 (.0125): more than a tenth of new rows losing digits widens the column; a rare one does not."""
    from steptable.schemas import cells_outgrown

    class Rows:
        def __init__(self, values: list[float]) -> None:
            self.values = values

        def value(self, i: int, key: str) -> float:
            return self.values[i]

    col = (Col("loss", 4, "loss"),)
    drifted = Rows([0.0125 - i * 1e-5 for i in range(50)])
    assert cells_outgrown(col, drifted, 0, 50) == {"loss": 5}
    rare = Rows([0.5] * 49 + [0.0125])
    assert cells_outgrown(col, rare, 0, 50) == {}


class _Rows:
    """A run's rows as notation_left reads them (value by row and key, whole columns)."""

    def __init__(self, rows: list[dict[str, float]]) -> None:
        self.rows = rows

    def value(self, i: int, key: str) -> float:
        return self.rows[i][key]

    def column(self, key: str) -> list[float]:
        return [r[key] for r in self.rows]


def test_a_new_row_asks_for_a_notation_again_only_past_its_columns_magnitudes() -> None:
    """A clock's every new value has more decimals than the notation writes, a value near zero rounds to it: both
    are written on their own and ask nothing (asking would lay a live run out at every row); a number too big for
    the notation asks once, and a smaller one past the notation's top after it does not ask again."""
    from steptable.schemas.widths import notation_left, noted

    rows = [{"ts": 1.7959e9 + 0.37 * i, "loss": 0.5 + 0.01 * (i % 7)} for i in range(50)]
    run = _Rows(rows)
    cols = noted([Col("ts", 10, "ts"), Col("loss", 6, "loss")], [run])  # type: ignore[list-item]
    extremes: dict[str, float] = {}
    rows.append({"ts": 1.7959e9 + 0.37 * 50 + 0.000123, "loss": 0.0000001})
    assert not notation_left(cols, run, 50, 51, extremes)
    rows.append({"ts": rows[-1]["ts"] + 0.5, "loss": 12.5})  # too big for `.xx`: the notation is chosen again
    assert notation_left(cols, run, 51, 52, extremes)
    rows.append({"ts": rows[-1]["ts"] + 0.5, "loss": 11.0})  # the same layout's cells: not past 12.5
    assert not notation_left(cols, run, 52, 53, extremes)
    assert notation_left(cols, run, 52, 53)  # (without the caller's extremes: every number past the top asks)


def test_a_columns_notation_is_chosen_from_each_runs_newest_rows() -> None:
    """A long run's layout made again reads NOTED_ROWS values a column per run, not its whole history: a loss
    that was in the hundreds long ago and is below one for the newest rows is written as the newest rows need."""
    from steptable.schemas.widths import NOTED_ROWS, noted

    old = [{"loss": 300.0 + i} for i in range(5000)]
    new = [{"loss": 0.25 + 0.001 * (i % 50)} for i in range(NOTED_ROWS)]
    (col,) = noted([Col("loss", 6, "loss")], [_Rows(old + new)])  # type: ignore[list-item]
    assert col.notation is not None and col.notation.top < 10 and col.notation.text(0.25) == ".250"


def test_a_spike_its_columns_notation_leaves_out_asks_nothing() -> None:
    """A new largest value that the notation of the run's newest rows leaves out anyway (a column's top 1%) is
    written on its own: the runs are not laid out again for it."""
    from steptable.schemas.widths import notation_left, noted

    rows = [{"loss": 0.1 + 0.0004 * i} for i in range(1000)]
    run = _Rows(rows)
    cols = noted([Col("loss", 6, "loss")], [run])  # type: ignore[list-item]
    extremes: dict[str, float] = {}
    rows.append({"loss": 5.0})  # one spike in 1,001 values: in the top 1%
    assert not notation_left(cols, run, 1000, 1001, extremes) and extremes["loss"] == 5.0
    assert notation_left(cols, run, 1000, 1001)  # (asked without the caller's extremes: past the top, it asks)


def test_a_live_column_that_decayed_by_decades_asks_once_for_its_notation() -> None:
    """A live run's loss laid out at 2.3 that decays below .1 asks for its notation again once LOW_RUN new values
    show one significant digit in it, as the live logger chooses again; the layout made again writes them with
    their digits. Without a run of them (a value back above, a zero) it does not ask, and the same run of low values
    asks once: a layout shared with runs that did not decay keeps theirs without being made again at every row."""
    import math

    from steptable.schemas.widths import notation_left, noted
    from steptable.table.notation import LOW_RUN

    rows = [{"loss": 2.3 - 0.01 * i} for i in range(100)]
    run = _Rows(rows)
    cols = noted([Col("loss", 8, "loss")], [run])  # type: ignore[list-item]
    assert cols[0].notation is not None and cols[0].notation.text(0.0623) == ".06"
    lows: dict[str, int] = {}
    decay = [0.02 + 0.05 * math.exp(-i / 30) for i in range(3 * LOW_RUN)]
    for v in decay[:LOW_RUN - 1]:
        rows.append({"loss": v})
        assert not notation_left(cols, run, len(rows) - 1, len(rows), {}, lows)
    rows.append({"loss": 0.5})  # a value back above: the run of low ones starts again
    assert not notation_left(cols, run, len(rows) - 1, len(rows), {}, lows)
    for v in decay[:LOW_RUN - 1]:
        rows.append({"loss": v})
    assert not notation_left(cols, run, len(rows) - LOW_RUN + 1, len(rows), {}, lows)
    rows.append({"loss": decay[LOW_RUN - 1]})
    assert notation_left(cols, run, len(rows) - 1, len(rows), {}, lows)  # the LOW_RUN-th in a row
    again = noted(cols, [run])
    assert again[0].notation is not None and again[0].notation.text(0.0465) == ".0465"
    rows.append({"loss": decay[LOW_RUN]})  # the same run, not laid out again (a layout that kept its notation)
    assert not notation_left(cols, run, len(rows) - 1, len(rows), {}, lows)
    assert not notation_left(cols, run, 100, len(rows), {})  # (without the caller's lows: a decay asks nothing)


def test_a_live_loss_drifting_one_row_a_read_grows_its_column() -> None:
    """A live watch reads a training's rows one or two at a time: the drift is measured over the newest DRIFT_ROWS
    rows, not the read's one row, or a loss measured at 2.3 and decaying to .0465 stays at 4 cells (.047) for
    good. One odd row among steady ones still does not widen it."""
    from steptable.schemas import cells_outgrown
    from steptable.schemas.widths import DRIFT_ROWS

    col = (Col("loss", 4, "loss"),)
    rows = [{"loss": 2.3 - 0.01 * i} for i in range(100)]
    grown: dict[str, int] = {}
    for i in range(DRIFT_ROWS):
        rows.append({"loss": 0.02 + 0.05 * 0.97**i})
        grown = grown or cells_outgrown(col, _Rows(rows), len(rows) - 1, len(rows))
    assert grown == {"loss": 5}
    steady = [{"loss": 0.5 + 0.001 * (i % 9)} for i in range(100)] + [{"loss": 0.0125}]
    assert cells_outgrown(col, _Rows(steady), 100, 101) == {}
