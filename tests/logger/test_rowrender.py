"""The StepLogger's printed row: rendered cell by cell while a printed layout is new, by the compiled renderer once
it has held ``COMPILE_AFTER`` rows; the same text either way."""

from __future__ import annotations

import random

import pytest

from steptable.logger import consolecols
from steptable.logger.steplogger import StepLogger
from steptable.table import render
from steptable.table.columns import Col


def test_the_row_is_compiled_once_its_layout_holds_and_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consolecols, "COMPILE_AFTER", 5)
    compiled: list[tuple[Col, ...]] = []
    real = render.compile_row

    def spy(cols: tuple[Col, ...]) -> object:
        compiled.append(cols)
        return real(cols)

    monkeypatch.setattr(render, "compile_row", spy)
    sl = StepLogger([Col("step", 5, "step", "d"), Col("loss", 7, "loss", "+.3f"), Col("gn", 6, "gn"), Col("kl")],
                    console=False, alerts=False)
    rnd = random.Random(0)
    lines = []
    for step in range(40):
        # (kl grows tenfold at row 20: its printed width changes, a new layout, cell by cell again)
        row = {"step": step, "loss": rnd.uniform(-1, 1), "gn": rnd.uniform(0, 3),
               "kl": rnd.uniform(0.001, 0.009) * (10 if step >= 20 else 1)}
        lines.append((sl.log(row), row, sl._cols.layout.cols, sl._cols.layout._compiled is None))
    sl.close()
    assert compiled and all(c in [x[2] for x in lines] for c in compiled)  # (the layouts printed)
    assert any(by_cell for *_, by_cell in lines) and not lines[-1][3]  # (both paths wrote rows here)
    assert lines[21][3]  # (a new layout: cell by cell)
    for line, row, cols, _ in lines:
        assert line == render.SEP.join(render.cells(cols, row))
        assert line == real(cols)(row)
