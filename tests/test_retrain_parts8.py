"""retrain's two step files (metrics.jsonl and the emergence summary) are laid out apart; each kind's arms line up."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.ingest import load
from steptable.schemafiles.resolve import by_schema
from tests.helpers import run_cli
from tests.trainer_logs import write_retrain


def blocks(out: str) -> dict[str, list[str]]:
    """Title line -> the header's words, for each block of a one-shot tail."""
    out_blocks: dict[str, list[str]] = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("──") and i + 1 < len(lines):
            out_blocks[line] = lines[i + 1].split()
    return out_blocks


def test_the_emergence_summary_is_not_shown_with_the_metrics_files_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for arm in ("grpo_none", "maxrl"):
        write_retrain(tmp_path / arm, steps=6, seed=len(arm))
    rc, out, err = run_cli(["tail", "-n", "1", str(tmp_path)], capsys)
    assert rc == 0, err
    got = blocks(out)
    summaries = [h for t, h in got.items() if "emer" in t]  # (a title is cut to the table's width)
    metrics = [h for t, h in got.items() if "emer" not in t]
    assert len(summaries) == 2 and len(metrics) == 2, out
    # the summary's own columns only (one table of both showed it with loss, correct, sepa... all nan)
    assert summaries[0] == summaries[1] == ["step", "reward", "corr_n"], out
    assert metrics[0] == metrics[1] and "loss" in metrics[0] and "corr_n" not in metrics[0], out
    groups = by_schema(list(load([tmp_path]).values()))
    assert [(s.name, len(g)) for s, g in groups] == [("retrain", 2), ("retrain", 2)]
