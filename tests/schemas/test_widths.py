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
