"""steptable.logger.steplogger: StepLogger.record writes and watches a row as log() does, without laying it out or
rendering it; the HF/TRL callback and the other adapters use it when no console shows their rows."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger
from steptable.integrations.rows import RunLog
from steptable.logger import consolecols
from steptable.table import render


def _rows(n: int) -> list[dict[str, Any]]:
    rnd = random.Random(3)
    rows: list[dict[str, Any]] = []
    for step in range(n):
        loss = 2.0 / (1 + step) + rnd.gauss(0, 0.01)
        if step == 150:
            loss = 40.0  # a spike
        rows.append({"step": step, "loss": math.nan if step == 170 else loss, "grad_norm": rnd.uniform(0.2, 0.6),
                     "entropy": max(0.01, 0.9 - step / 150), "reward": {"mean": rnd.uniform(0, 1)},
                     "note": "x" * (step % 7)})
    return rows


def _files(run_dir: Path) -> dict[str, Any]:
    """The run's files with the clock taken out (the row's ts, the description's times)."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    desc = json.loads((run_dir / "steptable.json").read_text())
    for r in rows:
        r.pop("ts")
    for k in ("started", "closed"):
        desc.pop(k)
    return {"rows": rows, "desc": desc, "table": (run_dir / "table.txt").read_text()}


@pytest.mark.parametrize("cols", [None, [Col("step", 5, "step", "d"), Col("loss"), Col("grad_norm", 4, "gn"),
                                        Col("entropy"), Col("reward/mean", header="rew")]])
def test_record_writes_the_rows_alerts_description_and_table_that_log_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cols: list[Col] | None) -> None:
    said: dict[str, list[tuple[str, str]]] = {"log": [], "record": []}
    for how in said:
        monkeypatch.setattr(StepLogger, "_emit", lambda self, text, level="INFO", how=how: said[how].append(
            (level, text)))
        sl = StepLogger(cols, tmp_path / how, console=False)
        for row in _rows(260):
            getattr(sl, how)(row)
        sl.close()
    assert _files(tmp_path / "log") == _files(tmp_path / "record")
    alerts = [(level, text) for level, text in said["log"] if level != "INFO"]
    assert alerts and any("NaN" in text or "nan" in text for _, text in alerts)  # (the run has alerts to compare)
    assert [(level, text) for level, text in said["record"] if level != "INFO"] == alerts


def test_record_lays_out_and_renders_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_update, real_cells = consolecols.ConsoleLayout.update, render.cells
    monkeypatch.setattr(consolecols.ConsoleLayout, "update",
                        lambda self, row: calls.append("update") or real_update(self, row))
    monkeypatch.setattr(render, "cells", lambda cols, cells: calls.append("cells") or real_cells(cols, cells))
    sl = StepLogger(None, tmp_path, console=False)
    for row in _rows(20):
        assert sl.record(row) is None
    assert calls == []
    assert sl.log(_rows(21)[-1])  # (log() on the same logger still lays its row out and renders it)
    assert "update" in calls and "cells" in calls
    sl.close()
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 21


def test_record_on_another_rank_writes_nothing(tmp_path: Path) -> None:
    sl = StepLogger(None, tmp_path, rank=1, console=False)
    sl.record({"step": 0, "loss": 1.0})
    sl.close()
    assert not (tmp_path / "metrics.jsonl").exists()


def test_a_runlog_without_console_records_its_rows_and_with_one_logs_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    used: list[str] = []
    real_log, real_record = StepLogger.log, StepLogger.record
    monkeypatch.setattr(StepLogger, "log", lambda self, cells: used.append("log") or real_log(self, cells))
    monkeypatch.setattr(StepLogger, "record", lambda self, cells: used.append("record") or real_record(self, cells))
    for console in (False, True):
        run = RunLog(tmp_path / str(console), console=console, rank=0)
        for step in range(3):
            run.add({"loss": 1.0 / (step + 1)}, step)
        run.close()
    assert used == ["record"] * 3 + ["log"] * 3
